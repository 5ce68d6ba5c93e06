"""The checks a model's answer must pass, response cleaning, the language guess, lean prompts and settings."""

from __future__ import annotations

from typing import Any

import pytest

from core.engine.build import BRAINS, Workspace, build_orchestrator
from core.engine.grounding import ungrounded_facts
from core.engine.slot_typing import slot_types
from core.shared.errors import UserInputError
from core.shared.models import MemoryEntry
from core.sop.graph import Sop
from core.understanding.brains.cleaning import clean_reply, guess_language, strip_help_offers
from core.understanding.brains.commands import (
    Abstain,
    BranchPick,
    InvalidProposal,
    Reading,
    SlotValue,
    WireCommand,
    Wording,
    check_branch,
    check_wording,
)
from core.understanding.brains.hybrid import branch_is_sure
from core.understanding.brains.llm_client import DEFAULT_OPENAI_MODEL, LOCAL_KEY, LLMSettings, parse_json_reply
from core.understanding.brains.prompts import (
    encode_node,
    estimate_tokens,
    memory_lines,
    referenced_keys,
    relevant_nodes,
)
from core.understanding.brains.reading_checks import ReadingScope, check_reading
from core.understanding.brains.usage import LLMUsage
from core.understanding.brains.value_checks import check_value
from core.understanding.commands import Command as UnderstandingCommand
from core.workspace.slots import SlotType


def sop(ws: Workspace, sop_id: str) -> Sop:
    return next(s for s in ws.sops if s.id == sop_id)


def scope(ws: Workspace, text: str, sop_id: str = "seller.listing_blocked", pending: str | None = "listing_id",
          candidates: list[dict[str, Any]] | None = None, filled: frozenset[str] = frozenset()) -> ReadingScope:
    s = sop(ws, sop_id)
    node = next((n for n in s.nodes.values() if n.asks and any(p.name == pending for p in n.fills)), None)
    return ReadingScope(text, [x.id for x in ws.sops], node, slot_types(ws.sops, ws.vocab)[s.id], candidates or [],
                        frozenset(ws.tools), running=s.id, filled=filled)


def read(kind: str, **kw: Any) -> Reading:
    slots = [SlotValue(name=k, value=v) for k, v in (kw.pop("slots", None) or {}).items()]
    first = WireCommand(command=kind, sop=kw.get("sop"), slots=slots, query=kw.get("query"), act=kw.get("act"))
    return Reading(commands=[first, *kw.get("also", [])], language=kw.get("language"))


def wire(kind: str, **kw: Any) -> WireCommand:
    return read(kind, **kw).commands[0]


# ---------------------------------------------------------------------------- readings


def test_a_reading_becomes_the_same_typed_commands_the_rules_read(seller: Workspace) -> None:
    result = check_reading(read("answer", slots={"listing_id": "lstfydf12g"}, language="EN"),
                           scope(seller, "it's lst fydf12g"))
    assert result.slots == {"listing_id": "LSTFYDF12G"} and result.language == "en"
    assert [c.as_dict() for c in result.commands] == [
        {"command": "answer", "evidence": "it's lst fydf12g", "question": "ask user to provide listing id",
         "value": {"listing_id": "LSTFYDF12G"}}]
    assert all(isinstance(c, UnderstandingCommand) for c in result.commands)


def test_each_wire_command_maps_to_one_command_of_its_kind(seller: Workspace) -> None:
    text = "no wait, my listing is LSTFYDF12G, and how long does a review take? also cancel that"
    result = check_reading(read("correct_slot", slots={"listing_id": "LSTFYDF12G"}, also=[
        wire("knowledge_question", query="how long does a listing review take"), wire("cancel_goal"),
        wire("small_talk", act="thanks"), wire("human_handoff"), wire("go_back")]),
        scope(seller, text, filled=frozenset({"listing_id"})))
    assert [c.kind for c in result.commands] == [
        "correct_slot", "knowledge_question", "cancel_goal", "small_talk", "human_handoff", "go_back"]
    fix, question, cancel, talk = result.commands[:4]
    assert (fix.slot, fix.value) == ("listing_id", "LSTFYDF12G")  # type: ignore[attr-defined]
    assert question.query == "how long does a listing review take"  # type: ignore[attr-defined]
    assert cancel.goal == "seller.listing_blocked" and talk.act == "thanks"  # type: ignore[attr-defined]
    assert result.act == "correct_slot+knowledge_question+cancel_goal+small_talk+human_handoff+go_back"


@pytest.mark.parametrize(("reading", "text", "message"), [
    (read("start_goal", sop="seller.refund"), "refund me", "is not one of the SOPs"),
    (read("start_goal"), "something", "is not one of the SOPs"),
    (read("start_goal", sop="seller.listing_blocked", also=[wire("start_goal", sop="seller.brand_approval")]),
     "both", "start at most one SOP"),
    (read("answer", slots={"email": "a@b.com"}), "a@b.com", "slot 'email' cannot be set here"),
    (read("answer", slots={"listing_id": "12345"}), "12345", "is not a valid listing_id"),
    (read("answer", slots={"listing_id": "LSTAAAA1111"}), "my id is LSTFYDF12G", "does not appear"),
    (read("knowledge_question", slots={"listing_id": "LSTFYDF12G"}), "LSTFYDF12G?", "slots belong to"),
    (read("knowledge_question", query="x" * 301), "how?", "longer than 300"),
    (read("correct_slot", slots={"listing_id": "LSTFYDF12G"}), "LSTFYDF12G", "slots with a value to correct"),
    (read("set_slots", slots={"listing_id": "LSTFYDF12G"}), "LSTFYDF12G", "the pending one takes answer"),
])
def test_a_reading_that_breaks_a_rule_is_refused(seller: Workspace, reading: Reading, text: str,
                                                 message: str) -> None:
    with pytest.raises(InvalidProposal, match=message):
        check_reading(reading, scope(seller, text))


def test_an_answer_or_cancel_needs_a_running_request_and_unclear_abstains(seller: Workspace) -> None:
    idle = ReadingScope("hi", [x.id for x in seller.sops])
    with pytest.raises(InvalidProposal, match="no question is pending"):
        check_reading(read("answer"), idle)
    with pytest.raises(InvalidProposal, match="no SOP is running, so cancel_goal"):
        check_reading(read("cancel_goal"), idle)
    with pytest.raises(Abstain):
        check_reading(read("unclear"), scope(seller, "hi"))


def test_values_keep_their_slot_form_and_come_from_the_message() -> None:
    otp = SlotType("otp", "digits", digits=6)
    assert check_value(otp, "123456", "the code is 123 456? no wait 123456") == "123456"
    with pytest.raises(InvalidProposal, match="not a valid otp"):
        check_value(otp, "12345", "12345")
    yes = SlotType("has_access", "boolean")
    assert check_value(yes, "yes", "yep still got it") is True and check_value(yes, "no", "nah") is False
    with pytest.raises(InvalidProposal, match="takes yes or no"):
        check_value(yes, "perhaps", "perhaps")
    money = SlotType("budget", "money")
    assert check_value(money, "1500", "about 1.5k baht") == 1500
    with pytest.raises(InvalidProposal, match="not an amount the customer wrote"):
        check_value(money, "2000", "about 1.5k baht")
    choice = SlotType("chosen_item", "choice")
    cands = [{"name": "Viper Mini", "sku": "M1"}, {"name": "G304", "sku": "M2"}]
    assert check_value(choice, "the second one", "I'll take the second", cands) == "G304"
    assert check_value(choice, "none of them", "none of them", cands) is False
    with pytest.raises(InvalidProposal, match="not one of the offered items"):
        check_value(choice, "Deathadder", "the deathadder", cands)


# ---------------------------------------------------------------------------- branches and wording


def test_a_branch_pick_names_one_of_the_decisions_branches(seller: Workspace) -> None:
    decision = next(n for n in sop(seller, "seller.brand_approval").nodes.values() if n.kind == "decision"
                    and any(b.condition == "approved" for b in n.branches))
    chosen = check_branch(BranchPick(choice=1), decision)
    assert (chosen.node, chosen.target, chosen.condition) == (decision.id, decision.branches[0].target, "approved")
    with pytest.raises(InvalidProposal, match="choice 0 is not one of the branches"):
        check_branch(BranchPick(choice=0), decision)
    with pytest.raises(Abstain):
        check_branch(BranchPick(choice=None), decision)


def test_wording_is_cleaned_and_refused_when_it_is_not_a_reply() -> None:
    say = check_wording(Wording(reply="<think>plan</think>Thinking: step 2\nBased on the SOP workflow, I move on. "
                                      "Your OTP is verified."), "Your OTP is verified.")
    assert say.text == "Your OTP is verified."
    with pytest.raises(InvalidProposal, match="empty"):
        check_wording(Wording(reply="<think>only thoughts</think>"), "Hello")
    with pytest.raises(InvalidProposal, match="placeholders"):
        check_wording(Wording(reply="Your listing {listing_id} is active"), "Your listing LST1 is active")
    with pytest.raises(InvalidProposal, match="much longer"):
        check_wording(Wording(reply="word " * 400), "Short draft.")


def test_help_offers_go_before_an_end_in_several_languages() -> None:
    assert strip_help_offers("Done. Is there anything else I can help you with?") == "Done."
    assert strip_help_offers("Listo. ¿Hay algo más en lo que pueda ayudarte?") == "Listo."
    assert strip_help_offers("Fertig. Kann ich Ihnen sonst noch helfen?") == "Fertig."
    assert strip_help_offers("Anything else?") == "Anything else?"  # nothing left: keep the text


def test_clean_reply_unwraps_json_and_fences() -> None:
    assert clean_reply('```json\n{"reply": "Hola"}\n```') == "Hola"
    assert clean_reply("Current node: s3\nYour order has shipped.") == "Your order has shipped."


# ---------------------------------------------------------------------------- parsing a model's text


def test_json_is_found_in_thinking_fences_and_prose() -> None:
    text = 'Sure!<think>hmm</think> Here you go:\n```json\n{"choice": 2}\n```\nHope that helps.'
    assert parse_json_reply(text, BranchPick) == (BranchPick(choice=2), "")
    assert parse_json_reply("", BranchPick) == (None, "the answer is empty")
    parsed, why = parse_json_reply('{"choice": "second"}', BranchPick)
    assert parsed is None and why.startswith("the JSON does not fit the schema: choice")
    assert parse_json_reply('{"choice": 2', BranchPick)[1] == \
        "the answer is not valid JSON (the object is never closed)"


# ---------------------------------------------------------------------------- language


@pytest.mark.parametrize(("text", "lang"), [
    ("why is my listing blocked?", "en"), ("hola, ¿por qué está bloqueado mi anuncio?", "es"),
    ("Ich möchte meine E-Mail ändern, bitte", "de"), ("je veux changer mon adresse email", "fr"),
    ("ทำไมสินค้าของฉันถูกบล็อก", "th"), ("我的商品为什么被封", "zh"), ("LSTFYDF12G", None), ("123456", None),
])
def test_the_language_guess(text: str, lang: str | None) -> None:
    assert guess_language(text) == lang


# ---------------------------------------------------------------------------- hybrid sureness


@pytest.mark.parametrize(("condition", "observation", "sure"), [
    ("its on-hold or onboarding", {"status": "active"}, True),
    ("less than or equal to 72 hrs", {"status": "in-progress", "hours_since_request": 30}, True),
    ("block reason is seller state change", {"block_reason": "pricing policy violation"}, True),
    ("user has access", {"has_old_email_access": False}, True),
    ("yes", {"can_reactivate": True}, True),
    ("yes", {"review": "eligible after a manual review"}, False),
    ("a fix is found", "Restart the router and try again", False),
])
def test_when_the_rules_are_sure_of_a_branch(condition: str, observation: Any, sure: bool) -> None:
    assert branch_is_sure(condition, observation) is sure


# ---------------------------------------------------------------------------- lean prompts


def test_relevant_nodes_are_the_current_its_next_and_the_decision_branches(seller: Workspace) -> None:
    s = sop(seller, "seller.listing_blocked")
    check = next(n for n in s.nodes.values() if n.label == "check listing id status")
    nodes = relevant_nodes(s, check.id)
    decision = s.nodes[check.next]  # type: ignore[index]
    assert [n.id for n in nodes] == [check.id, decision.id, *decision.targets()]
    assert len(nodes) < len(s.nodes) / 3
    assert referenced_keys(nodes) == ["listing_id"]
    assert encode_node(check) == f'{check.id} api "check listing id status"; tool seller.listing_status(listing_id)' \
                                 f"; -> {decision.id}"


def test_memory_beyond_the_last_entries_is_a_count() -> None:
    memory = [MemoryEntry(action=f"step {i}", observation={"i": i}, feedback="fail" if i == 1 else "success")
              for i in range(6)]
    lines = memory_lines(memory, keep=3)
    assert lines[0] == "(3 earlier steps: 2 ok, 1 failed)"
    assert lines[1:] == ['step 3: {"i":3} (ok)', 'step 4: {"i":4} (ok)', 'step 5: {"i":5} (ok)']


def test_token_estimate_counts_characters_framing_and_schema() -> None:
    msgs = [{"role": "system", "content": "x" * 400}, {"role": "user", "content": "y" * 41}]
    assert estimate_tokens(msgs) == 100 + 4 + 11 + 4
    assert estimate_tokens(msgs, BranchPick) > estimate_tokens(msgs)


def test_usage_sums_calls_and_baseline_per_turn() -> None:
    usage = LLMUsage()
    usage.add_turn({"perception": {"brain": {"baseline_tokens": 1000}}, "llm": []})
    usage.add_turn({"perception": {"brain": {"baseline_tokens": 1000}},
                    "llm": [{"purpose": "perceive", "outcome": "accepted", "prompt_tokens_est": 300,
                             "prompt_tokens": 280, "prompt_tokens_source": "server"}]})
    usage.add_turn({"perception": {}, "llm": []})  # a rule-brain turn: not counted
    d = usage.to_dict()
    assert (d["turns"], d["calls"], d["calls_per_turn"]) == (2, 1, 0.5)
    assert (d["prompt_tokens_per_turn"], d["baseline_prompt_tokens_per_turn"], d["prompt_token_saving"]) == \
        (150.0, 1000.0, 0.85)
    assert d["server_prompt_tokens_per_call"] == 280.0
    assert any("85.0% fewer" in line for line in usage.lines())


# ---------------------------------------------------------------------------- grounding of facts


def test_facts_a_rewording_may_not_invent() -> None:
    sources = ["Go to Listings > My Listings", {"ticket_id": "TKT-3F2A1B"}]
    assert ungrounded_facts("Ve a Listings > My Listings; ticket tkt-3f2a1b, within the 72-hour window", sources) == []
    assert ungrounded_facts("Ve a Ajustes > Cuenta, ticket TKT-999999, write to help@shop.example or "
                            "https://shop.example/help", sources) == [
        "https://shop.example/help", "help@shop.example", "TKT-999999", "Ajustes > Cuenta"]


# ---------------------------------------------------------------------------- settings and choosing a brain


def test_settings_from_the_environment() -> None:
    assert LLMSettings.from_env({}) is None
    openai = LLMSettings.from_env({"OPENAI_API_KEY": "sk-x"})
    assert openai is not None and (openai.model, openai.endpoint) == (DEFAULT_OPENAI_MODEL, "https://api.openai.com/v1")
    local = LLMSettings.from_env({"OPENAI_BASE_URL": "http://localhost:11434/v1/", "SOP_LLM_MODEL": "llama3.1",
                                  "SOP_LLM_TIMEOUT_S": "12"})
    assert local == LLMSettings("llama3.1", "http://localhost:11434/v1", LOCAL_KEY, 12.0, 1)
    assert "sk-x" not in openai.describe()


@pytest.mark.parametrize(("env", "message"), [
    ({"OPENAI_BASE_URL": "http://localhost:11434/v1"}, "set SOP_LLM_MODEL"),
    ({"OPENAI_BASE_URL": "localhost:11434", "SOP_LLM_MODEL": "m"}, "must start with http"),
    ({"OPENAI_API_KEY": "k", "SOP_LLM_TIMEOUT_S": "soon"}, "SOP_LLM_TIMEOUT_S must be a number"),
])
def test_settings_that_cannot_work_are_refused_clearly(env: dict[str, str], message: str) -> None:
    with pytest.raises(UserInputError, match=message):
        LLMSettings.from_env(env)


def test_choosing_a_brain(seller: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    assert BRAINS == ("rule", "llm", "hybrid")
    assert type(build_orchestrator(seller.files.root, loaded=seller).brain).__name__ == "RuleBrain"
    with pytest.raises(UserInputError, match="the llm brain needs a language model"):
        build_orchestrator(seller.files.root, brain="llm", loaded=seller)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SOP_LLM_MODEL", "m")
    hybrid = build_orchestrator(seller.files.root, loaded=seller).brain  # configured: hybrid by default
    assert (type(hybrid).__name__, getattr(hybrid, "mode", None)) == ("LLMBrain", "hybrid")
    assert type(build_orchestrator(seller.files.root, brain="rule", loaded=seller).brain).__name__ == "RuleBrain"
    monkeypatch.delenv("SOP_LLM_MODEL")
    with pytest.raises(UserInputError, match="set SOP_LLM_MODEL"):
        build_orchestrator(seller.files.root, loaded=seller)


def test_settings_from_the_chat_form_fall_back_to_the_environment_but_never_leak_its_key() -> None:
    env = {"OPENAI_API_KEY": "sk-env", "SOP_LLM_MODEL": "gpt-4o"}
    assert LLMSettings.from_fields(environ={}) is None
    assert LLMSettings.from_fields(environ=env) == LLMSettings("gpt-4o", None, "sk-env", 30.0, 1)
    local = LLMSettings.from_fields(model="qwen2.5:7b", base_url="http://localhost:11434/v1", environ=env)
    assert local is not None and local.api_key == LOCAL_KEY  # not sk-env
    typed = LLMSettings.from_fields(api_key="sk-form", timeout_s=5, environ=env)
    assert typed == LLMSettings("gpt-4o", None, "sk-form", 5.0, 1)
