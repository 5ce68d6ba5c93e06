"""Why this reply: every turn's trace carries a plain explanation of what was read and what decided."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core import build_orchestrator
from core.engine.build import load_workspace
from core.engine.explain import explain
from core.engine.orchestrator import Orchestrator
from core.retrieval.embedding import CachedEmbedder
from core.tools.gateway import ToolScript

BIKES = Path(__file__).resolve().parent.parent / "examples" / "bike_repairs"


@pytest.fixture(scope="module")
def orch(embedder: CachedEmbedder, tmp_path_factory: pytest.TempPathFactory) -> Orchestrator:
    tmp = tmp_path_factory.mktemp("explain")
    return build_orchestrator(BIKES, state_url=f"sqlite:///{tmp}/s.db", loaded=load_workspace(BIKES, embedder))


def _why(orch: Orchestrator, session: str, text: str, script: dict[str, Any] | None = None) -> str:
    orch.handle_message(session, text, script=ToolScript(script) if script else None)
    trace = orch.last_trace(session) or {}
    assert trace["why"] == explain(trace), "a stored trace explains the same way again"
    return "\n".join(trace["why"])


def test_each_turn_says_what_was_read_filled_run_and_returned(orch: Orchestrator) -> None:
    why = _why(orch, "a", "I'd like to book a repair for my bike")
    assert "a request for repairs.book (closest to its triggers, similarity" in why
    assert "SOP repairs.book ran: “ask customer for their name”" in why
    why = _why(orch, "a", "Mira Jansen, you can call me on 06 98765432")
    assert "the answer “Mira Jansen” to “ask customer for their name”" in why
    assert "customer_name = “Mira Jansen”" in why and "phone = " in why  # the number given early is kept too
    _why(orch, "a", "the gears skip")
    why = _why(orch, "a", "next Thursday")
    assert "Tool repairs.book(customer_name=Mira Jansen, problem=the gears skip" in why
    assert "returned {ticket_id: RT-" in why and "done repairs.book (completed)" in why


def test_an_answer_with_a_side_question_beside_it(orch: Orchestrator) -> None:
    _why(orch, "b", "can you fix my bike")
    _why(orch, "b", "Ruben Smit")
    why = _why(orch, "b", "the front wheel wobbles, how much does a service cost?")
    assert "the answer “the front wheel wobbles” to “ask customer what is wrong with the bike”" in why
    assert "a side question for the knowledge base" in why
    assert "Tool knowledge_base.search(" in why and "passage(s): Our Workshop › Prices" in why
    state = orch.load_state("b")
    assert state is not None and state.active_goal is not None
    assert state.active_goal.slots["problem"] == "the front wheel wobbles"
    assert state.active_goal.missing == ["day", "phone"]


def test_a_failing_tool_is_explained_as_input_error_or_outage(orch: Orchestrator) -> None:
    _why(orch, "c", "how is my repair going?")
    why = _why(orch, "c", "RT-9999", {"repairs.lookup": {"error": "invalid ticket RT-9999", "kind": "invalid_input"}})
    assert "failed (invalid_input: invalid ticket RT-9999): the tool says the input is wrong" in why
    why = _why(orch, "c", "RT-2041", {"repairs.lookup": {"timeout": True}})
    assert "failed (timeout:" in why and "did not answer in time" in why


def test_grounding_and_dropped_commands_are_explained() -> None:
    trace = {"reading": {"reader": "rules", "commands": [{"command": "answer", "question": "ask for the day",
                                                          "value": "Friday"}],
                         "dropped": [{"command": "cancel_goal", "evidence": "yes cancel it",
                                      "reason": "the message answers the pending question"}]},
             "grounding": {"checked": True, "ungrounded": [42.0], "replaced": True}}
    why = "\n".join(explain(trace))
    assert "cancelling the request (from “yes cancel it”), not acted on: the message answers the pending question" \
        in why
    assert "Grounding replaced the draft reply: it stated 42.0, which no tool result, SOP text or customer " \
           "message holds" in why
