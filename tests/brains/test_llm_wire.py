"""The LLM brain against a local OpenAI-compatible server: real SDK, real wire format, scripted replies."""

from __future__ import annotations

from typing import Any

from core.engine.build import Workspace
from core.tools.gateway import ToolScript
from tests.brains.conftest import OrchFactory
from tests.brains.fake_openai import FakeOpenAI, Reply, command, content, error, pick, reading

CUSTOMER = "S1001"  # an active seller of the demo backend
OPENING = "why is my listing blocked?"


def user_prompt(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def records(trace: dict[str, Any] | None) -> list[dict[str, Any]]:
    assert trace is not None
    return list(trace["llm"])


# ---------------------------------------------------------------------------- hybrid: rules first


def test_hybrid_makes_no_call_when_the_rules_are_sure(seller: Workspace, fake: FakeOpenAI,
                                                      make_orch: OrchFactory) -> None:
    orch = make_orch(seller, fake, "hybrid")
    orch.handle_message("s1", OPENING, customer_id=CUSTOMER)  # an exact trigger
    reply = orch.handle_message("s1", "LSTFYDF12G", customer_id=CUSTOMER)  # a well-formed id
    assert "LSTFYDF12G is active" in reply
    assert fake.requests == []
    trace = orch.last_trace("s1")
    assert trace is not None and trace["llm"] == []
    assert trace["perception"]["brain"]["llm"] == "not needed"
    assert trace["perception"]["brain"]["baseline_tokens"] > 500


def test_request_body_carries_the_schema_and_only_the_current_and_next_nodes(
        seller: Workspace, fake: FakeOpenAI, make_orch: OrchFactory) -> None:
    orch = make_orch(seller, fake, "hybrid")
    orch.handle_message("s1", OPENING, customer_id=CUSTOMER)
    fake.push(reading("small_talk", act="other", usage={"prompt_tokens": 321, "completion_tokens": 9}))
    reply = orch.handle_message("s1", "hmm", customer_id=CUSTOMER)
    assert "listing id" in reply.lower()  # the question again
    [body] = fake.chat_requests()
    assert body["model"] == "fake-model" and body["temperature"] == 0
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Reading"
    assert fmt["json_schema"]["strict"] is True
    kinds = fmt["json_schema"]["schema"]["$defs"]["WireCommand"]["properties"]["command"]["enum"]
    assert {"answer", "correct_slot", "cancel_goal", "human_handoff", "unclear"} <= set(kinds)
    prompt = user_prompt(body)
    sop = next(s for s in seller.sops if s.id == "seller.listing_blocked")
    goal = orch.load_state("s1").active_goal  # type: ignore[union-attr]
    pending = sop.nodes[goal.pending]  # type: ignore[union-attr, index]
    assert f'Pending: {pending.id} ask "ask user to provide listing id"' in prompt
    assert f"Next: {pending.next} api " in prompt
    for elsewhere in ("check block reason", "show message onboarding", "create ticket", "check user status",
                      "ask user to provide request id", "ask user to provide old email"):
        assert elsewhere not in prompt.split("Memory:")[0], elsewhere  # no other node of any SOP
    assert '"customer_id"' not in prompt  # a context key neither node references
    assert prompt.endswith("Customer: hmm")
    [rec] = records(orch.last_trace("s1"))
    assert rec["purpose"] == "perceive" and rec["outcome"] == "accepted"
    assert rec["prompt_tokens"] == 321 and rec["prompt_tokens_source"] == "server"
    assert 100 < rec["prompt_tokens_est"] < orch.last_trace("s1")["perception"]["brain"]["baseline_tokens"] / 2


def test_a_value_the_rules_cannot_read_is_taken_from_the_model(seller: Workspace, fake: FakeOpenAI,
                                                              make_orch: OrchFactory) -> None:
    orch = make_orch(seller, fake, "hybrid")
    orch.handle_message("s1", OPENING, customer_id=CUSTOMER)
    fake.push(reading("answer", slots={"listing_id": "LSTFYDF12G"}))
    reply = orch.handle_message("s1", "umm the listing is lst fydf 12g i think", customer_id=CUSTOMER)
    assert "LSTFYDF12G is active" in reply
    trace = orch.last_trace("s1")
    assert trace is not None
    assert [c["args"] for c in trace["tool_calls"] if c["tool"] == "seller.listing_status"] == \
        [{"listing_id": "LSTFYDF12G"}]
    answer = {"command": "answer", "evidence": "umm the listing is lst fydf 12g i think",
              "question": "ask user to provide listing id", "value": {"listing_id": "LSTFYDF12G"}}
    assert records(trace)[0]["commands"] == [answer]  # the model's reading, as checked
    assert trace["reading"]["reader"] == "model" and trace["reading"]["commands"] == [answer]  # and acted on


def test_a_question_is_searched_with_the_models_query(seller: Workspace, fake: FakeOpenAI,
                                                      make_orch: OrchFactory) -> None:
    orch = make_orch(seller, fake, "hybrid")
    orch.handle_message("s1", OPENING, customer_id=CUSTOMER)
    fake.push(reading("knowledge_question", query="how to find my listing id"))
    orch.handle_message("s1", "dunno where that thing is honestly", customer_id=CUSTOMER)
    trace = orch.last_trace("s1")
    assert trace is not None
    kb = [c for c in trace["tool_calls"] if c["tool"] == "knowledge_base.search"]
    assert [c["args"]["query"] for c in kb] == ["how to find my listing id"]
    assert trace["actions"][-2:] == ["seek external knowledge", "ask user to provide listing id"]


# ---------------------------------------------------------------------------- model misbehaviour


def test_malformed_json_is_retried_once_with_the_error(seller: Workspace, fake: FakeOpenAI,
                                                       make_orch: OrchFactory) -> None:
    orch = make_orch(seller, fake, "hybrid")
    orch.handle_message("s1", OPENING, customer_id=CUSTOMER)
    fake.push(content('{"commands": [{"command": "answer", "slots": [{"name": "listing_id", "value": "LSTFYDF12G"'),
              reading("answer", slots={"listing_id": "LSTFYDF12G"}))
    reply = orch.handle_message("s1", "it is lst-fydf-12g", customer_id=CUSTOMER)
    assert "LSTFYDF12G is active" in reply
    first, second = fake.chat_requests()
    assert second["messages"][:2] == first["messages"]
    assert second["messages"][2]["role"] == "assistant"
    assert "not valid JSON" in second["messages"][3]["content"]
    assert [r["outcome"] for r in records(orch.last_trace("s1"))] == ["invalid", "accepted"]


def test_prose_instead_of_json_twice_leaves_the_decision_to_the_rules(seller: Workspace, fake: FakeOpenAI,
                                                                       make_orch: OrchFactory) -> None:
    orch = make_orch(seller, fake, "hybrid")
    orch.handle_message("s1", OPENING, customer_id=CUSTOMER)
    fake.push(content("Sure! The seller wants to know about a listing."), content("I think it's an answer."))
    reply = orch.handle_message("s1", "blah blah", customer_id=CUSTOMER)
    assert "didn't catch that" in reply and "a listing id like LST" in reply  # the rule brain: ask again
    recs = records(orch.last_trace("s1"))
    assert [r["outcome"] for r in recs] == ["invalid", "invalid"]
    assert "not a JSON object" in recs[0]["error"] and recs[1]["fallback"] == "rule brain"
    state = orch.load_state("s1")
    assert state is not None and state.version == 2  # the turn committed normally


def test_an_invented_action_or_sop_is_rejected(seller: Workspace, fake: FakeOpenAI, make_orch: OrchFactory) -> None:
    orch = make_orch(seller, fake, "hybrid")
    fake.push(content({"commands": [command("refund")], "language": "en"}),
              reading("start_goal", sop="seller.refund_everything"))
    reply = orch.handle_message("s1", "I'd like all my money back for everything", customer_id=CUSTOMER)
    assert "I can help you" in reply  # the rules: no SOP matches
    recs = records(orch.last_trace("s1"))
    assert "commands.0.command: Input should be" in recs[0]["error"]
    assert "'seller.refund_everything' is not one of the SOPs" in recs[1]["error"]
    state = orch.load_state("s1")
    assert state is not None and state.goals == {}


def test_a_value_the_customer_never_wrote_is_rejected(seller: Workspace, fake: FakeOpenAI,
                                                      make_orch: OrchFactory) -> None:
    orch = make_orch(seller, fake, "hybrid")
    orch.handle_message("s1", OPENING, customer_id=CUSTOMER)
    fake.push(reading("answer", slots={"listing_id": "LSTFYDF12G"}), reading("unclear"))
    reply = orch.handle_message("s1", "the one from last week", customer_id=CUSTOMER)
    assert "didn't catch that" in reply and "a listing id like LST" in reply
    trace = orch.last_trace("s1")
    assert trace is not None and not any(c["tool"] == "seller.listing_status" for c in trace["tool_calls"])
    recs = records(trace)
    assert "does not appear in the customer's message" in recs[0]["error"]
    assert recs[1]["outcome"] == "abstained"
    assert "does not appear" in fake.chat_requests()[1]["messages"][-1]["content"]


def test_a_500_then_success_is_retried_by_the_transport(seller: Workspace, fake: FakeOpenAI,
                                                        make_orch: OrchFactory) -> None:
    orch = make_orch(seller, fake, "hybrid")
    orch.handle_message("s1", OPENING, customer_id=CUSTOMER)
    fake.push(error(500), reading("answer", slots={"listing_id": "LSTFYDF12G"}))
    reply = orch.handle_message("s1", "umm lst fydf 12g", customer_id=CUSTOMER)
    assert "LSTFYDF12G is active" in reply
    assert len(fake.chat_requests()) == 2
    assert [r["outcome"] for r in records(orch.last_trace("s1"))] == ["accepted"]


def test_a_server_that_rejects_response_format_is_asked_in_the_prompt(seller: Workspace, fake: FakeOpenAI,
                                                                       make_orch: OrchFactory) -> None:
    orch = make_orch(seller, fake, "hybrid")
    orch.handle_message("s1", OPENING, customer_id=CUSTOMER)
    fake.push(error(400, "response_format json_schema is not supported"),
              content("<think>the seller typed an id with spaces</think>\n```json\n"
                      '{"commands": [{"command": "answer", "sop": null, "slots": [{"name": "listing_id", '
                      '"value": "LSTFYDF12G"}], "query": null, "act": null}], "language": "en"}\n```'))
    reply = orch.handle_message("s1", "umm lst fydf 12g", customer_id=CUSTOMER)
    assert "LSTFYDF12G is active" in reply
    first, second = fake.chat_requests()
    assert "response_format" in first and "response_format" not in second
    [rec] = records(orch.last_trace("s1"))
    assert rec["outcome"] == "accepted" and rec["schema_sent"] is False


def test_a_chat_completion_that_is_not_one_falls_back_to_the_rules(seller: Workspace, fake: FakeOpenAI,
                                                                   make_orch: OrchFactory) -> None:
    orch = make_orch(seller, fake, "hybrid")
    orch.handle_message("s1", OPENING, customer_id=CUSTOMER)
    fake.push(Reply(status=200, body=["not", "a", "completion"]), Reply(status=200, body={"choices": []}))
    reply = orch.handle_message("s1", "hmm", customer_id=CUSTOMER)
    assert "listing id" in reply.lower()
    assert [r["error"] for r in records(orch.last_trace("s1"))] == ["the server's answer is not a chat completion"] * 2


# ---------------------------------------------------------------------------- decisions


BLOCKED = "LSTBLKPRC01"  # blocked for a pricing violation; the reactivation check is scripted below
UNCLEAR_CHECK = ToolScript({"seller.reactivation_check": {"result": {"review": "eligible after a manual review"}}})


def test_an_unclear_observation_is_decided_by_the_models_pick(seller: Workspace, fake: FakeOpenAI,
                                                              make_orch: OrchFactory) -> None:
    orch = make_orch(seller, fake, "hybrid")
    orch.handle_message("s1", OPENING, customer_id=CUSTOMER)
    fake.push(pick(2))
    reply = orch.handle_message("s1", BLOCKED, customer_id=CUSTOMER, script=UNCLEAR_CHECK)
    assert "cannot be reactivated" in reply
    [body] = fake.chat_requests()
    assert body["response_format"]["json_schema"]["name"] == "BranchPick"
    assert user_prompt(body).endswith("Branches:\n1. yes\n2. no\n3. else")
    assert "eligible after a manual review" in user_prompt(body)
    [rec] = records(orch.last_trace("s1"))
    assert rec["commands"][0]["command"] == "choose_branch" and rec["commands"][0]["condition"] == "no"


def test_an_invented_branch_is_rejected_and_the_rules_decide(seller: Workspace, fake: FakeOpenAI,
                                                             make_orch: OrchFactory) -> None:
    orch = make_orch(seller, fake, "hybrid")
    orch.handle_message("s1", OPENING, customer_id=CUSTOMER)
    fake.push(pick(42), pick(7))
    reply = orch.handle_message("s1", BLOCKED, customer_id=CUSTOMER, script=UNCLEAR_CHECK)
    assert "can be reactivated" in reply  # the rule brain reads a non-empty result as yes
    recs = records(orch.last_trace("s1"))
    assert [r["error"] for r in recs] == ["choice 42 is not one of the branches 1-3",
                                          "choice 7 is not one of the branches 1-3"]


# ---------------------------------------------------------------------------- an endpoint that fails


def _assert_nothing_changed(orch: Any, reply: str, what: str) -> None:
    assert "The language model at http://127.0.0.1:" in reply and what in reply
    assert "nothing was changed" in reply
    state = orch.load_state("s1")
    assert state is not None and state.version == 1 and state.turn == 1
    trace = orch.last_trace("s1")
    assert trace is not None and trace["turn"] == 1


def test_an_unreachable_endpoint_abandons_the_turn_and_saves_nothing(seller: Workspace, make_orch: OrchFactory) -> None:
    with FakeOpenAI() as gone:
        url = gone.base_url  # a port that was just free: nothing listens there once the server is closed
    orch = make_orch(seller, None, "hybrid", base_url=url, max_retries=0)
    orch.handle_message("s1", OPENING, customer_id=CUSTOMER)
    reply = orch.handle_message("s1", "hmm", customer_id=CUSTOMER)
    _assert_nothing_changed(orch, reply, "is unreachable")


def test_a_timeout_abandons_the_turn_and_saves_nothing(seller: Workspace, fake: FakeOpenAI,
                                                       make_orch: OrchFactory) -> None:
    orch = make_orch(seller, fake, "hybrid", timeout_s=0.3, max_retries=0)
    orch.handle_message("s1", OPENING, customer_id=CUSTOMER)
    fake.push(reading("small_talk", act="other", delay_s=1.5))
    reply = orch.handle_message("s1", "hmm", customer_id=CUSTOMER)
    _assert_nothing_changed(orch, reply, "did not answer in time")


def test_a_refused_key_is_named(seller: Workspace, fake: FakeOpenAI, make_orch: OrchFactory) -> None:
    orch = make_orch(seller, fake, "hybrid")
    orch.handle_message("s1", OPENING, customer_id=CUSTOMER)
    fake.push(error(401, "Incorrect API key provided: sk-test-0123456789"))
    reply = orch.handle_message("s1", "hmm", customer_id=CUSTOMER)
    _assert_nothing_changed(orch, reply, "refused the API key")
    assert "sk-test" not in reply and "Incorrect API key" not in reply  # the server's words stay in the log


def test_a_failure_after_a_tool_ran_lets_the_rules_finish_the_turn(seller: Workspace, fake: FakeOpenAI,
                                                                   make_orch: OrchFactory) -> None:
    orch = make_orch(seller, fake, "hybrid")
    orch.handle_message("s1", OPENING, customer_id=CUSTOMER)
    fake.push(error(503), error(503))  # the transport's one retry fails too
    reply = orch.handle_message("s1", BLOCKED, customer_id=CUSTOMER, script=UNCLEAR_CHECK)
    assert "can be reactivated" in reply  # the rules decided the branch
    state = orch.load_state("s1")
    assert state is not None and state.version == 2  # the tools' results are kept: the turn committed
    [rec] = records(orch.last_trace("s1"))
    assert rec["outcome"] == "unavailable" and rec["kind"] == "server_error"
    assert rec["fallback"] == "rule brain for the rest of this turn"


# ---------------------------------------------------------------------------- llm mode


def test_llm_mode_reads_every_message_and_decides_every_branch(seller: Workspace, fake: FakeOpenAI,
                                                                make_orch: OrchFactory) -> None:
    orch = make_orch(seller, fake, "llm")
    fake.push(reading("start_goal", sop="seller.listing_blocked"), pick(2),  # onboarding | active or on-hold
              reading("answer", slots={"listing_id": "LSTFYDF12G"}), pick(2))  # inactive | active | blocked
    orch.handle_message("s1", OPENING, customer_id=CUSTOMER)
    reply = orch.handle_message("s1", "LSTFYDF12G", customer_id=CUSTOMER)
    assert "LSTFYDF12G is active" in reply
    assert [b["response_format"]["json_schema"]["name"] for b in fake.chat_requests()] == \
        ["Reading", "BranchPick", "Reading", "BranchPick"]
    trace = orch.last_trace("s1")
    assert trace is not None and trace["perception"]["brain"]["llm"] == "used: answer"
