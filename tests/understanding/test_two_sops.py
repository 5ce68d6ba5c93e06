"""SOPs imported from flowcharts of our own (tests/understanding/cabins, STAR layout): a search that
loops ("another cabin?"), a booking whose two questions list the same days, a trail report and a canoe
booking (which lists the report's weekdays too). What a customer says for another SOP is read, kept and
used; the loop asks its question again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from core import build_orchestrator
from core.engine.orchestrator import Orchestrator
from core.importers import import_star_task, write_import
from tests.conftest import trusted

CABINS = Path(__file__).parent / "cabins"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("cabins")
    for task in ("cabin_search", "cabin_book", "trail_report", "canoe_book"):
        write_import(import_star_task(CABINS / "tasks" / task, ws), ws)
    return ws


@pytest.fixture()
def orch(root: Path, tmp_path: Path) -> Orchestrator:
    return build_orchestrator(root, state_url=f"sqlite:///{tmp_path}/s.sqlite")


def say(orch: Orchestrator, *texts: str) -> dict[str, Any]:
    for text in texts:
        orch.handle_message("s", text)
    return orch.last_trace("s") or {}


def active(orch: Orchestrator) -> Any:
    state = orch.load_state("s")
    return state.active_goal if state else None


def test_a_loop_back_asks_its_question_again(orch: Orchestrator) -> None:
    trace = say(orch, "I'm looking for a cabin", "by the lake please", "yes")
    assert trace["actions"] == ["cabin_ask_area"]
    assert active(orch).pending == "cabin_ask_area"
    trace = say(orch, "the forest")
    assert trace["actions"][-1] == "cabin_ask_search_more"  # one result, then the question again (no loop)


def test_two_questions_with_the_same_options_take_their_own_mention(orch: Orchestrator) -> None:
    say(orch, "I'd like to book the Cedar Rest cabin, arriving the 5th and leaving the 11th")
    goal = active(orch)
    assert goal is None or goal.type.endswith("cabin_book")
    state = orch.load_state("s")
    booked = state.latest_goal(next(g.type for g in state.goals.values()))
    assert (booked.slots["arrival_day"], booked.slots["departure_day"]) == ("5th", "11th")


def test_days_said_while_searching_are_kept_for_the_booking(orch: Orchestrator) -> None:
    trace = say(orch, "I'm looking for a cabin", "by the lake please",
                "no thanks. We arrive the 5th and leave the 11th")
    read = trace["reading"]["commands"]
    kept = next(c for c in read if c["command"] == "set_slots")
    assert kept["sop"].endswith("cabin_book")  # kept for the SOP that asks for them
    assert {k: kept[k] for k in ("evidence", "values", "words")} == {
        "evidence": "no thanks. We arrive the 5th and leave the 11th",
        "values": {"arrival_day": "5th", "departure_day": "11th"},
        "words": {"arrival_day": "5th", "departure_day": "11th"}}
    trace = say(orch, "Cedar Rest")
    assert trace["actions"][-2:] == ["query", "cabin_booked"] or "cabin_booked" in trace["actions"]
    booked = orch.load_state("s").latest_goal(next(g.type for g in orch.load_state("s").goals.values()
                                                   if g.type.endswith("cabin_book")))
    assert (booked.slots["arrival_day"], booked.slots["departure_day"]) == ("5th", "11th")
    assert orch.load_state("s").told == {}  # used, not kept twice


def test_a_request_after_a_yes_starts_the_other_sop(orch: Orchestrator) -> None:
    say(orch, "I'm looking for a cabin", "by the lake please")
    trace = say(orch, "sure, i wuold like to book this cabin")
    assert [c["command"] for c in trace["reading"]["commands"]][0] == "start_goal"
    assert active(orch).type.endswith("cabin_book")


def test_values_only_the_other_sop_asks_for_start_it(orch: Orchestrator) -> None:
    say(orch, "I'm looking for a cabin", "by the lake please", "no", "hmm")
    trace = say(orch, "Cedar Rest, 12th to the 14th")
    assert active(orch) is None or active(orch).type.endswith("cabin_book")
    assert any(c["command"] == "start_goal" for c in trace["reading"]["commands"])


def test_an_answer_to_one_of_two_day_questions_takes_its_own_mention(orch: Orchestrator) -> None:
    say(orch, "I'd like to book the Cedar Rest cabin", "the 3rd")
    trace = say(orch, "hmm, make that arriving on the 6th and leaving on the 13th")
    goal = orch.load_state("s").latest_goal(next(g.type for g in orch.load_state("s").goals.values()))
    assert goal.slots["departure_day"] == "13th"
    assert goal.slots["arrival_day"] == "6th"  # the earlier answer corrected by the same message
    assert [c["command"] for c in trace["reading"]["commands"]][:2] == ["answer", "correct_slot"]


def test_an_imported_chart_asks_for_what_its_questions_say(tmp_path: Path) -> None:
    """"Could I get your name for the register?" collects the customer's name, not the host's listed first; "Where are
    you travelling from?" a location; "When do you arrive?" a time (tests/understanding/cabins)."""
    result = import_star_task(CABINS / "tasks" / "cabin_checkin", tmp_path)
    write_import(result, tmp_path)
    sop = json.loads(next((tmp_path / "sops").glob("*.json")).read_text(encoding="utf-8"))
    collects = {k: n.get("resultKey", "").rstrip("?") for k, n in sop["nodes"].items() if "ask" in k}
    assert collects == {"ask_name": "customer_name", "cabin_ask_origin": "home_location",
                        "cabin_ask_arrival": "arrival_time"}


def calls(trace: dict[str, Any], tool: str) -> list[dict[str, Any]]:
    return [c["args"] for c in trace["tool_calls"] if c["tool"] == tool]


def test_a_question_giving_values_only_another_sop_asks_for_starts_it(orch: Orchestrator) -> None:
    """Mid-flow, with no knowledge base to answer it, "what will X be like on Friday?" asks for the SOP
    whose questions list X and Friday; the search then asks its question again, once."""
    say(orch, "I'm looking for a cabin", "by the lake please")
    trace = say(orch, "what will the Falls Path be like on Friday?")
    assert calls(trace, "trail_report.query") == [{"Trail": "Falls Path", "Day": "Friday"}]
    goal = active(orch)
    assert goal.type.endswith("cabin_search") and goal.pending == "cabin_ask_search_more"
    reply = orch.load_state("s").history[-1].text
    assert reply.count("back to where we were") == 1 and "something more" not in reply
    assert reply.rstrip().endswith("Would you like to search for another cabin?")


def test_a_follow_up_question_runs_the_finished_sop_again(orch: Orchestrator) -> None:
    say(orch, "I'd like to book the Cedar Rest cabin", "what will the Falls Path be like on Friday?")
    trace = say(orch, "and on Saturday?")
    assert calls(trace, "trail_report.query") == [{"Trail": "Falls Path", "Day": "Saturday"}]
    assert active(orch).pending == "cabin_ask_arrival"  # the booking waits where it was


def test_a_question_the_knowledge_base_answers_stays_a_side_question(root: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(root, ws, ignore=shutil.ignore_patterns(".state", "*.sqlite"))
    (ws / "kb").mkdir(exist_ok=True)
    (ws / "kb" / "trails.md").write_text("# Dogs on the trails\n\nDogs are welcome on the Falls Path and the "
                                         "North Loop if they stay on a leash.\n", encoding="utf-8")
    orch = build_orchestrator(trusted(ws), state_url=f"sqlite:///{tmp_path}/s.sqlite")
    say(orch, "I'm looking for a cabin", "by the lake please")
    trace = say(orch, "are dogs allowed on the Falls Path?")
    assert not calls(trace, "trail_report.query")
    assert [c["command"] for c in trace["reading"]["commands"]][-1] == "knowledge_question"
    assert "leash" in orch.load_state("s").history[-1].text
    assert len(calls(trace, "knowledge_base.search")) == 1  # weighed and answered with one search
    assert active(orch).pending == "cabin_ask_search_more"


@pytest.mark.parametrize("message", ["Lovely spot. Please book the one you found for us",
                                     "Lovely spot. Please book this one for us", "Lovely spot. Please book it for us"])
def test_a_pointer_back_while_searching_cabins_books_the_found_cabin_not_a_canoe(orch: Orchestrator,
                                                                                message: str) -> None:
    """"book" names two SOPs here; the one that shares a title word with the search is meant (whatever the
    intent scores), and "the one you found", "this one", "it" is the cabin the search just found."""
    say(orch, "I'm looking for a cabin", "by the lake please")
    trace = say(orch, message)
    assert [c["command"] for c in trace["reading"]["commands"]][0] == "start_goal"
    goal = active(orch)
    assert goal.type.endswith("cabin_book")
    # "it": the cabin the search just found, so the booking asks for the days, not the cabin
    found = next(g for g in orch.load_state("s").goals.values() if g.type.endswith("cabin_search")).slots["query"]
    assert goal.slots["cabin_name"] == found["Name"] and goal.pending == "cabin_ask_arrival"


def test_a_new_request_without_a_pointer_does_not_take_the_result(orch: Orchestrator) -> None:
    say(orch, "I'm looking for a cabin", "by the lake please")
    say(orch, "I also want to book a cabin")
    assert active(orch).pending == "cabin_ask_cabin"


def test_a_value_two_sops_list_goes_to_the_one_given_more_values(orch: Orchestrator) -> None:
    say(orch, "I'm looking for a cabin", "by the lake please")
    trace = say(orch, "how is the Summit Trail on Sunday?")
    assert calls(trace, "trail_report.query") == [{"Trail": "Summit Trail", "Day": "Sunday"}]
    assert not calls(trace, "canoe_book.query")


def test_each_condition_in_the_trace_shows_the_value_it_was_judged_on(orch: Orchestrator) -> None:
    trace = say(orch, "I'd like to book the Cedar Rest cabin, arriving the 5th and leaving the 11th")
    branch = [d for d in trace["decisions"] if " -> " in d]
    assert branch and all("(saw query.success = " in d for d in branch if "query.success" in d)
    assert any(d.endswith("(saw query.success = true)") or d.endswith("(saw query.success = false)") for d in branch)


@pytest.mark.parametrize(("message", "wanted"), [
    ("Please check the trail conditions before we book a cabin", "trail_report"),
    ("Could you look up the Falls Path because I want to rent a canoe", "trail_report"),
    ("Can you check how the Summit Trail looks, so we can decide whether to book a canoe?", "trail_report"),
])
def test_a_subject_named_only_as_the_purpose_does_not_decide_the_request(orch: Orchestrator, message: str,
                                                                       wanted: str) -> None:
    """"... before we book a cabin": the cabin is why or when the customer asks, the report is what."""
    trace = say(orch, message)
    starts = [c["sop"] for c in trace["reading"]["commands"] if c["command"] == "start_goal"]
    assert starts and starts[0].endswith(wanted)


def test_a_request_after_a_cancellation_starts_at_once(orch: Orchestrator) -> None:
    say(orch, "I'd like to book the Cedar Rest cabin")
    trace = say(orch, "Just forget it then. How is the Falls Path looking on Friday?")
    read = [c["command"] for c in trace["reading"]["commands"]]
    assert read[:2] == ["cancel_goal", "start_goal"]
    assert trace["reading"]["commands"][1]["sop"].endswith("trail_report")
    assert "Friday" in trace["reply"] and "back to where we were" not in trace["reply"]


@pytest.mark.parametrize(("first", "message", "running"), [
    ("I'd like to book a canoe", "Book the canoe for the Summit Trail", "canoe_book"),
    ("I'd like to book a canoe", "Let's book the canoe, we'll paddle by the North Loop", "canoe_book"),
    ("I'd like to book a cabin", "please book the cabin in the forest", "cabin_book"),
])
def test_a_request_naming_the_running_sop_stays_with_it_though_another_lists_a_value(
        orch: Orchestrator, first: str, message: str, running: str) -> None:
    """"Book the canoe for the Summit Trail" while booking a canoe: the trail is named by the report's list
    only, the canoe booking by its own title word, so no other SOP starts."""
    say(orch, first)
    assert active(orch).type.endswith(running)
    trace = say(orch, message)
    assert not any(c["command"] == "start_goal" for c in trace["reading"]["commands"])
    assert active(orch).type.endswith(running)


def test_a_new_value_for_a_waiting_goal_is_a_correction(orch: Orchestrator) -> None:
    """Back to a waiting booking with another cabin: the cabin is corrected (the steps that used it run
    again), not only stored."""
    trace = say(orch, "I'd like to book the Cedar Rest cabin", "how is the Falls Path looking?",
                "Actually, let's book Loon Hollow instead")
    read = trace["reading"]["commands"]
    assert read[0]["command"] == "start_goal" and read[0]["sop"].endswith("cabin_book")
    assert {"command": "correct_slot", "evidence": "Actually, let's book Loon Hollow instead",
            "slot": "cabin_name", "value": "Loon Hollow"} in read
    assert active(orch).slots["cabin_name"] == "Loon Hollow" and active(orch).pending == "cabin_ask_arrival"


def test_a_message_that_reads_plainly_as_the_running_sop_keeps_it_despite_a_listed_value(orch: Orchestrator) -> None:
    """"Look for another cabin ... for the 8th" while searching: the day is a value only the booking lists,
    but the message scores clearly highest for the search, so the search goes on (the day is kept)."""
    trace = say(orch, "I'm looking for a cabin", "by the lake please",
                "Could you look for another cabin, on the ridge, for the 8th?")
    assert not any(c["command"] == "start_goal" for c in trace["reading"]["commands"])
    assert active(orch).type.endswith("cabin_search") and active(orch).slots["area"] == "Ridge"


def test_an_answer_given_beside_a_request_is_kept_for_when_the_goal_returns(orch: Orchestrator) -> None:
    say(orch, "I'd like to book the Cedar Rest cabin")
    trace = say(orch, "the 3rd. Also, how will the Summit Trail be on Friday?")
    assert "On Friday the Summit Trail will be" in trace["reply"]
    assert trace["reply"].endswith("And on which day do you leave?")  # not the arrival again
    assert [c["command"] for c in trace["reading"]["commands"]] == ["answer", "start_goal", "set_slots"]


def test_a_yes_that_agrees_to_a_request_does_not_answer_the_pending_question(orch: Orchestrator) -> None:
    say(orch, "I'm looking for a cabin", "by the lake please")  # "Would you like to search for another cabin?"
    trace = say(orch, "sure, please book this one")
    assert "answer" not in [c["command"] for c in trace["reading"]["commands"]]
    search = next(g for g in orch.load_state("s").goals.values() if g.type.endswith("cabin_search"))
    assert not any(isinstance(v, bool) for v in search.slots.values())
