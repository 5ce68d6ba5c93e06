"""The engine knows no store: a copy of the demo whose slots and search tool carry other names
(declared in store.yaml's ``commerce`` section) holds every demo conversation word for word.

Each demo conversation file runs on the demo and on the renamed copy; replies, goals, actions,
tool calls and slot values (names mapped back) must be the same turn by turn.
"""

from __future__ import annotations

import csv
import io
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.engine.build import build_orchestrator, load_workspace
from core.state.memory.local import LocalPreferenceMemory
from core.state.sessions import open_state_store
from core.tools.gateway import ToolScript

ROOT = Path(__file__).resolve().parents[2]
SLOTS = {"category": "product_type", "budget": "max_spend", "brand": "maker", "device_model": "gadget_name",
         "chosen_item": "pick"}
TOOLS = {"inventory.query": "catalog.find"}
DEMO_FILES = sorted(p for p in (ROOT / "tests" / "conversations").glob("*.yaml")
                    if (yaml.safe_load(p.read_text(encoding="utf-8")) or {}).get("workspace") == "../..")


def _params(cell: str) -> str:
    return "|".join(SLOTS.get(p.rstrip("?"), p.rstrip("?")) + ("?" if p.endswith("?") else "")
                    for p in cell.split("|")) if cell else cell


@pytest.fixture(scope="module")
def renamed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("renamed-demo")
    for name in ("sops", "kb", "data"):
        shutil.copytree(ROOT / name, ws / name)
    shutil.copy(ROOT / "inventory.csv", ws / "inventory.csv")
    rows = list(csv.reader(io.StringIO((ROOT / "gar.csv").read_text(encoding="utf-8"))))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(rows[0])
    for action, kind, meta, api, params in rows[1:]:
        for old, new in SLOTS.items():
            meta = meta.replace("{" + old + "}", "{" + new + "}")
        writer.writerow([action, kind, meta, TOOLS.get(api, api), _params(params)])
    (ws / "gar.csv").write_text(out.getvalue(), encoding="utf-8")
    store = (ROOT / "store.yaml").read_text(encoding="utf-8")
    for old, new in TOOLS.items():
        store = store.replace(old, new)
    roles = {role: SLOTS[role] for role in ("category", "budget", "brand")}
    store += f"commerce:\n  search_tool: {TOOLS['inventory.query']}\n  slots: {roles}\n"
    (ws / "store.yaml").write_text(store, encoding="utf-8")
    return ws


def _back(name: str) -> str:  # the demo's name for a renamed slot or tool
    return {v: k for k, v in {**SLOTS, **TOOLS}.items()}.get(name, name)


def _back_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {_back(k): _back_keys(v) for k, v in value.items()}
    return value


def _back_in(text: str) -> str:
    for old, new in TOOLS.items():
        text = text.replace(new, old)
    return text


def transcript(ws: Path, spec: dict[str, Any], tools: dict[str, str]) -> list[dict[str, Any]]:
    loaded = load_workspace(ws)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        store = open_state_store(f"sqlite:///{tmp}/s.sqlite")
        memory = LocalPreferenceMemory(Path(tmp) / "p.sqlite")
        orch = build_orchestrator(ws, store=store, memory=memory, loaded=loaded)
        file_tools = {tools.get(k, k): v for k, v in (spec.get("tools") or {}).items()}
        for turn in spec.get("turns") or []:
            session = str(turn.get("session") or "s1")
            script = ToolScript({**file_tools, **{tools.get(k, k): v for k, v in (turn.get("tools") or {}).items()}})
            reply = orch.handle_message(session, str(turn.get("user", "")), customer_id=spec.get("customer_id"),
                                        script=script)
            state = orch.load_state(session)
            trace = orch.last_trace(session) or {}
            goal = state.active_goal if state else None
            out.append({
                "reply": reply,
                "goal": goal.type if goal else None,
                "missing": sorted(_back(m) for m in (goal.missing if goal else [])),
                "slots": _back_keys(goal.slots if goal else {}),
                "actions": [_back_in(a) for a in trace.get("actions") or []],
                "tools": [_back(t) for t in trace.get("tools") or []],
            })
        store.close()
        memory.close()
    return out


def test_the_copy_declares_other_names(renamed: Path) -> None:
    rows = list(csv.DictReader(io.StringIO((renamed / "gar.csv").read_text(encoding="utf-8"))))
    params = {p.rstrip("?") for r in rows for p in r["params"].split("|") if p}
    assert {"max_spend", "pick", "gadget_name"} <= params and not params & set(SLOTS)
    assert {r["api"] for r in rows} & {"catalog.find"} and not {r["api"] for r in rows} & set(TOOLS)


@pytest.mark.parametrize("path", DEMO_FILES, ids=[p.stem for p in DEMO_FILES])
def test_a_renamed_store_holds_the_demo_conversation(renamed: Path, path: Path) -> None:
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    demo = transcript(ROOT, spec, {})
    copy = transcript(renamed, spec, TOOLS)
    assert len(demo) == len(copy)
    for i, (a, b) in enumerate(zip(demo, copy, strict=True), start=1):
        assert a == b, f"turn {i} ({spec['turns'][i - 1].get('user')!r}) differs"
