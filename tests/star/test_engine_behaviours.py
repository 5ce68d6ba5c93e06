"""What real conversations need from the engine, on a workspace imported from the fixture chart.

Every behaviour here is generic: the SOP, its questions and its answers come from the imported
chart; nothing in the engine knows about libraries.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.engine.build import Workspace, build_orchestrator
from core.engine.orchestrator import Orchestrator
from core.importers.star_api import normalise
from core.tools.gateway import ToolScript


@pytest.fixture()
def orch(library_ws: Workspace, library_root: Path, tmp_path: Path) -> Orchestrator:
    return build_orchestrator(library_root, loaded=library_ws, state_url=f"sqlite:///{tmp_path}/s.sqlite")


def say(orch: Orchestrator, *texts: str, session: str = "s") -> dict[str, Any]:
    for text in texts:
        orch.handle_message(session, text)
    return orch.last_trace(session) or {}


def goal(orch: Orchestrator, session: str = "s") -> Any:
    state = orch.load_state(session)
    return state.active_goal if state else None


def test_an_answer_that_also_answers_the_next_questions(orch: Orchestrator) -> None:
    trace = say(orch, "I want to renew a library book", "Ada Lovelace", "44172290, and it's Dune")
    assert trace["actions"] == ["query_check", "library_ask_confirm"]
    assert trace["tool_calls"][0]["args"]["Title"] == "Dune"


def test_a_customer_who_cannot_answer_takes_the_charts_other_way(orch: Orchestrator) -> None:
    trace = say(orch, "I want to renew a library book", "Grace Hopper", "Sorry, I forgot my card number.")
    assert trace["actions"] == ["library_ask_birthday"]
    assert goal(orch).unavailable == ["library_card_number"]


def test_saying_in_advance_what_one_cannot_give(orch: Orchestrator) -> None:
    trace = say(orch, "My name is Grace Hopper and I don't remember my library card number. Can I renew Emma?")
    assert trace["actions"] == ["library_ask_birthday"]  # the card question is never asked
    assert goal(orch).slots["book_title"] == "Emma"


def test_a_no_that_loops_back_asks_that_question_again(orch: Orchestrator) -> None:
    say(orch, "Renew Dune for me please, I'm Ada Lovelace, library card 44172290")
    trace = say(orch, "no")
    assert trace["actions"] == ["library_ask_title"]
    assert "book_title" not in goal(orch).slots


def test_a_follow_up_changing_a_value_runs_the_finished_request_again(orch: Orchestrator) -> None:
    say(orch, "Renew Dune for me please, I'm Ada Lovelace, library card 44172290", "yes")
    assert goal(orch) is None  # renewed; the flow offered more help and ended
    trace = say(orch, "And what about The Hobbit?")
    assert trace["actions"][0] == "query_check"
    assert trace["tool_calls"][0]["args"]["Title"] == "The Hobbit"
    assert trace["tool_calls"][0]["args"]["FullName"] == "Ada Lovelace"  # what was said before is kept


def test_closing_small_talk(orch: Orchestrator) -> None:
    assert say(orch, "hullo")["act"] == "greeting"
    say(orch, "I want to renew a library book")
    trace = say(orch, "thanks, bye!")  # leaving with a question open closes the request
    assert trace["act"] == "goodbye" and goal(orch) is None


def test_thanks_right_after_a_request_ended_says_goodbye(orch: Orchestrator) -> None:
    result = normalise({"Title": "Emma", "Message": "Unavailable"})
    unavailable = ToolScript({"library_renew.query": {"result": result}})
    orch.handle_message("s", "Renew Emma please, I'm Grace Hopper, library card 123", script=unavailable)
    assert orch.last_trace("s")["actions"] == ["query_check", "library_inform_not_renewed"]
    assert say(orch, "ok, thank you")["act"] == "goodbye"
    assert say(orch, "thank you", session="fresh")["act"] == "thanks"  # nothing was done: offer help instead


def test_a_request_under_the_threshold_still_starts_when_nothing_else_fits(orch: Orchestrator) -> None:
    trace = say(orch, "my book is due soon, can I keep it longer?")
    assert trace["perception"]["intents"][0][1] < 0.5
    assert trace["actions"] == ["ask_name"]
    assert say(orch, "what a lovely day", session="other")["act"] == "capabilities"
