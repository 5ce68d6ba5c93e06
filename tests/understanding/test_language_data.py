"""The rule reader's language knowledge is data: questions, requests, inability, impatience and clause
breaks come from the per-language files, so a Thai message is read like an English one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.language import lexicons as LEX
from core.language import text as T


@pytest.mark.parametrize(("text", "question"), [
    ("ร้านเปิดกี่โมง", True),  # what time does the shop open (no question mark)
    ("ส่งของวันเสาร์ได้ไหม", True),  # can you deliver on Saturday
    ("ทำไมยังไม่ได้รับของ", True),  # why haven't I received it
    ("อยากเปลี่ยนที่อยู่", False),  # I want to change the address
    ("where is my parcel", True), ("can't log in", False), ("I wonder if it ships abroad", True),
    ("wont the card still work abroad", True), ("aren't you open on sundays", True),  # a negative, its subject after
    ("doesn't charge anymore", False), ("won't turn on", False),  # a negative without one: a statement
])
def test_questions_in_each_language(text: str, question: bool) -> None:
    assert T.is_question(text) is question


@pytest.mark.parametrize(("text", "asks"), [
    ("อยากจองโต๊ะสำหรับสองคน", True),  # I'd like to book a table for two
    ("ช่วยเช็คยอดเงินให้หน่อย", True),  # please look up how much money I have
    ("Ok, go ahead and reserve the cabin for us.", True), ("Yes, reserve the later one", True),
    ("Just send it to my office", True), ("I booked it last week", False), ("the booking was fine", False),
])
def test_requests_in_each_language(text: str, asks: bool) -> None:
    assert T.is_request(text) is asks


@pytest.mark.parametrize(("text", "asks"), [
    ("I like sunny days", False), ("we love the lake", False),  # a taste, not a request
    ("I'd like a table for two", True), ("we would love a quiet room", True), ("I need a new card", True),
    ("we really want the early slot", True),
])
def test_a_taste_is_not_a_request(text: str, asks: bool) -> None:
    assert T.is_request(text) is asks


@pytest.mark.parametrize(("text", "unable"), [
    ("ลืมรหัสผ่าน", True), ("จำเลขบัญชีไม่ได้", True), ("I can't seem to find the receipt", True),
    ("my account is 1234", False), ("เลขบัญชีคือ 1234", False),
])
def test_not_knowing_the_answer_in_each_language(text: str, unable: bool) -> None:
    assert T.is_unable(text) is unable


def test_a_thai_message_splits_into_its_parts() -> None:
    assert len(T.clauses("อยากจองโต๊ะ แต่ ขอเช็คยอดเงินก่อน", min_tokens=1)) == 2


@pytest.mark.parametrize(("text", "main"), [
    ("Can you look up my parcel to see if it left the depot?", "Can you look up my parcel"),
    ("Before we change the address, I need the tracking number", "I need the tracking number"),
    ("Before we do that let me check the refund.", "let me check the refund."),
    ("Before I do that I'd better check the refund.", "Before I do that I'd better check the refund."),  # no end
    ("Please cancel it because I ordered the wrong size", "Please cancel it"),
    ("ขอเช็คสถานะพัสดุก่อนที่จะเปลี่ยนที่อยู่", "ขอ เช็ค สถานะ พัสดุ"),  # check the parcel before changing the address
])
def test_the_part_saying_why_or_when_is_not_the_request(text: str, main: str) -> None:
    assert T.main_clause(text) == main


def test_a_misspelt_list_name_in_a_language_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "xx.yaml"
    path.write_text("language: xx\nafirm: [ja]\n", encoding="utf-8")
    with pytest.raises(ValueError, match="xx.yaml: unknown list 'afirm'"):
        LEX._load(path)


def test_every_phrase_of_every_language_file_is_a_valid_pattern() -> None:
    for lx in LEX.lexicons():
        for key in LEX.LISTS:
            for phrase in lx.get(key):
                try:
                    re.compile(phrase.replace("{slot}", "x").replace("{c}", "x").replace("{p}", "x"))
                except re.error as exc:  # pragma: no cover - the message names the entry
                    pytest.fail(f"{lx.language}.yaml {key}: {phrase!r} is not a valid pattern ({exc})")


@pytest.mark.parametrize(("text", "chosen"), [
    ("Not moderate. I want a cheap one", "Cheap"), ("anything but expensive", None),
    ("No, the expensive one", "Expensive"), ("rather cheap than moderate", "Cheap"),
    ("ไม่เอาแพง เอาถูก", "ถูก"),  # not the expensive one, the cheap one
])
def test_an_option_the_customer_rules_out_is_not_chosen(text: str, chosen: str | None) -> None:
    from core.understanding.mentions import find_option

    options = ["Cheap", "Moderate", "Expensive"] if text.isascii() else ["ถูก", "ปานกลาง", "แพง"]
    assert find_option(text, options) == chosen


@pytest.mark.parametrize(("text", "start", "end"), [
    ("I need a van from Harbour Road to the Old Mill tomorrow", "Harbour Road", "Old Mill"),
    ("can you pick me up at the train station please", "train station", None),
    ("take me to Central Library", None, "Central Library"),
    ("I want to book a van", None, None),  # "to book" names no place
])
def test_a_stated_route_fills_the_start_and_end_slots(text: str, start: str | None, end: str | None) -> None:
    from core.understanding.mentions import route_value

    assert route_value(text, "pickup_place") == start
    assert route_value(text, "destination") == end
    assert route_value(text, "customer_name") is None  # a slot whose name is neither end of a route


@pytest.mark.parametrize(("text", "region", "asked", "iso"), [
    ("I'm off on the 3rd of December 2030", "IE", False, "2030-12-03"),
    ("leaving 12/01/2031", "IE", False, "2031-01-12"),  # day first outside the US
    ("leaving 12/01/2031", "US", False, "2031-12-01"),
    ("05/13/2031", "IE", True, "2031-05-13"),  # only one order reads it
    ("เดินทางวันที่ 3 ธันวาคม 2030", "TH", False, "2030-12-03"),
    ("for 4 guests", "IE", False, None), ("14 Main Street, Cork T12 AB34", "IE", False, None),
    ("3", "IE", False, None),  # a bare number given unasked is no date
])
def test_dates_in_their_written_forms(text: str, region: str, asked: bool, iso: str | None) -> None:
    from core.understanding.extract import extract
    from core.workspace.slots import SlotType

    assert extract(SlotType("travel_date", "date", region=region), text, asked=asked) == iso


def test_a_birth_date_is_in_the_past() -> None:
    from core.understanding.extract import extract
    from core.workspace.slots import SlotType

    dob = SlotType("date_of_birth", "date")
    assert extract(dob, "9 December 1906", asked=True) == "1906-12-09"
    assert extract(dob, "what's the weather like today?", asked=False) is None


def test_a_correction_gives_its_new_value_without_what_it_rules_out() -> None:
    from core.understanding.mentions import correction_value

    assert correction_value("sorry, I meant Spain, not Portugal") == "Spain"
    assert correction_value("actually make it the Old Mill instead of the Harbour") == "the Old Mill"
    assert correction_value("Portugal") is None  # no correction words


def test_a_date_is_written_as_people_write_it_and_stays_grounded() -> None:
    from core.engine.grounding import allowed_numbers, ungrounded
    from core.workspace.slots import written_date

    assert written_date("2026-12-03") == "3 December 2026"
    assert written_date("2026-12-03", "th") == "3 ธันวาคม 2026"
    assert written_date("ORD-10021") == "ORD-10021"
    assert ungrounded("It arrives on 14 June 2025.", allowed_numbers([{"eta": "2025-06-14"}])) == []
    assert ungrounded("It arrives on 15 June 2025.", allowed_numbers([{"eta": "2025-06-14"}])) == [15.0]


@pytest.mark.parametrize(("text", "answer"), [
    ("That sounds fine. Reserve it, please", True), ("go ahead and order them", True),
    ("Wow. Yes, thank you so much!", True),
    ("Lovely spot. Please reserve that one", None),  # a request of its own: no yes to another question
    ("Hmm. No, that is too much", False), ("Sounds good, that works.", True),
    ("Great, but is there a cheaper one?", None),  # a question is no yes
    ("ใช่ ครับ", True),
])
def test_a_yes_or_no_after_a_reaction(text: str, answer: bool | None) -> None:
    assert T.yes_no(text) is answer


@pytest.mark.parametrize(("text", "declines"), [
    ("ไม่สนใจแล้วค่ะ ขอบคุณค่ะ", True),  # not interested any more, thanks
    ("ไว้ก่อนครับ", True),  # maybe another time
    ("เอาอันแรกครับ", False),  # the first one please
    ("I'll pass, thanks", True), ("nah, none of them", True), ("the second one", False),
])
def test_turning_down_every_item_offered_in_each_language(text: str, declines: bool) -> None:
    from core.understanding.extract import extract
    from core.workspace.slots import SlotType

    offered = [{"name": "Lumo One", "price": 99}, {"name": "Lumo Two", "price": 149}]
    picked = extract(SlotType("pick", "choice"), text, asked=True, candidates=offered)
    assert (picked is False) is declines, picked


def test_ruling_one_out_is_not_turning_every_item_down() -> None:
    from core.understanding.extract import extract
    from core.workspace.slots import SlotType

    offered = [{"name": "Lumo One", "brand": "Lumo"}, {"name": "Vela S", "brand": "Vela"}]
    assert extract(SlotType("pick", "choice"), "ไม่เอา Lumo ค่ะ", asked=True, candidates=offered) is not False


@pytest.mark.parametrize(("opening", "describes"), [
    ("my blender has a problem, can you help?", False),  # something is wrong, not what
    ("ทีวีมีปัญหาค่ะ ช่วยดูให้หน่อยได้ไหมคะ", False),  # the TV has a problem, can you look: with its particles
    ("my blender smells of burning and stops after ten seconds", True),
    ("เครื่องปั่นมีกลิ่นไหม้แล้วดับเองค่ะ", True),  # it smells burnt and switches itself off
])
def test_an_opening_that_only_says_something_is_wrong_describes_nothing_yet(opening: str, describes: bool) -> None:
    from core.sop.graph import Sop
    from core.understanding.answer_shape import describes_more

    sop = Sop(id="desk.repair", title="Kitchen appliance repair", agent="desk", priority=1,
              triggers=["I need a repair"], description="", file="repair.sop", format="text", start="", nodes={})
    assert describes_more(opening, sop) is describes


@pytest.mark.parametrize(("said", "picked"), [
    ("the 1,250 one please", "Kite Two"), ("เอาอันราคา 980 ค่ะ", "Kite One"), ("I'll take the $980 one", "Kite One"),
    ("the 500 one", None),  # no item offered at that price
])
def test_an_offered_item_is_picked_by_its_price(said: str, picked: str | None) -> None:
    from core.understanding.extract import resolve_reference

    offered = [{"name": "Kite One", "price": 980}, {"name": "Kite Two", "price": 1250}]
    found = resolve_reference(said, offered, pronouns=False)
    assert (found or {}).get("name") == picked
