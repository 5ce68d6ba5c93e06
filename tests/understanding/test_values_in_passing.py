"""Values said in passing (ARCHITECTURE.md §3b): another person's name in a request, a full name split when a
first and a last name are wanted, money with its sign after the number, no id read out of an email address,
and a correction that outranks the cancel its words may hold (§3a)."""

from __future__ import annotations

import json
from pathlib import Path

from core.engine.build import build_orchestrator
from core.language import text as T
from core.understanding.extract import extract
from core.understanding.values import name_part, passing_name
from core.workspace.kinds import mark_person
from core.workspace.slots import SlotType, Vocabulary, infer_type
from tests.understanding.desks import desk, text_sop


def test_a_name_said_in_passing_is_the_one_capitalised_run_not_opening_a_sentence() -> None:
    assert passing_name("please pay Ines back for the tickets") == "Ines"
    assert passing_name("I'd like to add Tomasz Nowak to my list") == "Tomasz Nowak"
    assert passing_name("Send a gift card to Marguerite") == "Marguerite"
    assert passing_name("send it on Monday to Ines") == "Ines"  # a day is not a name
    assert passing_name("pay Ines and Farid") is None  # two names: nothing is guessed
    assert passing_name("i want to pay someone back") is None
    assert passing_name("Pay back a friend", frozenset({"friend"})) is None


def test_a_full_name_keeps_the_part_its_slot_asks_for() -> None:
    assert name_part("Amara Okafor", "first") == "Amara"
    assert name_part("Amara van der Berg", "last") == "van der Berg"
    assert name_part("Amara", "last") == "Amara"


def test_a_person_slot_is_the_customers_own_or_another_persons_from_its_words() -> None:
    own = SlotType("given_name", "text", person=True)
    mark_person(own, "given_name", "the first name on the booking", ["What is your first name?"])
    assert not own.others and own.name_part == "first"
    other = SlotType("payee", "text", person=True)
    mark_person(other, "payee_name", "the payee", ["Who should receive the payment?"])
    assert other.others and other.name_part == ""


def test_money_with_its_sign_after_the_number_is_money() -> None:
    found = T.amounts("make it 75€ instead")
    assert found and found[0].money and found[0].value == 75
    st = infer_type("refund_total", "the amount to refund", Vocabulary())
    assert extract(st, "no wait, 40$ please", asked=False) == 40


def test_no_id_is_read_out_of_an_email_address() -> None:
    st = infer_type("booking_id", "", Vocabulary())
    assert st.kind == "id"
    assert extract(st, "sure, it's marta.quinn2231@example.org", asked=False) is None
    assert extract(st, "marta.quinn2231@example.org and booking BK4471", asked=False) == "BK4471"


def _payments_desk(root: Path) -> Path:
    (root / "sops").mkdir(parents=True)
    (root / "store.yaml").write_text("name: Pay desk\ncurrency: USD\nagents:\n  pay: {tools: []}\n", encoding="utf-8")
    nodes = {
        "who": {"type": "action", "description": "the payee's name", "messageTemplate": "Who should we pay?",
                "resultKey": "payee_name", "nextNodes": ["amount"]},
        "amount": {"type": "action", "description": "the amount of money", "messageTemplate": "How much should we send?",
                   "resultKey": "amount", "nextNodes": ["confirm"]},
        "confirm": {"type": "action", "description": "yes or no", "resultKey": "go_ahead",
                    "messageTemplate": "Shall I send {amount} to {payee_name}?", "nextNodes": ["decide"]},
        "decide": {"type": "decision", "condition": "go_ahead == true", "nextNodes": ["sent", "kept"]},
        "sent": {"type": "action", "messageTemplate": "Sent {amount} to {payee_name}.", "nextNodes": ["end"]},
        "kept": {"type": "action", "messageTemplate": "Nothing was sent.", "nextNodes": ["end"]},
        "end": {"type": "end"},
    }
    sop = {"id": "pay.send", "agent": "pay", "name": "send a payment", "triggers": ["I want to pay someone",
           "send a payment"], "slots": {"payee_name": "name", "amount": "money", "go_ahead": "yes_no"},
           "startNode": "who", "nodes": nodes}
    (root / "sops" / "send.json").write_text(json.dumps(sop), encoding="utf-8")
    return root


def test_a_payee_named_in_the_request_is_not_asked_for_again(tmp_path: Path) -> None:
    orch = build_orchestrator(_payments_desk(tmp_path / "ws"), state_url="sqlite:///:memory:")
    reply = orch.handle_message("s", "I want to pay Farida for the concert")
    assert "How much" in reply
    assert orch.load_state("s").active_goal.slots.get("payee_name") == "Farida"


def test_a_new_value_with_words_of_correction_corrects_instead_of_cancelling(tmp_path: Path) -> None:
    orch = build_orchestrator(_payments_desk(tmp_path / "ws"), state_url="sqlite:///:memory:")
    for said in ("I want to pay someone", "Farida", "60 dollars"):
        orch.handle_message("s", said)
    reply = orch.handle_message("s", "oh, scratch that, I meant 65$")
    goal = orch.load_state("s").active_goal
    assert goal is not None and goal.type == "pay.send", reply
    assert goal.slots.get("amount") == 65
    reply = orch.handle_message("s", "oh, forget it")
    assert orch.load_state("s").active_goal is None, reply


def test_a_span_goes_to_one_slot_the_most_specific_kind_first(tmp_path: Path) -> None:
    from core.shared.models import Goal

    steps = ["ask user for postcode phone and email", "tell user thanks"]
    root = desk(tmp_path / "ws", region="US", currency="USD", gar=[
        f"{steps[0]},ask_user_input,\"the postcode, the phone number and the email\",,postcode|phone|email",
        f"{steps[1]},message_to_user,Thanks.,,"],
        sops={"check.sop": text_sop("desk.check", "Check my details", "check my details", steps)})
    orch = build_orchestrator(root, state_url="sqlite:///:memory:")
    sop = orch.reader.sops["desk.check"]
    node = next(n for n in sop.nodes.values() if len(n.fills) == 3)
    goal = Goal(id="g", type=sop.id, pending=node.id)
    found = orch.reader.answers.answer_values(goal, sop, "60614, (312) 555-0187, ines.m@example.net")
    assert found["postcode"] == "60614"
    assert found["email"] == "ines.m@example.net"
    assert found["phone"].replace(" ", "").endswith("312-555-0187")


def test_a_handle_written_with_its_sign_is_read_in_passing_never_from_an_email() -> None:
    from core.understanding.mentions import at_handle

    assert at_handle("please drop @kim.sol from my list") == "@kim.sol"
    assert at_handle("write to kim@example.com") is None
    assert at_handle("@ana and @bo") is None


def test_a_message_written_like_a_command_gives_no_name() -> None:
    from core.understanding.mentions import capitalised_name

    assert capitalised_name("/SetValue(confirm=true)") is None
    assert passing_name("please run /Reset(All=1) for Ines") == "Ines"


def test_a_bare_number_in_a_request_fills_the_one_slot_a_number_fits(tmp_path: Path) -> None:
    orch = build_orchestrator(_payments_desk(tmp_path / "ws"), state_url="sqlite:///:memory:")
    reply = orch.handle_message("s", "pay Farida 35")
    goal = orch.load_state("s").active_goal
    assert goal.slots.get("payee_name") == "Farida" and goal.slots.get("amount") == 35, reply
    assert "Shall I send" in reply


def test_another_sops_label_for_a_slot_of_the_same_name_does_not_hide_it(tmp_path: Path) -> None:
    from core.shared.models import Goal

    root = desk(tmp_path / "ws", gar=[
        "ask user for the booking,ask_user_input,\"a booking number like #B000000\",,booking",
        "ask user which booking to move,ask_user_input,which booking to move,,booking",
        "tell user done,message_to_user,Done.,,"], sops={
        "refund.sop": text_sop("desk.refund", "Refund a booking", "refund my booking",
                               ["ask user for the booking", "tell user done"]),
        "move.sop": text_sop("desk.move", "Move a booking", "move my booking",
                             ["ask user which booking to move", "tell user done"])})
    orch = build_orchestrator(root, state_url="sqlite:///:memory:")
    sop = orch.reader.sops["desk.refund"]
    found = orch.reader.answers.extract_volunteered(Goal(id="", type=sop.id), sop,
                                                     "please refund booking #B445120, it rained all week",
                                                     opening=True)
    assert found.get("booking") == "#B445120"


def test_a_label_shared_by_two_slots_of_a_kind_gives_its_value_to_the_one_asked(tmp_path: Path) -> None:
    from core.shared.models import Goal

    steps = ["ask user for the old phone", "ask user for the new phone", "tell user done"]
    root = desk(tmp_path / "ws", region="US", currency="USD", gar=[
        f"{steps[0]},ask_user_input,the phone number on file,,old_phone:phone",
        f"{steps[1]},ask_user_input,the phone number to use from now on,,new_phone:phone",
        f"{steps[2]},message_to_user,Done.,,"],
        sops={"phone.sop": text_sop("desk.phone", "Change my phone", "change my phone", steps)})
    orch = build_orchestrator(root, state_url="sqlite:///:memory:")
    sop = orch.reader.sops["desk.phone"]
    node = next(n for n in sop.nodes.values() if [p.name for p in n.fills] == ["new_phone"])
    goal = Goal(id="g", type=sop.id, pending=node.id, slots={"old_phone": "+1 312-555-0100"})
    found = orch.reader.answers.answer_values(goal, sop, "the new number is (312) 555-0199")
    assert list(found) == ["new_phone"] and found["new_phone"].endswith("312-555-0199")


def test_a_question_naming_the_parts_of_one_value_keeps_the_whole_answer(tmp_path: Path) -> None:
    from core.shared.models import Goal

    root = desk(tmp_path / "ws", sops={"move.json": {
        "id": "desk.move", "agent": "desk", "name": "Move a delivery", "triggers": ["send my parcel elsewhere"],
        "startNode": "ask", "nodes": {
            "ask": {"type": "action", "description": "the new delivery address",
                    "messageTemplate": "Where should it go (street, flat or suite if any, town and postcode)?",
                    "resultKey": "new_address", "nextNodes": ["done"]},
            "done": {"type": "action", "messageTemplate": "It goes to {new_address}.", "nextNodes": ["end"]},
            "end": {"type": "end"}}}})
    orch = build_orchestrator(root, state_url="sqlite:///:memory:")
    orch.handle_message("s", "send my parcel elsewhere")
    reply = orch.handle_message("s", "9 Quay Road, Suite 12, Galway H91 X2Y3")
    assert "It goes to 9 Quay Road, Suite 12, Galway H91 X2Y3." in reply


def test_a_value_said_last_after_a_frame_is_the_answer_not_the_sentence() -> None:
    from core.understanding.mentions import framed_tail

    assert framed_tail("ok found it, it's 5521", "pin_or_answer") == "5521"
    assert framed_tail("sorry for the wait - my pin is 2218", "pin") == "2218"
    assert framed_tail("it's Singh", "pin") is None  # one clause: read as before
    assert framed_tail("I looked everywhere, it is not in the drawer and I give up", "pin") is None


def test_an_account_name_given_as_an_introduction_is_read_for_an_account_slot() -> None:
    from core.understanding.values import introduced_handle

    assert introduced_handle("hey there, this is ravi_m_77, my parcel never came") == "ravi_m_77"
    assert introduced_handle("Hi, I'm noor.h42! Quick question") == "noor.h42"
    assert introduced_handle("this is Ravi Menon") is None  # a person's name is no account name
    assert introduced_handle("I'm 34 and this is my first order") is None
    assert introduced_handle("I'm noor@mail.example") is None  # an email address
    assert introduced_handle("this is ravi_m_77 and I'm noor_h_42") is None  # two: nothing is guessed


def test_from_one_option_to_another_gives_the_second_to_a_slot_holding_the_new_value() -> None:
    from core.understanding.mentions import find_option, holds_target

    tiers = ["basic", "plus", "premium"]
    assert holds_target("new_tier") and not holds_target("tier")
    said = "could you take me from basic up to the premium tier?"
    assert find_option(said, tiers, target=True) == "premium"
    assert find_option(said, tiers) == "basic"  # a slot of the current value keeps the first
    assert find_option("from plus into basic", tiers, target=True) == "basic"
    assert find_option("premium, not basic", tiers, target=True) == "premium"  # no change stated: as before
    assert extract(SlotType("new_tier", "option", vocab=tiers), "move me from plus to premium", asked=False) \
        == "premium"


def test_a_free_text_value_worded_like_its_example_is_read_in_passing() -> None:
    from core.understanding.mentions import worded_like
    from core.workspace.kinds import example_frame

    st = infer_type("card_to_charge", "a card saved on the account, e.g. the mastercard ending in 1188", Vocabulary())
    assert st.kind == "text" and st.example == "the mastercard ending in 1188"
    assert worded_like("put it on my amex ending in 0051 please", st.example) == "amex ending in 0051"
    assert worded_like("my amex ending in 51", st.example) is None  # not the example's length
    assert worded_like("put it on the card", st.example) is None
    assert example_frame("room 204") is None  # a word and a number alone say too little


def test_an_opening_message_fills_an_account_name_a_new_option_and_a_worded_value(tmp_path: Path) -> None:
    gar = ['ask for the login,ask_user_input,"your login, like kit_r_12",,login',
           'ask for the new tier,ask_user_input,"the new tier, one of basic, plus or premium",,new_tier',
           'ask for the card,ask_user_input,"a saved card, e.g. the visa ending in 4521",,card',
           'confirm the change,ask_user_input,"yes or no",,go_ahead',
           'say it is done,message_to_user,"Moved {login} to {new_tier}, charged to {card}.",,']
    root = desk(tmp_path / "ws", gar=gar, sops={"tier.sop": text_sop(
        "plans.change_tier", "change my tier", "change my membership tier",
        ["ask for the login", "ask for the new tier", "ask for the card", "confirm the change", "say it is done"])})
    bot = build_orchestrator(root, state_url="sqlite:///:memory:")
    reply = bot.handle_message("s", "Hello, I'm mara_q_311. Please change my membership tier from basic to premium "
                                    "and bill my mastercard ending in 8802.")
    goal = bot.load_state("s").active_goal
    assert goal is not None, reply
    assert goal.slots.get("login") == "mara_q_311"
    assert goal.slots.get("new_tier") == "premium"
    assert goal.slots.get("card") == "mastercard ending in 8802"
    assert goal.pending and [p.name for p in bot.reader.sops[goal.type].node(goal.pending).fills] == ["go_ahead"]


def test_a_statement_answers_a_yes_no_question_before_it_is_asked() -> None:
    from core.understanding.mentions import stated_answer

    away = "Are you staying abroad at the moment?"
    assert stated_answer(away, "hi, I'm currently staying abroad and my card got declined") is True
    assert stated_answer(away, "I am not staying abroad, I'm home") is False
    assert stated_answer(away, "my card got declined") is None
    rebooted = "Thanks. Have you rebooted the router?"
    assert stated_answer(rebooted, "I've already rebooted it twice") is True
    assert stated_answer(rebooted, "I haven't rebooted anything") is False
    slip = "Do you have the packing slip?"
    assert stated_answer(slip, "we don't have the packing slip any more") is False
    assert stated_answer(slip, "I have the flu, sorry") is None  # another thing had


def test_an_opening_that_states_a_yes_no_fact_is_not_asked_it(tmp_path: Path) -> None:
    gar = ['ask user whether they are travelling abroad,ask_user_input,"yes or no",,abroad',
           "say abroad help,message_to_user,Abroad: I have switched on travel mode for your card.,,",
           "say home help,message_to_user,At home: please try the card again.,,"]
    steps = ["ask user whether they are travelling abroad", "if abroad is true:", "    say abroad help", "else:",
             "    say home help"]
    root = desk(tmp_path / "ws", gar=gar, sops={"card.sop": text_sop(
        "desk.card", "my card is declined", "my card is declined", steps)})
    bot = build_orchestrator(root, state_url="sqlite:///:memory:")
    reply = bot.handle_message("s", "Hello, I'm travelling in Peru and my card is declined everywhere")
    assert "travel mode" in reply and "?" not in reply, reply
    reply = bot.handle_message("t", "my card is declined, I am not travelling")
    assert "try the card again" in reply and "?" not in reply, reply
    reply = bot.handle_message("u", "my card is declined")
    assert "abroad" in reply and "?" in reply, reply


def test_a_street_address_said_in_passing_and_which_one_it_is() -> None:
    from core.understanding.mentions import address_side, street_addresses

    said = "Morning! My previous place was 88 Quarry Lane. Please send the parcel to 17 Alder Rd, Leeds instead."
    found = street_addresses(said)
    assert [(street, whole) for _, street, whole in found] == [("88 Quarry Lane", "88 Quarry Lane"),
                                                               ("17 Alder Rd", "17 Alder Rd, Leeds")]
    assert [address_side(said, at, whole) for at, _, whole in found] == ["current", "new"]
    assert street_addresses("I bought 3 mugs by the way") == []  # no street's name, no address
    assert street_addresses("deliver to 9 Harbour Way, Portland, OR 97201")[0][2] == "9 Harbour Way, Portland, OR 97201"


def test_an_opening_gives_the_old_and_the_new_address_to_their_own_slots(tmp_path: Path) -> None:
    gar = ['ask for the old address,ask_user_input,"the street address on the account now (street only)",,'
           'current_address',
           'ask for the new address,ask_user_input,"the new address with its city and zip code",,new_address',
           "say it is moved,message_to_user,Moved from {current_address} to {new_address}.,,"]
    steps = ["ask for the old address", "ask for the new address", "say it is moved"]
    root = desk(tmp_path / "ws", gar=gar, sops={"move.sop": text_sop(
        "desk.move", "I moved house", "I moved house", steps)})
    bot = build_orchestrator(root, state_url="sqlite:///:memory:")
    reply = bot.handle_message("s", "I moved house. The old one was 52 Birch Ave, and please use 7 Kiln Street, "
                                    "Bristol BS1 instead")
    assert "Moved from 52 Birch Ave to 7 Kiln Street, Bristol" in reply, reply


def test_the_thing_a_request_names_for_the_question_asking_what_an_action_is_done_to() -> None:
    from core.understanding.mentions import asked_verb, labelled_text, named_object

    assert asked_verb("Which parts would you like to replace?") == "replace"
    assert asked_verb("ask user which plan to cancel") == "cancel"
    assert asked_verb("What is your name?") is None
    said = "hello, I need to replace the left hinge for the right one because it squeaks"
    assert named_object(said, "replace") == "the left hinge"
    assert named_object("swap the red strap for the black one, please", "swap", instead=True) == "the black one"
    assert named_object("please cancel my gym plan, thanks", "cancel") == "my gym plan"
    assert named_object("I'd like to cancel a plan I have", "cancel") is None  # "a plan": none in particular yet
    assert labelled_text("and send the deposit to the holiday fund, ta", {"deposit"}, place=True) == \
        "the holiday fund"
    assert labelled_text("the deposit to the holiday fund", {"deposit"}) is None  # only for a "where" question


def test_an_opening_names_the_part_to_replace_and_where_the_deposit_goes(tmp_path: Path) -> None:
    gar = ['ask user which part to replace,ask_user_input,"one part of the chair, e.g. the armrest",,part',
           'ask user where the deposit should go,ask_user_input,"the card it was paid with, or store credit",,'
           'deposit_to',
           "say it is booked,message_to_user,Replacing {part}; the deposit goes to {deposit_to}.,,"]
    steps = ["ask user which part to replace", "ask user where the deposit should go", "say it is booked"]
    root = desk(tmp_path / "ws", gar=gar, sops={"part.sop": text_sop(
        "desk.part", "replace a part", "I need a part of my chair replaced", steps)})
    bot = build_orchestrator(root, state_url="sqlite:///:memory:")
    reply = bot.handle_message("s", "Hi, I need to replace the left armrest, deposit to my debit card")
    assert "Replacing the left armrest; the deposit goes to my debit card." in reply, reply
    reply = bot.handle_message("t", "Hi, I need to replace a broken bit on the chair")
    assert "part" in reply.lower() and "deposit" not in reply.lower(), reply  # "a broken bit": which, still asked


def _stay_desk(root: Path) -> Path:
    gar = ['ask user for the first night,ask_user_input,"the arrival date",,arrive_on',
           'ask user for the last day,ask_user_input,"the departure date",,leave_on',
           "say it is held,message_to_user,Held from {arrive_on} to {leave_on}.,,"]
    steps = ["ask user for the first night", "ask user for the last day", "say it is held"]
    return desk(root, gar=gar, sops={"stay.sop": text_sop("desk.stay", "hold a cabin", "hold a cabin", steps)})


def test_a_date_range_fills_the_start_and_the_end_in_the_order_they_are_asked(tmp_path: Path) -> None:
    from core.understanding.extract import dates_said

    said = dates_said(SlotType("arrive_on", "date"), "from March 9th until the 12th", asked=True)
    assert [d[5:] for _, d in said] == ["03-09", "03-12"]  # the day said alone takes the month before it
    root = _stay_desk(tmp_path / "ws")
    bot = build_orchestrator(root, state_url="sqlite:///:memory:")
    reply = bot.handle_message("s", "I'd like to hold a cabin from March 9th until the 12th")
    assert "9 March" in reply and "12 March" in reply and reply.index("9 March") < reply.index("12 March"), reply
    bot.handle_message("t", "hold a cabin")
    reply = bot.handle_message("t", "March 9th to the 12th please")
    assert "9 March" in reply and "12 March" in reply and reply.index("9 March") < reply.index("12 March"), reply


def test_a_clock_time_is_asked_for_and_read_as_one(tmp_path: Path) -> None:
    gar = ['ask user when to collect,ask_user_input,"the pick-up time, e.g. 6:30 pm",,collect_at',
           "say it is ready,message_to_user,Your order will be ready at {collect_at}.,,"]
    root = desk(tmp_path / "ws", gar=gar, sops={"collect.sop": text_sop(
        "desk.collect", "collect an order", "collect my order", ["ask user when to collect", "say it is ready"])})
    bot = build_orchestrator(root, state_url="sqlite:///:memory:")
    assert "ready at 17:45" in bot.handle_message("s", "I'd like to collect my order at quarter to six this evening")
    bot.handle_message("t", "collect my order")
    assert "ready at 09:30" in bot.handle_message("t", "half past nine")
