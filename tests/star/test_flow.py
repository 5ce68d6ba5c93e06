"""Reading a STAR chart: its implicit branches, asks and queries, from the chart's own words and shape."""

from __future__ import annotations

from core.importers.star_flow import read_flow
from core.importers.star_format import load_task
from tests.star.support import TASK


def flow():
    return read_flow(load_task(TASK))


def test_the_greeting_is_left_to_the_engine_and_the_flow_starts_after_it() -> None:
    f = flow()
    assert f.greeting == "hello" and f.start == "ask_name"


def test_asks_collect_the_api_inputs_their_words_name() -> None:
    f = flow()
    collected = {a.id: (a.field.name if a.field else None, a.slot) for a in f.asks.values()}
    assert collected["ask_name"] == ("FullName", "full_name")
    assert collected["library_ask_card"] == ("LibraryCardNumber", "library_card_number")
    assert collected["library_ask_birthday"] == ("DateOfBirth", "date_of_birth")
    assert collected["library_ask_title"] == ("Title", "book_title")
    assert collected["library_ask_confirm"] == (None, "confirm") and f.asks["library_ask_confirm"].yes_no


def test_result_outcomes_pair_up_and_follow_the_queries_in_flow_order() -> None:
    f = flow()
    assert {o.id: o.kind for o in f.results["query_check"]} == {"available": "positive", "unavailable": "negative"}
    assert {o.id: o.kind for o in f.results["query_renew"]} == {"query_success": "positive",
                                                                 "query_failure": "negative"}
    assert f.queries["query_check"].constants == {"RequestType": "Check"}
    assert f.queries["query_renew"].constants == {"RequestType": "Renew"}


def test_yes_no_answers_follow_the_question_and_a_missing_answer_follows_the_ask_it_names() -> None:
    f = flow()
    assert {o.id for o in f.answers["library_ask_confirm"]} == {"yes", "no"}
    assert set(f.unable) == {"library_ask_card"}  # "Can't remember the card number"
    assert f.unable["library_ask_card"].target == "library_ask_birthday"


def test_closing_messages_and_free_nodes() -> None:
    f = flow()
    assert f.offers == {"anything_else"}  # the chart offers more help after a renewal
    assert "goodbye_1" not in f.messages and "out_of_scope" not in f.messages
    assert f.nothing_found == "library_inform_nothing_found"
    assert f.next_of("library_inform_renewed") == "anything_else"
