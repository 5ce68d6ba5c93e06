"""Asking to skip the question put: a needed question is asked again however often the customer asks to skip it
(never counted as an answer that failed)."""

from __future__ import annotations

from pathlib import Path

from core.engine.build import build_orchestrator
from core.language import text as T
from tests.understanding.desks import desk, text_sop

STEPS = ["ask user for the room number", "say it is booked"]
GAR = ['ask user for the room number,ask_user_input,"the room number, e.g. 412",,room:number',
       "say it is booked,message_to_user,Housekeeping is booked for room {room}.,,"]


def test_a_whole_message_asking_to_skip_is_told_from_a_wish_to_skip_something() -> None:
    for said in ("skip", "skip this one please", "can we skip that question?", "next question", "let's move on",
                 "ok, go to the next step"):
        assert T.asks_to_skip(said), said
    for said in ("skip the towels this time", "next Friday", "I'd like to skip breakfast", "the next one along"):
        assert not T.asks_to_skip(said), said


def test_a_needed_question_is_asked_again_however_often_skipping_is_asked(tmp_path: Path) -> None:
    root = desk(tmp_path / "ws", gar=GAR, sops={"hk.sop": text_sop("desk.housekeeping", "book housekeeping",
                                                                     "book housekeeping", STEPS)})
    bot = build_orchestrator(root, state_url="sqlite:///:memory:")
    bot.handle_message("s", "book housekeeping")
    for said in ("skip this", "next question", "skip it please", "move on", "skip"):
        reply = bot.handle_message("s", said)
        assert "can't be skipped" in reply and "room number" in reply, reply
        assert bot.load_state("s").active_goal is not None
    trace = bot.last_trace("s")
    assert any("not counted as a failed answer" in d for d in trace["decisions"])
    reply = bot.handle_message("s", "412")
    assert "Housekeeping is booked for room 412" in reply, reply
