"""The SOP canvas: every example SOP opens and comes back byte for byte; each kind of edit writes SOP text that
the loader compiles and lint accepts, in text and JSON SOPs alike."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from core.engine.build import load_workspace
from core.retrieval.embedding import CachedEmbedder
from core.shared.problems import Problem
from core.sop.canvas.conditions import build_condition, check_condition
from core.sop.canvas.drawing import open_canvas
from core.sop.canvas.edits import add_step, connect, declare_slot, delete_step, update_step
from core.sop.canvas.model import KINDS, Canvas, CanvasError, Edit, Format, Kind
from core.workspace.files import load_workspace_files
from core.workspace.gar import GarIndex

ROOT = Path(__file__).resolve().parent.parent
WORKSPACES = [ROOT, *sorted(p for p in (ROOT / "examples").iterdir() if (p / "store.yaml").is_file())]
SOP_FILES = [(ws, path) for ws in WORKSPACES for path in load_workspace_files(ws).sop_files()]


def _fmt(path: Path) -> Format:
    return "json" if path.suffix == ".json" else "text"


def _open(ws: Path, path: Path, embedder: CachedEmbedder, source: str | None = None) -> Canvas:
    files = load_workspace_files(ws)
    text = path.read_bytes().decode("utf-8") if source is None else source
    return open_canvas(text, _fmt(path), f"sops/{path.name}", GarIndex(files.gar, embedder))


def _name(item: tuple[Path, Path]) -> str:
    ws, path = item
    return f"{ws.name if ws != ROOT else 'demo'}/{path.name}"


@pytest.mark.parametrize("item", SOP_FILES, ids=[_name(i) for i in SOP_FILES])
def test_every_example_sop_opens_and_comes_back_byte_for_byte(item: tuple[Path, Path],
                                                               embedder: CachedEmbedder) -> None:
    ws, path = item
    raw = path.read_bytes()
    canvas = _open(ws, path, embedder)
    assert canvas.source.encode("utf-8") == raw
    assert canvas.nodes and canvas.start in canvas.nodes
    assert all(e.source in canvas.nodes and e.target in canvas.nodes for e in canvas.edges)
    unnamed = [n.id for n in canvas.nodes.values() if n.label.strip() in ("", n.id)]
    assert not unnamed, f"steps labelled by their id, not by what they do: {unnamed}"
    kinds = {n.kind for n in canvas.nodes.values()}
    assert kinds <= set(KINDS) and "end" in kinds
    # every step's own fields written back, and every arrow led to where it already goes: the same bytes
    for node in canvas.nodes.values():
        if node.kind == "decision" and canvas.format == "text":
            for i, b in enumerate(node.fields["branches"]):
                if b["condition"] is not None:
                    assert update_step(canvas, node.id, {"condition": b["condition"]}, i).source.encode() == raw
        elif node.kind != "end":
            assert update_step(canvas, node.id, dict(node.fields)).source.encode() == raw
    for edge in canvas.edges:
        assert connect(canvas, edge.source, edge.target, edge.branch).source.encode() == raw


# ---------------------------------------------------------------------------------------------- edits lint clean
def _lint(ws: Path, rel: str, text: str, embedder: CachedEmbedder) -> list[Problem]:
    (ws / rel).write_text(text, encoding="utf-8", newline="")
    return [p for p in load_workspace(ws, embedder, kb_index="lazy").problems if p.severity == "error"]


def _copy(ws: Path, tmp: Path) -> Path:
    dst = tmp / (ws.name if ws != ROOT else "demo")
    shutil.copytree(ws, dst, ignore=shutil.ignore_patterns(".state", "conversations", "tests", "docs", "examples",
                                                           "core", "ui", "pages", ".venv", ".git", "scripts"))
    return dst


def _key_read(canvas: Canvas) -> str:
    """A value the SOP sets (what an ask fills or a tool returns), for a condition that lints."""
    sop = canvas.sop
    assert sop is not None
    for node in sop.nodes.values():
        if node.fills:
            return node.fills[0].name
    return next((n.result_key for n in sop.nodes.values() if n.tool and n.result_key), "")


def _fields(canvas: Canvas, kind: str, ws_files: Path, other_sop: str) -> dict[str, Any]:
    files = load_workspace_files(ws_files)
    assert canvas.sop is not None
    agent = files.config.agent_for(canvas.sop.id, canvas.sop.agent)
    allowed = agent.tools if agent else []
    gar = [r for r in files.gar if not r.api or r.api in allowed]  # the tools the SOP's agent may call
    key = _key_read(canvas)
    if kind == "decision":
        return {"condition": build_condition(key, "==", "yes", canvas.format) if key else "the customer agrees"}
    if kind == "call":
        return {"call": other_sop}
    if kind == "end":
        return {}
    if kind == "handoff":  # a step of its own: no GAR row
        return {"action": "escalate to a supervisor"} if canvas.format == "text" else {"message": "One moment."}
    if canvas.format == "text":
        want = {"ask": "ask_user_input", "tool": "api_call", "message": "message_to_user"}[kind]
        row = next(r for r in gar if r.has(want) and (kind != "message" or not r.has("ask_user_input")))
        return {"action": row.action}
    if kind == "ask":
        return {"result_key": "new_answer", "message": "What is your new answer?"}
    if kind == "tool":
        tool = next(t for t in allowed if t != "knowledge_base.search")
        return {"tool": tool, "params": {p.name: "x" for p in files.config.tools[tool].params}
                if tool in files.config.tools else {}, "result_key": "found"}
    return {"message": f"Noted: {{context.{key}}}."}


def _other_sop(ws: Path, mine: Path) -> str | None:
    """An SOP of the workspace this one may call (one that calls nothing, so no ring)."""
    for path in load_workspace_files(ws).sop_files():
        text = path.read_text(encoding="utf-8")
        if path != mine and "call " not in text and '"call"' not in text:
            for line in text.splitlines():
                if line.startswith("id:"):
                    return line.split(":", 1)[1].strip()
                if '"id":' in line:
                    return line.split('"id":', 1)[1].split('"')[1]
    return None


def _add_somewhere(canvas: Canvas, kind: Kind, fields: dict[str, Any]) -> tuple[str, Edit]:
    """The step added after the first step that takes it (in text a decision cannot go right before another)."""
    steps = [canvas.start, *(n.id for n in canvas.nodes.values() if n.kind not in ("end", "decision"))]
    for at in steps:
        try:
            return at, add_step(canvas, at, kind, fields)
        except CanvasError as exc:
            assert "one more branch" in str(exc)
    raise AssertionError(f"no step takes a {kind} after it")


@pytest.mark.parametrize("item", SOP_FILES, ids=[_name(i) for i in SOP_FILES])
def test_each_edit_writes_an_sop_the_loader_compiles_and_lint_accepts(item: tuple[Path, Path], tmp_path: Path,
                                                                       embedder: CachedEmbedder) -> None:
    ws_src, path_src = item
    ws = _copy(ws_src, tmp_path)
    path = ws / "sops" / path_src.name
    rel = f"sops/{path.name}"
    original = path.read_bytes().decode("utf-8")
    canvas = _open(ws, path, embedder)
    first = canvas.start
    other = _other_sop(ws, path)
    done: list[str] = []
    for kind in KINDS:
        if kind == "call" and other is None:
            continue
        at, edit = _add_somewhere(canvas, kind, _fields(canvas, kind, ws, other or ""))
        assert edit.source != original
        assert _lint(ws, rel, edit.source, embedder) == [], f"add {kind}"
        again = _open(ws, path, embedder, edit.source)
        assert edit.selected in again.nodes and again.nodes[edit.selected or ""].kind == kind, f"add {kind}"
        assert again.target(at) == edit.selected
        done.append(kind)
    # lead the first step to an end, then back where it went
    end = next(n.id for n in canvas.nodes.values() if n.kind == "end")
    led = connect(canvas, first, end)
    assert _lint(ws, rel, led.source, embedder) == []
    ended = _open(ws, path, embedder, led.source)
    assert ended.nodes[ended.target(led.selected or first) or ""].kind == "end"
    was = canvas.nodes[canvas.target(first) or ""]
    moved = was.id if canvas.format == "json" or was.implicit else \
        next(n.id for n in ended.nodes.values() if n.line == was.line + 1)  # text: one line further down
    back = connect(ended, led.selected or first, moved)
    if canvas.format == "text":  # the terminate line written, then taken out again
        assert back.source == original
    else:  # an ask that filled what the next steps read keeps it, written as its resultKey
        assert _open(ws, path, embedder, back.source).target(first) == was.id
        assert _lint(ws, rel, back.source, embedder) == []
    # edit a step's fields
    step = next(n for n in canvas.nodes.values() if n.kind in ("ask", "message", "tool"))
    if canvas.format == "text":
        same_kind = _fields(canvas, step.kind, ws, "")["action"]
        changed = update_step(canvas, step.id, {"action": same_kind})
    else:
        changed = update_step(canvas, step.id, {"description": f"{step.fields.get('description', '')} (edited)"})
    assert _lint(ws, rel, changed.source, embedder) == []
    # delete a message step and (where one is) a decision
    for kind in ("message", "decision"):
        node = next((n for n in canvas.nodes.values() if n.kind == kind), None)
        if node is None:
            continue
        try:
            gone = delete_step(canvas, node.id)
        except CanvasError as exc:  # text: the only step under an "if" stays until the branch has another
            assert "only step" in str(exc) or "one more branch" in str(exc)
            continue
        assert node.id not in _open(ws, path, embedder, gone.source).nodes or canvas.format == "text"
        assert _lint(ws, rel, gone.source, embedder) == [], f"delete {kind} {node.id}"
    assert set(done) >= {"ask", "tool", "message", "decision", "handoff", "end"}


# ---------------------------------------------------------------------------------------------- layout kept
CRLF_SOP = "---\r\nid: care.mini\r\ntitle: Mini\r\n---\r\n# comment kept\r\nask customer for order number\r\n" \
           "look up the order\r\nif order.status == 'delivered':\r\n\tcreate the return\r\nelse:\r\n" \
           "\ttell customer only delivered orders can be returned"


def test_text_edits_keep_line_endings_tabs_comments_and_a_missing_final_newline(embedder: CachedEmbedder) -> None:
    files = load_workspace_files(ROOT / "examples" / "retail_care")
    canvas = open_canvas(CRLF_SOP, "text", "sops/mini.sop", GarIndex(files.gar, embedder))
    decision = next(n for n in canvas.nodes.values() if n.kind == "decision")
    edit = add_step(canvas, decision.id, "ask", {"action": "ask customer which item to return"}, branch=0)
    assert edit.source == CRLF_SOP.replace("\tcreate the return", "\task customer which item to return\r\n"
                                                                  "\tcreate the return")
    last = next(n for n in canvas.nodes.values() if n.label.startswith("tell customer only"))
    edit = add_step(canvas, last.id, "end", {})
    assert edit.source == CRLF_SOP + "\r\n\tterminate the flow"
    cond = update_step(canvas, decision.id, {"condition": "order.status == 'shipped'"}, 0)
    assert cond.source == CRLF_SOP.replace("'delivered'", "'shipped'")
    gone = delete_step(canvas, decision.id)
    assert gone.source == CRLF_SOP.split("if order")[0] + "create the return"


JSON_SOP = """{
  "id": "care.mini",
  "name": "Mini",   "startNode": "ask",
  "nodes": {
    "ask": {"id": "ask", "type": "action", "description": "Ask for the order number",
            "messageTemplate": "Your order number?", "resultKey": "order_id", "nextNodes": ["done"]},
    "done": {"id": "done", "type": "end", "description": "Done"}
  }
}"""


def test_json_edits_change_only_what_they_touch() -> None:
    canvas = open_canvas(JSON_SOP, "json", "sops/mini.json")
    edit = add_step(canvas, "ask", "tool", {"tool": "orders.lookup", "params": {"order_id": "context.order_id"},
                                            "result_key": "order"})
    assert edit.selected == "orders_lookup"
    assert edit.source.startswith(JSON_SOP.split('"nextNodes": ["done"]')[0] + '"nextNodes": ["orders_lookup"]}')
    assert '"name": "Mini",   "startNode": "ask"' in edit.source  # untouched spacing stays
    assert edit.source.endswith('"done": {"id": "done", "type": "end", "description": "Done"}\n  }\n}')
    two = open_canvas(edit.source, "json", "sops/mini.json")
    assert two.target("ask") == "orders_lookup" and two.target("orders_lookup") == "done"
    assert two.nodes["orders_lookup"].kind == "tool"
    gone = delete_step(two, "orders_lookup")
    assert gone.source == JSON_SOP
    renamed = update_step(canvas, "ask", {"message": "What is your order number?"})
    assert renamed.source == JSON_SOP.replace("Your order number?", "What is your order number?")
    dropped = update_step(canvas, "ask", {"result_key": ""})
    assert dropped.source == JSON_SOP.replace(', "resultKey": "order_id"', "")


def test_a_slot_kind_is_declared_in_the_sop_itself() -> None:
    canvas = open_canvas(JSON_SOP, "json", "sops/mini.json")
    done = declare_slot(canvas, "order_id", "id(NW-12345)")
    assert done.source == JSON_SOP.replace('"name": "Mini",', '"name": "Mini",   "slots": {"order_id": '
                                           '"id(NW-12345)"},')
    again = declare_slot(open_canvas(done.source, "json", "sops/mini.json"), "confirmed", "yes_no")
    assert '"slots": {"order_id": "id(NW-12345)", "confirmed": "yes_no"}' in again.source
    with pytest.raises(CanvasError, match="unknown slot type"):
        declare_slot(canvas, "x", "colour")
    text = open_canvas(CRLF_SOP, "text", "sops/mini.sop")
    head = declare_slot(text, "order_id", "id").source
    assert head.startswith("---\r\nid: care.mini\r\ntitle: Mini\r\nslots: {order_id: id}\r\n---\r\n")
    both = declare_slot(open_canvas(head, "text", "sops/mini.sop"), "return_item", "text").source
    assert "slots: {order_id: id, return_item: text}\r\n" in both
    block = "---\nid: a.b\nslots:\n  day: date\n---\nterminate the flow\n"
    assert declare_slot(open_canvas(block, "text", "sops/b.sop"), "phone", "phone").source == \
        block.replace("  day: date\n", "  day: date\n  phone: phone\n")


def test_text_arrows_that_text_cannot_write_are_refused_with_a_reason(embedder: CachedEmbedder) -> None:
    files = load_workspace_files(ROOT / "examples" / "retail_care")
    canvas = open_canvas(CRLF_SOP, "text", "sops/mini.sop", GarIndex(files.gar, embedder))
    with pytest.raises(CanvasError, match="step written under it"):
        connect(canvas, canvas.start, next(n.id for n in canvas.nodes.values() if n.kind == "decision"))
    with pytest.raises(CanvasError, match="after an end"):
        add_step(canvas, "end", "message", {"action": "look up the order"})


def test_conditions_are_built_and_checked_with_their_column() -> None:
    assert build_condition("order.status", "==", "delivered", "json") == "context.order.status == 'delivered'"
    assert build_condition("order.total", ">=", "100", "text") == "order.total >= 100"
    assert build_condition("confirmed", "==", "yes", "text") == "confirmed == 'yes'"
    assert build_condition("confirmed", "==", "True", "json") == "context.confirmed == true"
    assert check_condition("order.status == 'delivered'", "json").ok
    bad = check_condition("amount * * 2 > 1", "json")
    assert not bad.ok and bad.column == 10 and "column 10" in bad.message
    assert check_condition("if the order is delivered:", "text").ok  # words: decided from the step before
    assert not check_condition("the order is delivered", "json").ok
    with pytest.raises(CanvasError):
        build_condition("order status", "==", "x", "json")


def test_a_handoff_step_on_the_canvas_is_the_sops_own_step_in_text_and_json(embedder: CachedEmbedder) -> None:
    files = load_workspace_files(ROOT / "examples" / "retail_care")
    gar = GarIndex(files.gar, embedder)
    text = open_canvas(CRLF_SOP, "text", "sops/mini.sop", gar)
    first = text.start
    edit = add_step(text, first, "handoff", {"action": "transfer the customer to a human agent"})
    assert "\r\ntransfer the customer to a human agent\r\n" in edit.source
    again = open_canvas(edit.source, "text", "sops/mini.sop", gar)
    assert again.nodes[edit.selected or ""].kind == "handoff" and not again.out(edit.selected or "")
    with pytest.raises(CanvasError, match="not worded as a hand-off"):
        update_step(again, edit.selected or "", {"action": "transfer the balance to savings"})
    renamed = update_step(again, edit.selected or "", {"action": "hand off to the returns team"})
    assert "hand off to the returns team" in renamed.source
    src = (ROOT / "examples" / "order_delay" / "sops" / "order_delay.json").read_text(encoding="utf-8")
    js = open_canvas(src, "json", "sops/order_delay.json")
    added = add_step(js, js.start, "handoff", {"message": "Please keep your order number to hand."})
    node = json.loads(added.source)["nodes"][added.selected or ""]
    assert node == {"id": "hand_off", "type": "handoff", "description": "Hand off to a person",
                    "messageTemplate": "Please keep your order number to hand."}
    reopened = open_canvas(added.source, "json", "sops/order_delay.json")
    assert reopened.nodes[added.selected or ""].kind == "handoff"
    assert not [p for p in reopened.problems if p.severity == "error"]
