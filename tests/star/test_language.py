"""General language the engine reads in real conversations (no store, task or SOP words in any of it)."""

from __future__ import annotations

from datetime import date

import pytest

from core.language import text as T
from core.understanding.extract import extract, labelled_value
from core.understanding.mentions import cut_at_labels, find_option, labelled_text, person_name
from core.workspace.slots import Vocabulary, infer_type, listed_options

CITIES = ["Los Angeles", "San Francisco", "Salt Lake City", "Pittsburgh"]
HOURS = [f"{h} {m}" for m in ("am", "pm") for h in [12, *range(1, 12)]]


@pytest.mark.parametrize(("text", "expected"), [
    ("No thanks, goodbye!", True), ("Have a good one", True), ("that should be all, thanks!", True),
    ("I'm good", True), ("It will rain", False), ("Will that be all for today?", False),
    ("That will do it for dinner, go ahead and book it.", False)])
def test_farewells(text: str, expected: bool) -> None:
    assert T.is_farewell(text) is expected


@pytest.mark.parametrize(("text", "expected"), [
    ("I forgot.", True), ("I don't have it on me right now", True), ("Hmm, I honestly can't recall it", True),
    ("No, I've been drinking and don't remember.", True), ("It's 9931939443153", False)])
def test_cannot_answer(text: str, expected: bool) -> None:
    assert T.is_unable(text) is expected


def test_a_story_about_cancelling_is_no_cancel() -> None:
    assert T.is_cancel("never mind") and T.is_cancel("please cancel it")
    assert not T.is_cancel("after I tried to cancel it, the parcel left the depot anyway")


def test_thanks_with_a_request_is_a_request() -> None:
    assert T.is_thanks("Brilliant, that saves me a trip to the shop, thank you!")
    assert not T.is_thanks("Thanks. I'd also like to rent a canoe")
    assert T.REQUEST.search("I'd also like to rent a canoe") and not T.REQUEST.search("Cheers, much appreciated")


def test_numbers_in_words_and_relative_days() -> None:
    assert T.word_number("a group of thirty four guests") == 34 and T.word_number("just two") == 2
    friday = date(2020, 6, 5)
    assert T.name_days("what about tomorrow?", friday) == "what about tomorrow (Saturday)?"
    assert T.name_days("tomorrow, Sunday", friday) == "tomorrow, Sunday"  # the customer named the day
    assert T.normalise_clock("at 7:00 P.M. or 8pm") == "at 7 pm or 8 pm"


def test_listed_options_and_finding_them() -> None:
    assert listed_options("the book title, one of The Hobbit, Dune or Emma") == ["The Hobbit", "Dune", "Emma"]
    assert listed_options("one of the recommended items, or no") == []
    assert find_option("salt lakes forecast tomorrow", CITIES) == "Salt Lake City"  # leading words
    assert find_option("flying to LA", CITIES) == "Los Angeles"  # initials in capitals
    assert find_option("Maybe Pittsburgh or LA", CITIES) == "Pittsburgh"  # the first one named
    assert find_option("7:00 PM if possible", HOURS) == "7 pm"
    assert find_option("pittsburg", CITIES) is None and find_option("pittsburg", CITIES, loose=True) == "Pittsburgh"


def test_an_option_slot_is_typed_from_its_description() -> None:
    st = infer_type("city", "your city, one of Los Angeles, San Francisco or Pittsburgh", Vocabulary())
    assert st.kind == "option" and extract(st, "in san francisco please", asked=False) == "San Francisco"


def test_numbers_labelled_by_their_unit_or_name() -> None:
    size = infer_type("party_size", "the party size, a number from 2 to 50 (how many people)", Vocabulary())
    assert (size.low, size.high, size.unit) == (2.0, 50.0, "person")
    assert labelled_value(size, "party_size", "a party of thirty four guests") == 34  # by its name, in words
    assert labelled_value(size, "party_size", "we will be twenty two people") == 22  # by its unit, in words
    assert labelled_value(size, "party_size", "for 60 people") is None  # out of range
    pin = infer_type("pin", "your pin", Vocabulary())
    assert labelled_value(pin, "pin", "Actually, my PIN could be either 9431 or 0314.") == "9431"
    assert labelled_value(pin, "pin", "I paid $300") is None


def test_free_text_answers_named_by_their_question() -> None:
    said = "My date of birth is 11/07/1989; my mother's maiden name is Okafor; and my childhood pet was Pepper."
    assert labelled_text(said, {"birth", "date"}) == "11/07/1989"
    assert labelled_text(said, {"maiden", "mother"}) == "Okafor"
    assert labelled_text(said, {"childhood", "pet"}) == "Pepper"
    assert labelled_text("DOB 20/02/1980", {"dob"}) == "20/02/1980"
    assert cut_at_labels("Cooper and my pet's name is Buddy.", {"pet"}) == "Cooper"
    assert cut_at_labels("Her maiden name is Sanchez", {"maiden"}) == ""


def test_a_customers_own_name() -> None:
    assert person_name("Certainly, it's Nadia Okafor", asked=True) == "Nadia Okafor"
    assert person_name("Lena Brandt, card 4471902.", asked=True) == "Lena Brandt"
    assert person_name("Hello, I'm Omar Haddad. I'd like my statement.", asked=False) == "Omar Haddad"
    assert person_name("I'm good", asked=False) is None
    assert infer_type("full_name", "your full name", Vocabulary()).person
    assert infer_type("symptom", "a short description of the problem", Vocabulary()).describes
