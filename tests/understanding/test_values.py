"""Values inside answers: account names and words that judge a value instead of giving one."""

from __future__ import annotations

import pytest

from core.language import text as T
from core.understanding.extract import extract
from core.understanding.mentions import labelled_text
from core.workspace.slots import Vocabulary, infer_type, validate


@pytest.mark.parametrize("message, value", [
    ("you can use fatima.chen1", "fatima.chen1"),
    ("sara.okafor30, thanks", "sara.okafor30"),
    ("the usename shoould be kenji_nair42", "kenji_nair42"),  # typos in the frame
    ("I checked the portal and it shows priya.das13", "priya.das13"),
    ("john_sharma41 - that's the one", "john_sharma41"),
    ("my username is mlopez", "mlopez"),
    ("mlopez", "mlopez"),
])
def test_an_account_name_is_the_one_word_that_names_it(message: str, value: str) -> None:
    for name, expects in [("username", "the username of the account"), ("login", "the login you use")]:
        st = infer_type(name, expects, Vocabulary())
        assert st.kind == "text" and st.handle and not st.person
        assert extract(st, message, asked=True) == value


def test_an_account_name_is_never_a_sentence() -> None:
    st = infer_type("username", "the username of the account", Vocabulary())
    assert not validate(st, "I don't remember it at all")
    assert extract(st, "I don't remember it at all", asked=True) is None


def test_a_full_name_is_not_an_account_name() -> None:
    st = infer_type("full_name", "your full name", Vocabulary())
    assert st.person and not st.handle
    assert extract(st, "Sure thing, it's Priya Raman", asked=True) == "Priya Raman"


@pytest.mark.parametrize("words", ["wrong", "incorrect", "a typo", "not right", "the old one", "ผิด"])
def test_words_that_judge_a_value_are_not_a_value(words: str) -> None:
    assert T.is_judgement(words)
    assert labelled_text(f"the username I gave was {words}", {"username"}) is None


@pytest.mark.parametrize("words", ["Wrongway22", "wrong street 5", "Oldham"])
def test_values_that_only_start_like_a_judgement_stay_values(words: str) -> None:
    assert not T.is_judgement(words)


@pytest.mark.parametrize("message, name", [
    ("Zofia Nowak, spelled with a Z!", "Zofia Nowak"),
    ("Odile Fournier speaking", "Odile Fournier"),
    ("Tomas Ek is my name and the booking is under my wife's card", "Tomas Ek"),
    ("Sure thing, it's Priya Raman", "Priya Raman"),
    ("May Chen", "May Chen"),  # capitalised, so a name, though "may" is a function word
    ("let me sort out my login before that. It costs more than I thought!", None),
    ("Hi, I need a table", None),
    ("yes", None),
])
def test_a_persons_name_is_a_name_not_a_sentence(message: str, name: str | None) -> None:
    st = infer_type("customer_name", "their customer name", Vocabulary())
    assert st.person
    assert extract(st, message, asked=True) == name


@pytest.mark.parametrize("message, amount", [
    ("It's a Vango Nevis 200", None),  # the number is part of the tent's name
    ("200", 200),
    ("It's 200", 200),
    ("I have USD 200", 200),
    ("my budget is 200 dollars", 200),
])
def test_a_number_inside_a_name_is_not_a_budget(message: str, amount: int | None) -> None:
    st = infer_type("budget", "a budget, e.g. 1500", Vocabulary())
    assert st.kind == "money"
    assert extract(st, message, asked=True) == amount


def test_a_two_digit_year_is_read_in_the_century_nearest_today() -> None:
    from datetime import date

    from core.understanding.extract import extract
    from core.workspace.slots import SlotType

    this_year = date.today().year
    start = SlotType("first_payment_date", "date")  # a date looking ahead still keeps the year it is told
    said = f"14/03/{(this_year - 3) % 100:02d}"
    assert extract(start, said, asked=True) == f"{this_year - 3}-03-14"
    said = f"14/03/{(this_year + 2) % 100:02d}"
    assert extract(start, said, asked=True) == f"{this_year + 2}-03-14"
    born = SlotType("date_of_birth", "date")
    assert extract(born, "02/11/1987", asked=True) == "1987-11-02"  # four digits: as written


@pytest.mark.parametrize(("said", "asked", "time"), [
    ("can we make it 6:40?", False, "06:40"), ("8.15pm works", False, "20:15"), ("around 9 pm", False, "21:00"),
    ("eleven o'clock", False, "11:00"), ("quarter past four in the afternoon", False, "16:15"),
    ("half past 9", False, "09:30"), ("twenty to seven tonight", False, "18:40"), ("midday", False, "12:00"),
    ("I am free at 12:00", False, "12:00"),  # "I am" marks no morning
    ("at 5", True, "05:00"), ("at 5", False, None),  # a bare hour only answers the question that asks for one
    ("the 5th", True, None), ("it was 7.45 euros", False, None),
])
def test_clock_times_are_read_in_the_ways_people_say_them(said: str, asked: bool, time: str | None) -> None:
    from core.understanding.extract import extract
    from core.workspace.slots import SlotType

    assert extract(SlotType("pickup_time", "time"), said, asked=asked) == time


def test_a_slot_asking_for_a_time_is_read_as_a_clock_time() -> None:
    from core.workspace.slots import Vocabulary, declared_type, infer_type, validate

    assert infer_type("table_at", "the time of the booking, e.g. 7:30 pm", Vocabulary()).kind == "time"
    assert infer_type("slot", "what time suits you", Vocabulary()).kind == "time"
    st = declared_type("slot", "time", "", Vocabulary())
    assert st.kind == "time" and validate(st, "19:30") and not validate(st, "7:30 pm")
