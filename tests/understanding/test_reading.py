"""The trace shows, per turn, the commands read, the words they came from, and those dropped and why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core import build_orchestrator
from core.engine.orchestrator import Orchestrator
from core.language.lexicons import language_of, segment
from core.language.replies import languages, say
from core.understanding import reading_lines, value_words

CARE = Path(__file__).resolve().parents[2] / "examples" / "retail_care"


@pytest.fixture(scope="module")
def orch(tmp_path_factory: pytest.TempPathFactory) -> Orchestrator:
    return build_orchestrator(CARE, state_url=f"sqlite:///{tmp_path_factory.mktemp('s')}/s.sqlite")


def reading(orch: Orchestrator, session: str, *texts: str) -> dict[str, Any]:
    for text in texts:
        orch.handle_message(session, text)
    trace = orch.last_trace(session) or {}
    return trace["reading"]


def test_a_yes_to_the_confirmation_is_an_answer_and_the_cancel_words_are_dropped(orch: Orchestrator) -> None:
    r = reading(orch, "a", "I want to cancel my order", "NW-10482", "Yes, please cancel it")
    assert [c["command"] for c in r["commands"]] == ["answer"]
    assert r["commands"][0]["value"] is True
    assert r["commands"][0]["evidence"] == "Yes, please cancel it"
    assert r["dropped"] == [{"command": "cancel_goal", "evidence": "cancel it", "goal": "care.order_cancel",
                             "reason": "the message answers the pending question"}]


def test_a_correction_names_the_slot_and_its_new_value(orch: Orchestrator) -> None:
    r = reading(orch, "b", "I need to change my delivery address", "NW-10481", "22 Baker Street, Springfield 01103",
                "I got that wrong, the address is 14 Elm Street, Springfield 01104")
    assert r["commands"] == [{"command": "correct_slot", "slot": "new_address",
                              "value": "14 Elm Street, Springfield 01104",
                              "evidence": "I got that wrong, the address is 14 Elm Street, Springfield 01104"}]


def test_a_side_question_is_a_knowledge_question_and_a_request_a_start(orch: Orchestrator) -> None:
    first = reading(orch, "c", "I want a refund")
    assert first["commands"][0]["command"] == "start_goal" and first["commands"][0]["sop"] == "care.refund"
    side = reading(orch, "c", "how long do refunds usually take?")
    assert [c["command"] for c in side["commands"]] == ["knowledge_question"]


def test_never_mind_is_a_cancel(orch: Orchestrator) -> None:
    r = reading(orch, "d", "I want to return an item", "never mind")
    assert r["commands"] == [{"command": "cancel_goal", "evidence": "never mind", "goal": "care.return"}]
    assert r["dropped"] == []


def test_values_given_up_front_are_read_with_the_words_they_came_from(orch: Orchestrator) -> None:
    r = reading(orch, "e", "I want a refund for order NW-10483 please")
    kinds = [c["command"] for c in r["commands"]]
    assert kinds == ["start_goal", "set_slots"]
    assert r["commands"][1]["values"] == {"order_id": "NW-10483"}
    assert r["commands"][1]["words"] == {"order_id": "NW-10483"}
    lines = reading_lines(r)
    assert lines[0].startswith("start_goal (sop=care.refund")
    assert "words={'order_id': 'NW-10483'}" in lines[1]


def test_dropped_commands_are_shown_with_their_reason() -> None:
    lines = reading_lines({"commands": [{"command": "answer", "evidence": "Yes, please cancel it", "value": True}],
                           "dropped": [{"command": "cancel_goal", "evidence": "cancel it", "goal": "g",
                                        "reason": "the message answers the pending question"}]})
    assert lines == ["answer (value=True) from 'Yes, please cancel it'",
                     "dropped cancel_goal (goal=g) from 'cancel it': the message answers the pending question"]


def test_amounts_are_traced_as_written() -> None:
    assert value_words("a tent under $1,500 please", {"budget": 1500}) == {"budget": "$1,500"}
    assert value_words("it's for four people", {"party": 4}) == {}


def test_language_and_catalogue() -> None:
    assert language_of("สวัสดีครับ") == "th" and language_of("hello") == "en"
    assert segment("ไม่เอาแล้วครับ").split() == ["ไม่", "เอา", "แล้ว", "ครับ"]
    assert {"en", "th"} <= set(languages())
    assert say("goodbye", "th") != say("goodbye", "en")
    assert say("nobody", "xx") == say("nobody", "en")  # a language without a sentence falls back to English


@pytest.mark.parametrize(("text", "starts"), [
    ("Lovely, thanks! where is my refund. You are a star, cheers!", "care.refund"),  # a question of its own, no "?"
    ("Super, thanks! how do I return a lamp.", "care.return"),
    ("Thanks again! Could you cancel my order, please.", "care.order_cancel"),
    ("Thanks, that really helps!", None),  # courtesy that asks for nothing
    ("Thank you so much. Bye!", None),
])
def test_a_request_between_courtesies_is_still_a_request(orch: Orchestrator, text: str, starts: str | None) -> None:
    commands = reading(orch, f"social-{text[:12]}", text)["commands"]
    if starts is None:
        assert [c["command"] for c in commands] == ["small_talk"], commands
    else:
        assert commands[0]["command"] == "start_goal" and commands[0]["sop"] == starts, commands
