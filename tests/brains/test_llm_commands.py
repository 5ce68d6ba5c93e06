"""A model's reading is acted on as the commands it is: nothing flattened, nothing re-read from the text.

The customer-care workspace of the examples (orders, addresses, refunds), a fake OpenAI-compatible server
that answers each reading by the customer's words (anything else: "cannot tell", so the rules decide).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.engine.build import Workspace, load_workspace
from core.engine.orchestrator import Orchestrator
from core.retrieval.embedding import CachedEmbedder
from tests.brains.conftest import OrchFactory
from tests.brains.fake_openai import FakeOpenAI, Reply, abstain, command, reading, schema_name

CARE = Path(__file__).resolve().parents[2] / "examples" / "retail_care"


@pytest.fixture(scope="module")
def care(embedder: CachedEmbedder) -> Workspace:
    return load_workspace(CARE, embedder)


def by_words(readings: dict[str, Reply]) -> Callable[[dict[str, Any]], Reply]:
    """A responder: the scripted reading of a customer message, 'cannot tell' for everything else."""

    def respond(body: dict[str, Any]) -> Reply:
        if schema_name(body) == "Reading":
            user = next(m["content"] for m in body["messages"] if m["role"] == "user")
            said = user.rsplit("Customer: ", 1)[-1]
            if said in readings:
                return readings[said]
        return abstain(body)

    return respond


def chat(orch: Orchestrator, session: str, *texts: str) -> str:
    reply = ""
    for text in texts:
        reply = orch.handle_message(session, text)
    return reply


def trace(orch: Orchestrator, session: str) -> dict[str, Any]:
    found = orch.last_trace(session)
    assert found is not None
    return found


@pytest.fixture()
def model(care: Workspace, fake: FakeOpenAI, make_orch: OrchFactory) -> Callable[[dict[str, Reply]], Orchestrator]:
    def make(readings: dict[str, Reply]) -> Orchestrator:
        fake.responder = by_words(readings)
        return make_orch(care, fake, "llm")

    return make


def test_a_yes_with_cancel_words_is_an_answer_and_the_cancel_is_dropped(model: Any) -> None:
    said = "Yes, please cancel it"
    orch = model({said: reading("answer", slots={"cancel_confirmed": "yes"}, also=[command("cancel_goal")])})
    reply = chat(orch, "a", "I want to cancel my order", "NW-10482", said)
    assert "NW-10482 is cancelled" in reply
    r = trace(orch, "a")["reading"]
    assert r["reader"] == "model"
    assert [c["command"] for c in r["commands"]] == ["answer"]
    assert r["dropped"] == [{"command": "cancel_goal", "evidence": said, "goal": "care.order_cancel",
                             "reason": "the message answers the pending question"}]


def test_a_correction_changes_the_slot_and_keeps_the_place_in_the_flow(model: Any, fake: FakeOpenAI) -> None:
    said = "oops, wrong one: it should go to 14 Elm Street, Springfield 01104"
    orch = model({said: reading("correct_slot", slots={"new_address": "14 Elm Street, Springfield 01104"})})
    chat(orch, "b", "I need to change my delivery address", "NW-10481", "22 Baker Street, Springfield 01103")
    state = orch.load_state("b")
    assert state is not None and state.active_goal is not None
    pending = state.active_goal.pending
    reply = chat(orch, "b", said)
    state = orch.load_state("b")
    assert state is not None and state.active_goal is not None
    assert state.active_goal.slots["new_address"] == "14 Elm Street, Springfield 01104"
    assert state.active_goal.pending == pending and "phone" in reply.lower()  # still at the courier's phone
    assert trace(orch, "b")["reading"]["commands"][0]["command"] == "correct_slot"
    prompt = fake.chat_requests()[-1]["messages"][-1]["content"]
    assert "Filled: " in prompt and "new_address" in prompt.split("Filled: ")[1].split("\n")[0]


def test_a_side_question_with_request_words_is_answered_and_the_flow_waits(model: Any) -> None:
    said = "can I still cancel it later if I change my mind?"
    orch = model({said: reading("knowledge_question", query="can an order be cancelled later")})
    chat(orch, "c", "I need to change my delivery address")
    before = orch.load_state("c")
    assert before is not None and before.active_goal is not None
    chat(orch, "c", said)
    state = orch.load_state("c")
    assert state is not None and state.active_goal is not None
    assert (state.active_goal.type, state.active_goal.pending) == ("care.address_change", before.active_goal.pending)
    t = trace(orch, "c")
    assert [c["args"] for c in t["tool_calls"] if c["tool"] == "knowledge_base.search"] == \
        [{"query": "can an order be cancelled later"}]
    assert [c["command"] for c in t["reading"]["commands"]] == ["knowledge_question"]


def test_an_answer_and_a_new_request_in_one_message(model: Any) -> None:
    said = "22 Baker Street, Springfield 01103. Oh and I also want a refund"
    orch = model({said: reading("answer", slots={"new_address": "22 Baker Street, Springfield 01103"},
                                also=[command("start_goal", sop="care.refund")])})
    chat(orch, "d", "I need to change my delivery address", "NW-10481")
    reply = chat(orch, "d", said)
    state = orch.load_state("d")
    assert state is not None and state.active_goal is not None and state.active_goal.type == "care.refund"
    waiting = next(g for g in state.goals.values() if g.type == "care.address_change")
    assert waiting.slots["new_address"] == "22 Baker Street, Springfield 01103"  # kept: not asked again
    assert "order number" in reply.lower()
    assert [c["command"] for c in trace(orch, "d")["reading"]["commands"]] == ["answer", "start_goal"]


def test_asking_for_a_person_hands_over_with_the_request_kept(model: Any) -> None:
    said = "can a real human being sort this out instead"
    orch = model({said: reading("human_handoff")})
    chat(orch, "e", "I need to change my delivery address")
    reply = chat(orch, "e", said)
    state = orch.load_state("e")
    assert state is not None and state.handoff_turn == state.turn
    assert state.active_goal is not None and state.active_goal.type == "care.address_change"
    assert "change a delivery address" in reply.lower()


def test_a_command_the_context_rules_out_leaves_the_message_to_the_rules(model: Any) -> None:
    said = "it's NW-10481"
    orch = model({said: reading("start_goal", sop="care.address_change")})
    chat(orch, "f", "I need to change my delivery address")
    reply = chat(orch, "f", said)
    r = trace(orch, "f")["reading"]
    assert r["dropped"][0]["reason"] == "that request is the one running"
    assert r["reader"] == "rules" and r["commands"][0]["command"] == "answer"  # the rules read the order number
    assert "address" in reply.lower()


def test_a_go_back_the_model_read_returns_to_the_question_the_reading_names(model: Any) -> None:
    """The model says only "go back"; which question is the reader's to say (the one whose words the
    message shares), and the trace's command names it."""
    said = "wait, go back, the new address I gave is not right"
    orch = model({said: reading("go_back")})
    chat(orch, "g", "I need to change my delivery address", "NW-10481", "22 Baker Street, Springfield 01103")
    chat(orch, "g", said)
    state = orch.load_state("g")
    assert state is not None and state.active_goal is not None
    assert state.active_goal.slots.get("new_address") in (None, "")
    read = trace(orch, "g")["reading"]
    assert read["reader"] == "model"
    assert [c["command"] for c in read["commands"]] == ["go_back"]
    asked = orch.sops["care.address_change"].nodes[state.active_goal.pending]
    assert read["commands"][0]["target"] == asked.label and "address" in asked.label
