"""A slot's kind is weighed from all its evidence (ARCHITECTURE.md §3b): a condition's comparison and the
question's form outrank the words of its name; shapes from an example are generalised, never literal."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from core.engine.build import load_workspace
from core.retrieval.embedding import CachedEmbedder
from core.workspace import kinds as K
from core.workspace.slots import Vocabulary, infer_type, validate
from tests.understanding.desks import desk, text_sop

V = Vocabulary()


def test_a_name_that_mentions_an_email_is_a_yes_or_no_when_a_condition_compares_it_with_true() -> None:
    st = infer_type("remembers_login_email", "whether they remember the email on the account", V, compared=[True])
    assert st.kind == "boolean"
    assert "condition" in st.origin


def test_a_question_marked_yes_no_makes_a_yes_or_no_whatever_the_name_says() -> None:
    st = infer_type("has_phone_number", "", V, questions=["Do you still use the phone number on file? (yes/no)"])
    assert st.kind == "boolean"


def test_a_polite_request_is_not_a_yes_or_no_question() -> None:
    assert K.asks_yes_no("Do you still have the receipt?")
    assert not K.asks_yes_no("Could you tell me the ticket number?")
    assert not K.asks_yes_no("Which colour would you like?")
    assert not K.asks_yes_no("Would you like the red one or the blue one?")


def test_options_listed_after_a_colon_are_the_slot_options_and_parts_of_one_value_are_not() -> None:
    st = infer_type("plan_tier", "a plan tier: starter, plus, premium or family", V)
    assert st.kind == "option" and st.vocab == ["starter", "plus", "premium", "family"]
    address = infer_type("postal_address", "the postal address: number, street and town", V)
    assert address.kind == "text"


def test_quoted_choices_in_the_question_are_options() -> None:
    st = infer_type("why_closing", "", V, questions=["Why are you closing it: 'moving abroad' or 'too expensive'?"])
    assert st.kind == "option" and st.vocab == ["moving abroad", "too expensive"]


def test_a_word_about_a_price_in_the_hint_does_not_make_a_way_to_pay_money() -> None:
    st = infer_type("pay_with", "how to pay the extra cost: the card on file, a voucher or bank transfer", V)
    assert st.kind == "option"


def test_a_hint_offering_two_kinds_takes_text() -> None:
    st = infer_type("proof", "the last four digits of the card or the answer to your secret question", V)
    assert st.kind == "text"
    assert validate(st, "Whiskers")


def test_an_alphanumeric_example_gives_a_code_of_its_length_not_its_letter_positions() -> None:
    st = infer_type("booking_ref", "a booking reference of six letters and digits, like 7KD2A9", V)
    assert st.kind == "id" and st.pattern is not None
    assert st.pattern.search("my booking is QZ4RWP thanks")
    assert st.pattern.search("it's 93ABC1")
    assert not st.pattern.search("QZ4RWPX")  # seven characters


def test_an_example_of_names_joined_by_underscores_takes_other_names_of_other_lengths() -> None:
    st = infer_type("member_ref", "a member reference like tom_li_2041", V)
    assert st.pattern is not None
    assert st.pattern.search("it is alexandra_konstantinou_77")
    assert not st.pattern.search("it is tomli2041")


def test_a_format_mark_before_the_digits_is_kept() -> None:
    st = infer_type("ticket", "a ticket number like TK-40021", V)
    assert st.pattern is not None
    assert st.pattern.search("ticket tk-55310 please")
    assert not st.pattern.search("ticket 55310")


def test_a_numeric_example_of_a_budget_is_money_and_of_a_code_digits() -> None:
    assert infer_type("spend_limit", "the most you want to spend, e.g. 250", V).kind == "money"
    assert infer_type("door_code", "the code on the door, e.g. 4471", V).kind == "digits"


def test_a_username_example_is_one_word_not_a_prefix() -> None:
    st = infer_type("login", "your login name, e.g. kpatel77", V)
    assert st.kind == "text" and st.handle
    assert validate(st, "marie.dubois")
    assert not validate(st, "my login is marie")


def test_a_condition_comparing_with_a_number_or_a_date_gives_that_kind() -> None:
    assert infer_type("nights", "", V, compared=[3]).kind == "number"
    assert infer_type("refund_total", "", V, compared=[100]).kind == "money"
    assert infer_type("moved_on", "", V, compared=[date(2026, 1, 1)]).kind == "date"


def test_conditions_in_a_json_sop_decide_the_kind_of_what_its_question_fills(tmp_path: Path,
                                                                            embedder: CachedEmbedder) -> None:
    root = tmp_path / "ws"
    (root / "sops").mkdir(parents=True)
    (root / "store.yaml").write_text("name: Desk\ncurrency: EUR\nagents:\n  desk: {tools: []}\n", encoding="utf-8")
    (root / "sops" / "renew.json").write_text("""{
  "id": "desk.renew", "agent": "desk", "name": "Renew a card", "triggers": ["renew my card"],
  "startNode": "ask", "nodes": {
    "ask": {"id": "ask", "type": "action", "description": "Ask whether the customer kept the old card number",
            "messageTemplate": "Do you still have your old card number?", "nextNodes": ["kept"]},
    "kept": {"id": "kept", "type": "decision", "condition": "context.old_card_number == true",
             "nextNodes": ["yes", "no"]},
    "yes": {"id": "yes", "type": "action", "messageTemplate": "Good.", "nextNodes": ["end"]},
    "no": {"id": "no", "type": "action", "messageTemplate": "No matter.", "nextNodes": ["end"]},
    "end": {"id": "end", "type": "end"}}}""", encoding="utf-8")
    ws = load_workspace(root, embedder)
    assert ws.types["desk.renew"]["old_card_number"].kind == "boolean"


def test_a_workspace_named_by_a_relative_path_from_another_folder_loads_its_files(
        tmp_path: Path, embedder: CachedEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "shop"
    (root / "sops").mkdir(parents=True)
    (root / "store.yaml").write_text("name: Shop\ncurrency: EUR\nagents:\n  desk: {tools: []}\n", encoding="utf-8")
    (root / "sops" / "hello.json").write_text("""{"id": "desk.hello", "agent": "desk", "name": "Hello",
      "triggers": ["hello there"], "startNode": "hi", "nodes": {
      "hi": {"id": "hi", "type": "action", "messageTemplate": "Hi!", "nextNodes": ["end"]},
      "end": {"id": "end", "type": "end"}}}""", encoding="utf-8")
    elsewhere = tmp_path / "work" / "here"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    ws = load_workspace("../../shop", embedder)
    assert [s.id for s in ws.sops] == ["desk.hello"]
    assert not [p for p in ws.problems if p.severity == "error"]


def test_an_example_that_fails_its_own_kind_is_a_lint_error_at_its_line_and_column(
        tmp_path: Path, embedder: CachedEmbedder) -> None:
    steps = ["ask user for the door code", "tell user it is open"]
    root = desk(tmp_path / "ws", gar=[f"{steps[0]},ask_user_input,\"the 4-digit door code, e.g. 12345\",,door_code",
                                      f"{steps[1]},message_to_user,The door is open.,,"],
                sops={"door.sop": text_sop("desk.door", "Open the door", "open the door", steps)})
    ws = load_workspace(root, embedder)
    found = [p for p in ws.problems if p.severity == "error"]
    assert [(p.file, p.line, p.column) for p in found] == [("gar.csv", 2, 72)], [str(p) for p in ws.problems]
    assert "12345" in found[0].message and "4 digits" in found[0].message


def test_an_example_with_its_own_or_leaves_the_hints_alternatives_intact() -> None:
    st = infer_type("new_choice", "the model you want instead, e.g. 64 GB or 128 GB, or a product number", V)
    assert st.kind == "text"
    listed = infer_type("kind", "a product category, e.g. tent, backpack or stove", V)
    assert listed.kind == "category"  # the example's "or" names examples, not kinds of answer
