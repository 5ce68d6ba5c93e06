"""Small workspaces of our own for the reading tests: a store.yaml with one agent, GAR rows, and SOPs (text or
JSON), written in one call."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

GAR_HEADER = "action,action_type,user_interaction_metadata,api,params"


def desk(root: Path, *, gar: Sequence[str] = (), sops: Mapping[str, str | dict[str, Any]] | None = None,
         region: str = "", currency: str = "EUR", name: str = "Desk") -> Path:
    """A workspace at ``root`` whose agent ``desk`` may call no tool: ``gar`` rows under gar.csv's header, and
    ``sops`` by file name (a dict is written as a JSON SOP, a string as written)."""
    (root / "sops").mkdir(parents=True)
    where = f"region: {region}\n" if region else ""
    (root / "store.yaml").write_text(f"name: {name}\ncurrency: {currency}\n{where}agents:\n  desk: {{tools: []}}\n",
                                     encoding="utf-8")
    if gar:
        (root / "gar.csv").write_text("\n".join([GAR_HEADER, *gar]) + "\n", encoding="utf-8")
    for file, body in (sops or {}).items():
        (root / "sops" / file).write_text(json.dumps(body) if isinstance(body, dict) else body, encoding="utf-8")
    return root


def text_sop(sop_id: str, title: str, trigger: str, steps: Sequence[str]) -> str:
    """A text SOP of the desk agent: its header with one trigger, then one GAR action a line."""
    return (f"---\nid: {sop_id}\nagent: desk\ntitle: {title}\ntriggers:\n  - {trigger}\n---\n"
            + "".join(f"{s}\n" for s in steps))
