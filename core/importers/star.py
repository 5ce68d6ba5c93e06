"""``python -m core import star``: a STAR task (flowchart + API schema) as workspace files of ours.

One task becomes, in the target workspace:

* ``sops/<task>.json``: the flowchart as a JSON node SOP. Asks keep the chart's node ids and
  questions and store the answer under a slot named after the API input it collects; queries
  call the task's tool with those slots; the chart's implicit branches become decision nodes
  (a query's result, a yes/no answer, a customer who cannot give what was asked);
* ``gar.csv`` rows: an ask for each API input, the query as an ``api_call`` with its params,
  every inform as a ``message_to_user`` (rows already there are kept; identical ones are not
  repeated);
* ``store.yaml``: an agent for the task's domain (``<domain>.*`` goals, the task's tool) and the
  tool, a Python function backed by the task's mock-DB spec (``star/<api>.py`` + ``.json``).

The SOP is built in :mod:`core.importers.star_sop`, the GAR rows in :mod:`core.importers.star_gar`.
:func:`import_star_task` only computes the files (so the playground can stage, lint and commit
them through its checked save); :func:`write_import` writes them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.importers.star_flow import read_flow
from core.importers.star_format import StarApi, StarTask, load_task
from core.importers.star_gar import gar_rows, merge_gar
from core.importers.star_sop import build_sop, slug, title_of
from core.importers.star_store import merge_store_yaml
from core.shared.errors import Location, UserInputError
from core.workspace.store_yaml import load_store_config
from core.workspace.trust import is_trusted, keep_trust

TOOL_FILE = '''"""Mock of a STAR API, written by `python -m core import star` (the .json beside it holds the spec)."""

from pathlib import Path

from core.importers.star_api import MockApi

query = MockApi(Path(__file__).with_suffix(".json"))
'''


@dataclass
class ImportResult:
    """The workspace files an import would write, and what it understood of the chart.

    ``files`` maps workspace-relative POSIX paths to their complete new content (existing
    ``gar.csv`` and ``store.yaml`` are merged, not replaced). ``labels`` maps each SOP node that
    stands for a chart step to the chart's label for it (a tool node to ``"query"``).
    """

    task: str
    sop_id: str
    agent: str
    tool: str
    api: str
    files: dict[str, str]
    labels: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (without file contents)."""
        return {"task": self.task, "sop_id": self.sop_id, "agent": self.agent, "tool": self.tool, "api": self.api,
                "files": sorted(self.files), "notes": self.notes}


def import_star_task(task_dir: str | Path, workspace: str | Path, *, api_file: str | Path | None = None,
                     task: StarTask | None = None) -> ImportResult:
    """The files importing a STAR task folder into a workspace would write (nothing is written).

    Args:
        task_dir: the task's folder (``tasks/<task>`` of a STAR checkout, holding ``<task>.json``).
        workspace: the target workspace; its ``gar.csv`` and ``store.yaml`` are merged when present.
        api_file: the task's API schema; by default found beside the flowchart or in ``../../apis/``.
        task: an already loaded task (then ``task_dir`` only names it).

    Raises:
        UserInputError: when a STAR file is missing or malformed, or the task has no API schema.
    """
    star = task or load_task(task_dir, api_file)
    if star.api is None:
        raise UserInputError("no API schema found for this task (looked for api.json beside it and "
                             f"apis/{star.name}.json); pass it with --api", Location(str(star.folder)))
    flow = read_flow(star)
    name, api = file_name(star.name), file_name(star.api.name)  # names from the folder: never code or paths
    agent = slug(star.api.db or name.split("_")[0])
    rest = name[len(agent) + 1:] if name.startswith(f"{agent}_") else name
    sop_id, tool = f"{agent}.{rest}", f"{api}.query"
    root = Path(workspace)
    sop = build_sop(flow, sop_id, agent, tool)
    gar_text, gar_notes = merge_gar(_read(root / "gar.csv"), gar_rows(flow, tool))
    store_text, store_notes = merge_store_yaml(_read(root / "store.yaml"), agent, tool, _tool_decl(star.api, api))
    files = {f"sops/{name}.json": json.dumps(sop, indent=2, ensure_ascii=False) + "\n",
             "gar.csv": gar_text, "store.yaml": store_text,
             f"star/{api}.py": TOOL_FILE,
             f"star/{api}.json": json.dumps(star.api.to_json(), indent=2, ensure_ascii=False) + "\n"}
    labels = {a: a for a in flow.asks} | {m: m for m in flow.messages} | {q: "query" for q in flow.queries}
    if flow.nothing_found:
        labels[flow.nothing_found] = flow.nothing_found
    replaced = [f"{rel} already exists and is replaced" for rel in files
                if rel not in ("gar.csv", "store.yaml") and (root / rel).is_file() and _read(root / rel) != files[rel]]
    return ImportResult(name, sop_id, agent, tool, api, files, labels,
                        flow.notes + gar_notes + store_notes + replaced)


def write_import(result: ImportResult, workspace: str | Path) -> list[Path]:
    """Write an import's files into the workspace (folders created as needed); returns the paths."""
    root = Path(workspace)
    store = root / "store.yaml"
    was_trusted = not store.is_file() or is_trusted(root, load_store_config(store)[0])
    written = []
    for rel, content in result.files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        written.append(path)
    keep_trust(root, was_trusted)  # its mock API is the import's own code
    return written


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8-sig") if path.is_file() else None


def file_name(text: str) -> str:
    """A name from an imported folder or API file as a safe file stem and identifier: letters, digits and
    underscores only ("../../x", quotes or newlines never reach a path, generated code or YAML)."""
    return re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_") or "star"


def _tool_decl(api: StarApi, file: str) -> dict[str, Any]:
    return {"description": f"{title_of(file)} (mock of the STAR API, backed by its DB spec)",
            "params": [f.name + ("" if f.name in api.required else "?") for f in api.inputs],
            "python": f"star/{file}.py:query", "side_effects": False}
