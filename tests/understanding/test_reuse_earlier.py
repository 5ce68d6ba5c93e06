"""Values reused from an earlier request of the session when the customer says so ("a car for the same dates as
the hotel"): the later request's slots of that kind take the earlier one's values, in the order it asks them."""

from __future__ import annotations

from pathlib import Path

from core.engine.build import build_orchestrator
from core.understanding import reused_values
from core.workspace.slots import SlotType
from tests.understanding.desks import desk, text_sop

GAR = ['ask user for the first night,ask_user_input,"the arrival date",,arrive_on',
       'ask user for the last night,ask_user_input,"the departure date",,leave_on',
       "say the room is held,message_to_user,Room held from {arrive_on} to {leave_on}.,,",
       'ask user for the collection day,ask_user_input,"the date to collect the bike",,collect_on',
       'ask user for the return day,ask_user_input,"the date to bring the bike back",,return_on',
       "say the bike is held,message_to_user,Bike held from {collect_on} to {return_on}.,,"]


def _desk(root: Path) -> Path:
    return desk(root, gar=GAR, sops={
        "room.sop": text_sop("desk.room", "hold a room", "hold a room for me",
                             ["ask user for the first night", "ask user for the last night", "say the room is held"]),
        "bike.sop": text_sop("desk.bike", "hire a bike", "I want to hire a bike",
                             ["ask user for the collection day", "ask user for the return day",
                              "say the bike is held"])})


def test_the_same_values_as_an_earlier_request_are_its_values_of_that_kind() -> None:
    dates = {"collect_on": SlotType("collect_on", "date"), "return_on": SlotType("return_on", "date")}
    earlier = [({"arrive_on": "2027-04-02", "leave_on": "2027-04-05"},
                {"arrive_on": SlotType("arrive_on", "date"), "leave_on": SlotType("leave_on", "date")})]
    order = ["collect_on", "return_on"]
    assert reused_values("same dates as the room please", dates, order, earlier) == \
        {"collect_on": "2027-04-02", "return_on": "2027-04-05"}
    assert reused_values("same colour as the room", dates, order, earlier) == {}  # names no slot here
    assert reused_values("April 2nd please", dates, order, earlier) == {}


def test_a_later_request_takes_the_dates_of_an_earlier_one_when_asked(tmp_path: Path) -> None:
    bot = build_orchestrator(_desk(tmp_path / "ws"), state_url="sqlite:///:memory:")
    bot.handle_message("s", "hold a room for me")
    bot.handle_message("s", "April 2nd")
    assert "Room held" in bot.handle_message("s", "April 5th")
    reply = bot.handle_message("s", "I want to hire a bike for the same dates as the room")
    assert "Bike held from 2 April" in reply and "to 5 April" in reply, reply
    bot.handle_message("t", "hold a room for me")
    bot.handle_message("t", "April 2nd")
    bot.handle_message("t", "April 5th")
    assert "collect" in bot.handle_message("t", "I want to hire a bike").lower()
    reply = bot.handle_message("t", "the same dates as the room, please")
    assert "Bike held from 2 April" in reply and "to 5 April" in reply, reply
