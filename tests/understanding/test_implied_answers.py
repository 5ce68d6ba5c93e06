"""A yes/no question whose answer the customer's own words already give: the decision after it leads, for one
answer only, to a question every value of which is known, so that answer is taken and the question is not put."""

from __future__ import annotations

from pathlib import Path

from core.engine.build import build_orchestrator
from tests.understanding.desks import desk


def _lookup_desk(root: Path) -> Path:
    nodes = {
        "has_code": {"type": "action", "messageTemplate": "Do you have your booking code? (yes/no)",
                     "description": "whether they have the code", "resultKey": "has_code", "nextNodes": ["which"]},
        "which": {"type": "decision", "condition": "context.has_code == true", "nextNodes": ["code", "surname"]},
        "code": {"type": "action", "messageTemplate": "What is the booking code?", "description": "the code",
                 "resultKey": "booking_code", "nextNodes": ["found"]},
        "surname": {"type": "action", "messageTemplate": "What are your surname and your email?",
                    "description": "the surname and the email", "resultKey": "surname", "nextNodes": ["email"]},
        "email": {"type": "action", "messageTemplate": "And your email?", "description": "an email address",
                  "resultKey": "email", "nextNodes": ["found"]},
        "found": {"type": "action", "messageTemplate": "Thanks, looking it up now.", "nextNodes": ["end"]},
        "end": {"type": "end"},
    }
    sop = {"id": "desk.find_booking", "agent": "desk", "name": "find my booking",
           "triggers": ["I can't find my booking", "look up my booking"],
           "slots": {"surname": "name"}, "startNode": "has_code", "nodes": nodes}
    return desk(root, sops={"find.json": sop})


def test_a_yes_no_question_the_opening_already_answers_is_not_put(tmp_path: Path) -> None:
    bot = build_orchestrator(_lookup_desk(tmp_path / "ws"), state_url="sqlite:///:memory:")
    reply = bot.handle_message("s", "Hi, I can't find my booking. My surname is Okonkwo, email ada.ok@mail.example")
    assert "booking code" not in reply and "looking it up" in reply
    trace = bot.last_trace("s")
    assert any("has_code = false" in d for d in trace["decisions"]), trace["decisions"]
    goal = bot.load_state("s").latest_goal("desk.find_booking")
    assert goal.slots["has_code"] is False


def test_a_yes_no_question_is_put_when_the_opening_answers_neither_branch(tmp_path: Path) -> None:
    bot = build_orchestrator(_lookup_desk(tmp_path / "ws"), state_url="sqlite:///:memory:")
    reply = bot.handle_message("s", "Hi, I can't find my booking")
    assert "booking code" in reply
    reply = bot.handle_message("s", "no")
    assert "surname" in reply


def test_a_question_only_one_way_needs_is_passed_when_the_other_way_is_answered(tmp_path: Path) -> None:
    from tests.understanding.desks import text_sop

    steps = ["ask user for the member card number", "if user gave the card number:", "    look up the card",
             "else:", "    ask user for surname and postcode", "say thanks"]
    gar = ['ask user for the member card number,ask_user_input,"the 8-digit card number (or that they lost it)",,'
           'card_number',
           "look up the card,message_to_user,Card {card_number} found.,,",
           'ask user for surname and postcode,ask_user_input,"surname and postcode, e.g. Moreau 75011",,surname|postcode',
           "say thanks,message_to_user,Thanks {surname}: checking your membership now.,,"]
    root = desk(tmp_path / "ws", gar=gar, sops={"card.sop": text_sop(
        "desk.membership", "check my membership", "check my membership", steps)})
    bot = build_orchestrator(root, state_url="sqlite:///:memory:")
    reply = bot.handle_message("s", "Please check my membership. Surname: Moreau, postcode: 75011")
    assert "checking your membership" in reply and "card number" not in reply
    reply = build_orchestrator(root, state_url="sqlite:///:memory:").handle_message("s", "check my membership")
    assert "card number" in reply
