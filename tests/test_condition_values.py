"""Lint warns when a condition compares a slot with a value its kind never holds, naming the SOP file and the
condition's line; the values the canvas's condition builder offers follow the slot's kind."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from core.engine.build import load_workspace
from core.retrieval.embedding import CachedEmbedder
from core.workspace.slot_values import never_holds, values_of
from core.workspace.slots import SlotType
from tests.understanding.desks import desk, text_sop

GAR = ["ask customer for order number,ask_user_input,an order number like NW-12345,,order_id",
       "ask customer whether the item is under warranty,ask_user_input,yes or no,,under_warranty",
       "ask customer how the parcel should come back,ask_user_input,one of: courier or post office,,return_method",
       "ask customer how many items are damaged,ask_user_input,a number of items,,damaged_count",
       "tell customer a repair is booked,message_to_user,We will repair it.,,",
       "tell customer the team will call,message_to_user,Our team will call you.,,"]


DECLARED = "slots: {return_method: 'one_of(courier, post office)', order_id: id}\n"


def _warnings(root: Path, embedder: CachedEmbedder) -> list[str]:
    return [str(p) for p in load_workspace(root, embedder).problems if p.severity == "warning"]


def _sop(condition: str, slots: str = "") -> str:
    """The damaged-item SOP branching on ``condition`` (``slots``: a front-matter line declaring slot types)."""
    return text_sop("desk.damaged", "Report a damaged item", "my item arrived damaged", [
        "ask customer for order number", "ask customer whether the item is under warranty",
        "ask customer how the parcel should come back", "ask customer how many items are damaged",
        f"if {condition}:", "    tell customer a repair is booked", "    terminate the flow",
        "tell customer the team will call"]).replace("---\n", f"---\n{slots}", 1)


def test_a_yes_no_slot_compared_with_the_word_yes_is_a_warning_at_the_condition_line(
        tmp_path: Path, embedder: CachedEmbedder) -> None:
    root = desk(tmp_path / "ws", gar=GAR, sops={"damaged.sop": _sop("under_warranty == 'yes'")})
    found = [w for w in _warnings(root, embedder) if "under_warranty" in w and "condition" in w]
    assert len(found) == 1, found
    assert found[0].startswith("sops/damaged.sop:12: warning: condition \"under_warranty == 'yes'\"")
    assert "holds true or false, never 'yes': compare it with true" in found[0]


def test_the_same_condition_with_true_is_clean(tmp_path: Path, embedder: CachedEmbedder) -> None:
    root = desk(tmp_path / "ws", gar=GAR, sops={"damaged.sop": _sop("under_warranty == true")})
    assert not [w for w in _warnings(root, embedder) if "condition" in w]


def test_values_a_kind_never_takes_are_warnings_and_values_it_takes_are_not(
        tmp_path: Path, embedder: CachedEmbedder) -> None:
    """A declared choice's options are all it holds (an undeclared one also takes the values its conditions
    name: the engine reads them as options)."""
    bad = {"return_method == 'drone'": "never 'drone'", "damaged_count > 'many'": "holds a number, never 'many'",
           "order_id == true": "never holds true: only a yes/no slot holds true or false"}
    good = ["return_method == 'Courier'", "damaged_count >= 2", "order_id == 'NW-12345'"]
    for i, (cond, said) in enumerate(bad.items()):
        root = desk(tmp_path / f"bad{i}", gar=GAR, sops={"damaged.sop": _sop(cond, DECLARED)})
        found = [w for w in _warnings(root, embedder) if w.startswith("sops/damaged.sop:13: warning: condition")]
        assert len(found) == 1 and said in found[0], (cond, found)
    for i, cond in enumerate(good):
        root = desk(tmp_path / f"good{i}", gar=GAR, sops={"damaged.sop": _sop(cond, DECLARED)})
        assert not [w for w in _warnings(root, embedder) if "condition" in w], cond


def test_a_json_sop_condition_is_placed_on_its_own_line(tmp_path: Path, embedder: CachedEmbedder) -> None:
    nodes = {
        "ask": {"id": "ask", "type": "action", "messageTemplate": "Is the item still under warranty?",
                "resultKey": "under_warranty", "nextNodes": ["check"]},
        "check": {"id": "check", "type": "decision", "description": "Under warranty?",
                  "condition": "context.under_warranty == 'no'", "nextNodes": ["end", "end"]},
        "end": {"id": "end", "type": "end"}}
    doc = {"id": "desk.warranty", "agent": "desk", "triggers": ["is my item under warranty"], "startNode": "ask",
           "slots": {"under_warranty": "yes_no"}, "nodes": nodes}
    root = desk(tmp_path / "ws", sops={"w.json": doc})
    text = (root / "sops" / "w.json").read_text(encoding="utf-8")
    (root / "sops" / "w.json").write_text(text.replace(", \"", ",\n\"").replace("{\"", "{\n\""), encoding="utf-8")
    line = next(no for no, ln in enumerate((root / "sops" / "w.json").read_text().splitlines(), 1)
                if "'no'" in ln)
    found = [w for w in _warnings(root, embedder) if "condition" in w]
    assert found and found[0].startswith(f"sops/w.json:{line}: warning:"), found
    assert "compare it with false" in found[0]


def test_the_builder_offers_the_values_of_each_kind() -> None:
    assert values_of(SlotType("ok", "boolean")).options == ("true", "false")
    assert values_of(SlotType("how", "option", vocab=["courier", "post"])).options == ("courier", "post")
    assert values_of(SlotType("n", "number")).mode == "number"
    assert values_of(SlotType("budget", "money")).mode == "number"
    assert values_of(SlotType("when", "date")).mode == "date"
    assert values_of(SlotType("order_id", "id")).mode == "free"
    assert never_holds(SlotType("when", "date"), date(2026, 1, 2)) == ""
    assert "never 'soon'" in never_holds(SlotType("when", "date"), "soon")
