"""Readings weighed against each other (ARCHITECTURE.md §3a): a reaction before a yes still says yes, a
statement about a thing is no answer to a yes/no question about it, a condition in words reads the flag
that both its words name, an account name given with its label is kept while the rest is asked, and a
question the knowledge base answers while a goal runs is a side question."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.engine.build import build_orchestrator
from core.language import text as T
from core.understanding.brains.conditions import field_condition
from core.workspace.slots import SlotType
from core.understanding.values import labelled_values
from tests.conftest import trusted
from tests.understanding.desks import desk


@pytest.mark.parametrize("said, meant", [
    ("lovely, yes please", True),
    ("perfect, go ahead", True),
    ("hmm, no", False),
    ("wow, that is not what I asked for", False),
    ("brilliant", None),
])
def test_a_short_reaction_before_the_answer_does_not_hide_it(said: str, meant: bool | None) -> None:
    assert T.yes_no(said) is meant


def test_a_statement_about_a_thing_does_not_answer_a_yes_or_no_about_it() -> None:
    types = {"heating_on": SlotType("heating_on", "boolean")}
    assert labelled_values("my heating is not working at all", types) == []
    assert [f.value for f in labelled_values("heating on: yes", types)] == [True]


def test_a_condition_in_words_reads_the_flag_both_its_words_name() -> None:
    assert field_condition("the refund is approved", {"refund_approved": True, "refund_total": 40}) is True
    assert field_condition("the refund is approved", {"refund_approved": False, "refund_total": 40}) is False


def _desk(root: Path) -> Path:
    (root / "sops").mkdir(parents=True)
    (root / "kb").mkdir()
    (root / "kb" / "fees.md").write_text(
        "# Fees\n\nA replacement library card costs 3 euros and is printed at the front desk the same day.\n",
        encoding="utf-8")
    (root / "store.yaml").write_text("name: Library\ncurrency: EUR\nagents:\n  desk: {tools: []}\n", encoding="utf-8")
    (root / "gar.csv").write_text(
        "action,action_type,user_interaction_metadata,api,params\n"
        "ask user for login email and card number,ask_user_input,"
        "\"the login name, the email and the card number, e.g. jsmith4, jsmith4@mail.org, 88120044\",,"
        "login|email|card_number\n"
        "ask user for the branch,ask_user_input,\"the branch: north, south or central\",,branch\n"
        "tell user the card is on its way,message_to_user,Your new card goes to the {branch} branch.,,\n",
        encoding="utf-8")
    (root / "sops" / "card.sop").write_text(
        "---\nid: desk.new_card\nagent: desk\ntitle: Replace a library card\ntriggers:\n"
        "  - I lost my library card\n  - I need a replacement library card\n---\n"
        "ask user for login email and card number\nask user for the branch\ntell user the card is on its way\n",
        encoding="utf-8")
    (root / "sops" / "fees.json").write_text(json.dumps({
        "id": "desk.fees", "agent": "desk", "name": "Pay a fee",
        "triggers": ["pay my library fine", "settle the charge for a lost card"],
        "startNode": "done", "nodes": {"done": {"type": "action", "messageTemplate": "Renewed.", "nextNodes": ["end"]},
                                       "end": {"type": "end"}}}), encoding="utf-8")
    return root


def test_an_account_name_given_with_its_label_is_kept_while_the_rest_is_asked(tmp_path: Path) -> None:
    orch = build_orchestrator(_desk(tmp_path / "ws"), state_url="sqlite:///:memory:")
    orch.handle_message("s", "I lost my library card")
    orch.handle_message("s", "Login: mdiaz21")
    goal = orch.load_state("s").active_goal
    assert goal.slots.get("login") == "mdiaz21"
    orch.handle_message("s", "mdiaz21@mail.org, 77310092")
    assert orch.load_state("s").active_goal.pending is not None
    assert orch.load_state("s").active_goal.slots.get("card_number") is not None


def test_a_question_the_knowledge_base_answers_while_a_goal_runs_is_a_side_question(tmp_path: Path) -> None:
    orch = build_orchestrator(_desk(tmp_path / "ws"), state_url="sqlite:///:memory:")
    orch.handle_message("s", "I lost my library card")
    reply = orch.handle_message("s", "is there any fee if I lose my card?")  # close to "pay the charge for a lost card"
    assert orch.load_state("s").active_goal.type == "desk.new_card"
    assert "3 euros" in reply
    dropped = orch.last_trace("s")["reading"]["dropped"]
    assert any("side question" in d["reason"] for d in dropped), dropped


def test_an_answer_naming_no_option_takes_the_option_that_stands_for_the_others() -> None:
    from core.understanding.extract import extract

    st = SlotType("why", "option", vocab=["moving house", "too expensive", "something else"])
    assert extract(st, "my kids have grown up and we never use it", asked=True) == "something else"
    assert extract(st, "it got too expensive for us", asked=True) == "too expensive"
    assert extract(st, "what do you mean?", asked=True) is None
    assert extract(st, "no", asked=True) is None
    plain = SlotType("size", "option", vocab=["small", "large"])
    assert extract(plain, "my kids have grown up", asked=True) is None


@pytest.mark.parametrize("said, meant", [("oh okay, fair enough", True), ("ok but I don't want it", False),
                                         ("ok, can you check the other one", None)])
def test_an_ok_before_a_remark_is_a_yes(said: str, meant: bool | None) -> None:
    assert T.yes_no(said) is meant


def test_a_closing_question_that_fills_nothing_ends_the_goal(tmp_path: Path) -> None:
    root = desk(tmp_path / "ws", sops={"hours.json": {
        "id": "desk.hours", "agent": "desk", "name": "Opening hours", "triggers": ["when are you open"],
        "startNode": "tell", "nodes": {
            "tell": {"type": "action", "messageTemplate": "We open at nine. Anything else I can do for you?",
                     "nextNodes": ["end"]},
            "end": {"type": "end"}}}})
    orch = build_orchestrator(root, state_url="sqlite:///:memory:")
    reply = orch.handle_message("s", "when are you open")
    assert "nine" in reply
    state = orch.load_state("s")
    assert state.active_goal is None
    assert [g.status for g in state.goals.values()] == ["done"]


def test_back_to_something_that_is_no_step_is_no_go_back() -> None:
    assert not T.is_go_back("refund it back to my store card please")
    assert T.is_go_back("can we go back to the previous question")
    assert T.is_go_back("back to the delivery question please")


def test_a_step_that_calls_a_tool_and_speaks_names_what_the_tool_made_of_the_customers_words(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "sops").mkdir(parents=True)
    (root / "store.yaml").write_text(
        "name: Shop\ncurrency: EUR\nagents:\n  desk: {tools: [swap.find]}\n"
        "tools:\n  swap.find: {params: [wanted], python: tools.py:find}\n", encoding="utf-8")
    (root / "tools.py").write_text(
        "def find(wanted):\n    return {'wanted': 'Trail Shoe (size 42, colour red)', 'ref': 'SW-1'}\n", encoding="utf-8")
    (root / "gar.csv").write_text(
        "action,action_type,user_interaction_metadata,api,params\n"
        "ask user which model they want,ask_user_input,the model they want in their own words,,wanted\n"
        "find the swap,api_call|message_to_user,Swap {ref}: you get the {wanted}.,swap.find,wanted\n",
        encoding="utf-8")
    (root / "sops" / "swap.sop").write_text(
        "---\nid: desk.swap\nagent: desk\ntitle: Swap shoes\ntriggers:\n  - swap my shoes\n---\n"
        "ask user which model they want\nfind the swap\n", encoding="utf-8")
    orch = build_orchestrator(trusted(root), state_url="sqlite:///:memory:")
    orch.handle_message("s", "swap my shoes")
    reply = orch.handle_message("s", "the red ones in 42")
    assert "Swap SW-1: you get the Trail Shoe (size 42, colour red)." in reply


def test_a_cancelled_request_leaves_nothing_to_reuse_and_another_persons_name_is_not_the_customers(
        tmp_path: Path) -> None:
    from tests.understanding.test_values_in_passing import _payments_desk

    orch = build_orchestrator(_payments_desk(tmp_path / "ws"), state_url="sqlite:///:memory:")
    orch.handle_message("s", "I want to pay Farida for the concert")
    orch.handle_message("s", "cancel")
    reply = orch.handle_message("s", "I want to pay someone")
    assert "Who should we pay?" in reply


def test_saying_one_does_not_want_to_continue_cancels() -> None:
    assert T.is_cancel("honestly, I do not want to carry on with this")
    assert not T.is_cancel("I don't want to carry on paying twice for it")
