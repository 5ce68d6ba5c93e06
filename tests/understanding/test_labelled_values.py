"""Values the customer names (labels, last digits, introductions), ids shaped like the author's example, a
hint lined up with the slots of a question asking several values, numbers in words, a question's stated
default, and the engine note's decision on a reply. Each case is our own wording."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.language import text as T
from core.sop.parse_json import parse_json_sop
from core.understanding.extract import extract
from core.understanding.values import blank, introduced_name, labelled_values, stated_default
from core.workspace.slots import Vocabulary, declared_type, hints_per_slot, infer_type, shape_pattern, validate

ROOT = Path(__file__).resolve().parents[2]
V = Vocabulary()


def _types() -> dict:
    specs = {"postcode": "code(5)", "mobile": "phone", "pin": "code(4)", "login": "username",
             "booking_id": "code(8)", "email": "email", "member_id": "id(ana_ruiz_2281)", "card_last4": "code(4)",
             "visit_date": "date"}
    types = {name: declared_type(name, spec, "", V) for name, spec in specs.items()}
    types["mobile"].region = types["visit_date"].region = "US"
    return types


@pytest.mark.parametrize("message, want", [
    ("postcode is 30307, mobile (404) 555-0187 and login kwame88",
     {"postcode": "30307", "mobile": "+1 404-555-0187", "login": "kwame88"}),
    ("30307, my pin is 5521 and booking id 44120987", {"pin": "5521", "booking_id": "44120987"}),
    ("Login: kwame88", {"login": "kwame88"}),
    ("Booking #: 44120987", {"booking_id": "44120987"}),
    ("it's the visa that ends with 9032", {"card_last4": "9032"}),
    ("member id: tom_berg_5512 and e-mail is t@berg.io", {"member_id": "tom_berg_5512", "email": "t@berg.io"}),
    ("visit date is March 3, 2027", {"visit_date": "2027-03-03"}),
])
def test_a_label_gives_its_value_to_the_slot_it_names(message: str, want: dict) -> None:
    found = {f.slot: f.value for f in labelled_values(message, _types())}
    assert found == want


@pytest.mark.parametrize("message", [
    "I need to sort out my login first",      # a label word, then no value
    "my budget is between 30k and 40k",       # a range is read whole elsewhere
    "i want to order 2 bags of food",         # "order" is a verb here
])
def test_words_after_a_label_that_are_no_value_give_nothing(message: str) -> None:
    types = {**_types(), "budget": declared_type("budget", "money", "", V),
             "order_id": declared_type("order_id", "id", "", V)}
    assert labelled_values(message, types) == []


def test_a_labelled_number_keeps_its_thousands() -> None:
    types = {"spend_limit": declared_type("spend_limit", "money", "", V)}
    assert [(f.slot, f.value) for f in labelled_values("spend limit is 12,500, cheers", types)] == \
        [("spend_limit", 12500)]


def test_a_correction_is_told_in_each_language_of_the_store() -> None:
    assert T.corrects("oh wait, I meant the blue one")
    assert T.corrects("ขอโทษครับ พิมพ์ผิด ขอเป็นสีดำ")  # "sorry, typed it wrong": said without spaces
    assert not T.corrects("the blue one please")



def test_labelled_words_are_taken_out_for_the_slots_without_a_label() -> None:
    message = "30307, my pin is 5521 and booking id 44120987"
    rest = blank(message, [(f.start, f.end) for f in labelled_values(message, _types())])
    assert len(rest) == len(message)
    assert "5521" not in rest and "44120987" not in rest and "30307" in rest
    assert extract(_types()["mobile"], rest, asked=False) is None  # no phone made of a pin and an id


@pytest.mark.parametrize("message, name", [
    ("hey, this is kwame mensah, my dog is limping", "kwame mensah"),
    ("Priya Nair here, calling about my cat", "Priya Nair"),
    ("hello im Sven Olafsson.", "Sven Olafsson"),
    ("this is really annoying", None),
    ("this is about my order", None),
    ("I am trying to pay", None),
])
def test_a_customer_who_introduces_themselves_gives_their_name(message: str, name: str | None) -> None:
    assert introduced_name(message) == name


@pytest.mark.parametrize("example, good, bad", [
    ("ana_ruiz_2281", ["tom_berg_5512"], ["tberg99", "tom.berg@x.io"]),
    # one example is weak evidence of a shape: a code of about its length with its kinds of characters is
    # kept as the answer to its question ("kwame1988": letters where the example had digits)
    ("B7TK2QW9RZ", ["N4VX8JP2LC", "w3hd7ks5qe", "kwame1988"], ["lpark3", "ABCDEFGHIJ"]),
])
def test_an_id_is_taken_when_shaped_like_the_authors_example(example: str, good: list[str], bad: list[str]) -> None:
    pattern = shape_pattern(example)
    assert pattern is not None
    st = declared_type("member_id", f"id({example})", "", V)
    for value in good:
        assert extract(st, f"it's {value}", asked=True) is not None, value
    for value in bad:
        assert extract(st, f"it's {value}", asked=True) is None, value
    inferred = infer_type("member_id", f"a member id like {example}", V)
    assert inferred.pattern is not None and inferred.pattern.search(good[0])


def test_a_hint_listing_several_values_and_their_examples_is_lined_up_with_the_slots() -> None:
    hint = "the username, the email and the order ID, e.g. jdoe41, jdoe41@mail.com, 5512349870"
    parts = hints_per_slot(hint, 3)
    assert parts == ["the username like jdoe41", "the email like jdoe41@mail.com", "the order ID like 5512349870"]
    names = ["username", "email", "order_id"]
    kinds = [infer_type(name, part, V).kind for name, part in zip(names, parts, strict=True)]
    assert kinds[1:] == ["email", "id"] and kinds[0] != "email"
    assert hints_per_slot("your name and email", 3) is None


@pytest.mark.parametrize("message, value", [
    ("two hundred euros", 200), ("one hundred and twenty", 120), ("send forty bucks", 40),
    ("fifteen hundred dollars", 1500),
])
def test_amounts_written_in_words_are_amounts(message: str, value: int) -> None:
    st = declared_type("amount", "money", "", V)
    assert extract(st, message, asked=True) == value
    assert T.spelled_numbers("one of them") == "one of them"  # a small number alone stays a word


def test_a_question_that_states_its_default_gives_it_and_one_that_does_not_gives_none() -> None:
    st = declared_type("amount", "money", "", V)
    assert stated_default(st, "amount", ["What should we top up? If you don't know, the usual top-up is $30."]) == 30
    assert stated_default(st, "amount", ["How much should the refund be?"]) is None
    bags = infer_type("bags", "how many bags", V)
    assert validate(bags, stated_default(bags, "bags", ["how many bags (2 by default)"]))


NOTE_SOP = {
    "name": "Late order", "description": "d", "version": "1", "startNode": "ask",
    "nodes": {
        "ask": {"type": "action", "description": "Ask for the order number",
                "messageTemplate": "What is your order number?", "nextNodes": ["get"]},
        "get": {"type": "action", "description": "Look it up", "tool": "getOrderStatus",
                "toolParams": {"orderId": "context.orderId"}, "nextNodes": ["late"]},
        "late": {"type": "decision", "condition": "context.minutesLate > 20", "nextNodes": ["offer", "end"]},
        "offer": {"type": "action", "description": "Offer to cancel",
                  "messageTemplate": "It is {context.minutesLate} minutes late. Shall I cancel it?",
                  "nextNodes": ["wants"]},
        "wants": {"type": "decision", "condition": "context.customerWantsCancellation == true",
                  "nextNodes": ["end", "end"]},
        "end": {"type": "end"},
    },
}


def test_the_message_before_a_decision_on_an_unset_key_is_the_question_that_key_answers() -> None:
    sop, problems = parse_json_sop(json.dumps(NOTE_SOP), "late.json", "late")
    assert sop is not None
    assert [p for p in problems if p.severity == "error"] == []  # result fields after a tool are readable
    offer = sop.nodes["offer"]
    assert offer.asks and [p.name for p in offer.fills] == ["customerWantsCancellation"]
    assert offer.expects == "yes or no"
    told = dict(NOTE_SOP, nodes={**NOTE_SOP["nodes"], "offer": {**NOTE_SOP["nodes"]["offer"],
                                                                 "messageTemplate": "It is late."}})
    told["nodes"]["wants"] = {**told["nodes"]["wants"], "condition": "context.customerMood > 3"}
    sop2, problems2 = parse_json_sop(json.dumps(told), "late.json", "late")
    assert sop2 is not None and not sop2.nodes["offer"].asks  # a statement before a non-yes/no key stays one


def test_the_same_messages_read_the_same_under_any_hash_seed() -> None:
    """A reading that depends on set or dict order changes with PYTHONHASHSEED: every reply, slot and tool
    call of two example workspaces' conversations must be the same under three seeds."""
    files = [str(p) for ws in ("vet_clinic", "retail_care") for p in sorted((ROOT / "examples" / ws /
                                                                             "conversations").glob("*.yaml"))]
    runs = []
    for seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-m", "core", "test", "--json", *files], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=600)
        report = json.loads(out.stdout)
        runs.append([(f["file"], [(t["user"], t["reply"], t["failures"]) for t in f["turns"]])
                     for f in report["files"]])
    assert runs[0] == runs[1] == runs[2]


def test_a_name_in_a_list_of_values_or_after_the_word_name_is_the_one_name_slot() -> None:
    from core.understanding.values import listed_name

    assert listed_name("hello, moving out friday. account 55121003, aisha bello, m14 5rq") == "aisha bello"
    assert listed_name("hello, this is about my order") is None  # no values beside it
    assert listed_name("hi, moving out this friday, account 55121003") is None
    types = {"holder_name": declared_type("holder_name", "name", "", V),
             "account_no": declared_type("account_no", "code(8)", "", V)}
    found = {f.slot: f.value for f in labelled_values("account 55120977, name gareth hughes", types)}
    assert found == {"account_no": "55120977", "holder_name": "gareth hughes"}
    types["pet_name"] = declared_type("pet_name", "text", "", V)  # two slots called a name: the word says neither
    assert "holder_name" not in {f.slot for f in labelled_values("name gareth hughes", types)}


def test_a_number_asked_in_a_unit_is_taken_when_said_with_that_unit(tmp_path: Path) -> None:
    from core.engine.build import load_workspace

    root = tmp_path / "ws"
    (root / "sops").mkdir(parents=True)
    (root / "store.yaml").write_text('name: Meters\ncurrency: GBP\nagents:\n  a: {goals: "m.*", tools: []}\n',
                                     encoding="utf-8")
    sop = {"id": "m.read", "triggers": ["meter reading"], "slots": {"reading": "number"}, "startNode": "ask",
           "nodes": {"ask": {"type": "action", "description": "Ask for the reading",
                             "messageTemplate": "What does the meter show, in kWh? Read it left to right.",
                             "resultKey": "reading", "nextNodes": ["end"]}, "end": {"type": "end"}}}
    (root / "sops" / "read.json").write_text(json.dumps(sop), encoding="utf-8")
    st = load_workspace(root).types["m.read"]["reading"]
    assert st.unit == "kwh"
    from core.understanding.extract import labelled_value
    assert labelled_value(st, "reading", "acct 55120934, meter says 14388 kwh") == 14388


def test_a_thai_label_takes_its_value_though_a_word_follows_it_without_a_space() -> None:
    types = {"budget": declared_type("budget", "money", "", V)}
    found = {f.slot: f.value for f in labelled_values("งบประมาณสูงสุด 8,500 ครับ", types)}  # "budget at most 8,500"
    assert found == {"budget": 8500}
    assert labelled_values("ใจสงบ 8,500 ครับ", types) == []  # "งบ" inside another word is no label
