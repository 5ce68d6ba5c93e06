"""The command processor acts on typed commands alone, and the rule reader reads without changing anything.

On a workspace of our own (tests/understanding/cabins): a cabin search, a cabin booking, a trail report
and a canoe booking. The processor is handed commands with a message that says something else entirely:
what it does follows the commands, so no code below the reader interprets the customer's words."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import build_orchestrator
from core.engine.goals import GoalOps
from core.engine.orchestrator import Orchestrator, Turn
from core.importers import import_star_task, write_import
from core.shared.models import SessionState, Trace
from core.state.memory.base import PreferenceSummary
from core.understanding import Answer, AnswerReading, CancelGoal, Reading, SetSlots, StartGoal

CABINS = Path(__file__).parent / "cabins"
NONSENSE = "purple monkeys dishwasher"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("cabins")
    for task in ("cabin_search", "cabin_book", "trail_report", "canoe_book"):
        write_import(import_star_task(CABINS / "tasks" / task, ws), ws)
    return ws


@pytest.fixture()
def orch(root: Path, tmp_path: Path) -> Orchestrator:
    return build_orchestrator(root, state_url=f"sqlite:///{tmp_path}/s.sqlite")


def sop_id(orch: Orchestrator, suffix: str) -> str:
    return next(s for s in orch.sops if s.endswith(suffix))


def turn(orch: Orchestrator, text: str) -> Turn:
    """A turn on the saved session, as the runner builds it (the message perceived, nothing acted on)."""
    state = orch.load_state("s") or SessionState(session_id="s", workspace_id=orch.workspace_id)
    state.turn += 1
    perception = orch.brain.perceive(text, list(orch.sops.values()))
    return Turn(state, Trace(session_id="s", turn=state.turn, user=text), GoalOps(state), PreferenceSummary(),
                perception, None, {}, reading=Reading("en"))


def test_an_answer_command_moves_the_flow_whatever_the_message_says(orch: Orchestrator) -> None:
    orch.handle_message("s", "I'd like to book the Cedar Rest cabin")
    t = turn(orch, NONSENSE)
    goal = t.state.active_goal
    asked = goal.pending
    orch.processor.act(t, [Answer(evidence="the 3rd", question=asked,
                                  reading=AnswerReading(asked, {"arrival_day": "3rd"}, True, heard="3rd"))])
    assert goal.slots["arrival_day"] == "3rd"
    assert goal.pending != asked and goal.pending.endswith("ask_departure")
    assert t.messages == ["And on which day do you leave?"]
    assert [c.kind for c in t.reading.commands] == ["answer"]


def test_a_cancel_then_a_start_with_its_values(orch: Orchestrator) -> None:
    orch.handle_message("s", "I'd like to book the Cedar Rest cabin")
    t = turn(orch, NONSENSE)
    booking = t.state.active_goal
    trail = sop_id(orch, "trail_report")
    orch.processor.act(t, [CancelGoal(evidence="forget it", goal=booking.type),
                           StartGoal(evidence="the Falls Path on Sunday?", sop=trail),
                           SetSlots(evidence="the Falls Path on Sunday?", sop=trail,
                                    values={"trail": "Falls Path", "day": "Sunday"})])
    assert booking.outcome == "cancelled"
    assert any("On Sunday the Falls Path will be" in m for m in t.messages)
    assert [c.kind for c in t.reading.commands] == ["cancel_goal", "start_goal", "set_slots"]


def test_the_check_drops_what_the_context_rules_out_with_the_reason(orch: Orchestrator) -> None:
    orch.handle_message("s", "I'd like to book the Cedar Rest cabin")
    t = turn(orch, NONSENSE)
    running = t.state.active_goal.type
    kept = orch.processor.check(t, [StartGoal(evidence="book a cabin", sop=running),
                                    CancelGoal(evidence="cancel", goal=running),
                                    Answer(evidence="the 3rd", question=t.state.active_goal.pending),
                                    SetSlots(evidence="x", sop="nowhere.nothing", values={"a": 1})])
    assert [c.kind for c in kept] == ["answer"]
    assert [(c.kind, why) for c, why in t.reading.dropped] == [
        ("start_goal", "that request is the one running"),
        ("cancel_goal", "the message answers the pending question"),
        ("set_slots", "no such SOP")]


def test_values_for_an_sop_that_does_not_start_are_kept_for_it(orch: Orchestrator) -> None:
    orch.handle_message("s", "I'm looking for a cabin")
    t = turn(orch, NONSENSE)
    booking = sop_id(orch, "cabin_book")
    orch.processor.act(t, [SetSlots(evidence="arriving the 5th", sop=booking, values={"arrival_day": "5th"}),
                           SetSlots(evidence="a red one", sop=booking, values={"colour": "red"})])
    assert t.state.told == {"arrival_day": "5th"}  # a listed day is kept; what the SOP never asks is not
    assert [why for _, why in t.reading.dropped] == [
        "the SOP these values are for does not start, and keeps no such values"]


@pytest.mark.parametrize("messages, text", [
    ((), "I'd like to book the Cedar Rest cabin, arriving the 5th and leaving the 11th"),
    (("I'm looking for a cabin",), "by the lake please. Also, how is the Summit Trail on Friday?"),
    (("I'm looking for a cabin", "by the lake please"), "sure, please book this one"),
    (("I'd like to book the Cedar Rest cabin",), "never mind. How is the North Loop on Monday?"),
    (("How is the North Loop on Monday?",), "and on Tuesday?"),
    (("I'd like to book the Cedar Rest cabin",), "what's the weather like up there?"),
])
def test_reading_changes_nothing(orch: Orchestrator, messages: tuple[str, ...], text: str) -> None:
    for said in messages:
        orch.handle_message("s", said)
    t = turn(orch, text)
    before = t.state.model_dump_json()
    commands = orch.reader.read(orch._context(t))
    assert commands  # every message is read into at least one command
    assert t.state.model_dump_json() == before
    assert not t.messages and not t.trace.tool_calls


def test_a_model_answer_is_made_whole_by_the_reader(orch: Orchestrator) -> None:
    orch.handle_message("s", "I'd like to book the Cedar Rest cabin")
    t = turn(orch, "the 3rd")
    asked = t.state.active_goal.pending
    made = orch.reader.complete([Answer(evidence="the 3rd", question=asked)], orch._context(t))
    assert isinstance(made[0], Answer) and made[0].reading is not None
    assert made[0].reading.values == {"arrival_day": "3rd"} and made[0].reading.ok
