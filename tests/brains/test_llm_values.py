"""A model's slot values are candidates like the rules' own: each must be of its slot's kind and written by the
customer, or it is refused, the trace says which and why, and the slot keeps what the rules read (or stays
missing). Written on a members' desk of our own (one question asking three values), with the fake
OpenAI-compatible server answering each reading by the customer's words.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from core.engine.build import Workspace, load_workspace
from core.engine.orchestrator import Orchestrator
from core.retrieval.embedding import CachedEmbedder
from tests.brains.conftest import OrchFactory
from tests.brains.fake_openai import FakeOpenAI, Reply, abstain, reading, schema_name

SOP_ID = "club.update_contact"
STORE = """name: Harbor Rowing Club
currency: USD
region: US
languages: [en]
agents:
  desk:
    goals: "club.*"
    tools: []
"""
GAR = """action,action_type,user_interaction_metadata,api,params
ask customer for member id and email and phone,ask_user_input,"the member id, the email and the phone number, \
e.g. ana_ruiz_2281, ana@example.com, 415 555 0142",,member_id|email|phone
tell customer the contact details are saved,message_to_user,"Thanks {member_id}: we will write to {email} \
and call {phone}.",,
"""
SOP = """---
id: club.update_contact
title: Update my contact details
slots:
  member_id: id(ana_ruiz_2281)
triggers:
  - I want to update my contact details
  - change the email and phone on my membership
---
ask customer for member id and email and phone
tell customer the contact details are saved
"""
START = "I want to update my contact details"
ANSWER = "tom_berg_5512, tom@berg.io, 415 555 0199"
RIGHT = {"member_id": "tom_berg_5512", "email": "tom@berg.io", "phone": "+1 415-555-0199"}
ID_HINT = "the member id like ana_ruiz_2281"


@pytest.fixture(scope="module")
def club(tmp_path_factory: pytest.TempPathFactory, embedder: CachedEmbedder) -> Workspace:
    root = tmp_path_factory.mktemp("club")
    (root / "sops").mkdir()
    (root / "store.yaml").write_text(STORE, encoding="utf-8")
    (root / "gar.csv").write_text(GAR, encoding="utf-8")
    (root / "sops" / "contact.sop").write_text(SOP, encoding="utf-8")
    ws = load_workspace(root, embedder)
    assert not [p for p in ws.problems if ": error: " in str(p) or ": warning: " in str(p)]
    kinds = {k: v.kind for k, v in ws.types[SOP_ID].items()}
    assert kinds == {"member_id": "id", "email": "email", "phone": "phone"}
    return ws


Responder = Callable[[dict[str, Any]], Reply]


def answers(said: str, first: dict[str, str], again: dict[str, str] | None = None) -> Responder:
    """A responder: the model's answer to ``said`` proposes ``first`` (``again`` when it is asked once more,
    after a refusal; default the same), 'cannot tell' for everything else."""

    def respond(body: dict[str, Any]) -> Reply:
        if schema_name(body) == "Reading":
            user = next(m["content"] for m in body["messages"] if m["role"] == "user")
            if user.rsplit("Customer: ", 1)[-1] == said:
                retry = any(m["role"] == "assistant" for m in body["messages"])
                return reading("answer", slots=again if retry and again is not None else first)
        return abstain(body)

    return respond


@pytest.fixture()
def desk(club: Workspace, fake: FakeOpenAI, make_orch: OrchFactory) -> Callable[..., Orchestrator]:
    """An orchestrator on the club whose model reads ``said`` as ``first`` (then ``again``), asked the
    question of three values already."""

    def make(said: str, first: dict[str, str], again: dict[str, str] | None = None, *,
             brain: str = "llm") -> Orchestrator:
        fake.responder = answers(said, first, again)
        orch = make_orch(club, fake, brain)
        orch.handle_message("s", START)
        goal = orch.load_state("s").active_goal
        assert goal is not None and goal.type == SOP_ID and goal.pending is not None
        return orch

    return make


def turn(orch: Orchestrator, text: str) -> dict[str, Any]:
    orch.handle_message("s", text)
    found = orch.last_trace("s")
    assert found is not None
    return found


def slots(orch: Orchestrator) -> dict[str, Any]:
    state = orch.load_state("s")
    assert state is not None
    goal = state.latest_goal(SOP_ID)
    assert goal is not None
    return {k: goal.slots.get(k) for k in ("member_id", "email", "phone")}


def readings(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in trace["llm"] if r["purpose"] == "perceive"]


# ---------------------------------------------------------------------------- (a) assigned


def test_a_models_values_for_one_answer_go_to_their_own_slots(desk: Callable[..., Orchestrator]) -> None:
    """The model copies the three values as written ("415 555 0199" for a phone the slot holds as
    "+1 415-555-0199"): its reading is accepted at once, and each value fills the slot it named."""
    orch = desk(ANSWER, {"member_id": "tom_berg_5512", "email": "tom@berg.io", "phone": "415 555 0199"})
    trace = turn(orch, ANSWER)
    [call] = readings(trace)
    assert call["outcome"] == "accepted" and "refused" not in call
    assert trace["reading"]["reader"] == "model"
    [answer] = trace["reading"]["commands"]
    assert answer["command"] == "answer" and answer["value"] == RIGHT
    assert slots(orch) == RIGHT
    assert "refused" not in trace["perception"]["brain"]


def test_the_models_reading_is_the_one_acted_on(desk: Callable[..., Orchestrator], club: Workspace,
                                                make_orch: OrchFactory) -> None:
    """Where the rules would take the first phone number of the message, the model's reading (the new one)
    fills the slot."""
    said = "tom_berg_5512, tom@berg.io, and the phone: 415 555 0142 is my old one, use 415 555 0199"
    rules = make_orch(club, None, "rule")
    rules.handle_message("s", START)
    rules.handle_message("s", said)
    assert slots(rules)["phone"] == "+1 415-555-0142"  # what the rules alone read

    orch = desk(said, {"member_id": "tom_berg_5512", "email": "tom@berg.io", "phone": "415 555 0199"})
    trace = turn(orch, said)
    assert trace["reading"]["reader"] == "model"
    assert slots(orch) == RIGHT


# ---------------------------------------------------------------------------- (b) a value of another kind


WRONG_KIND = [
    pytest.param({"member_id": "tom@berg.io", "email": "tom@berg.io", "phone": "415 555 0199"},
                 [{"slot": "member_id", "value": "tom@berg.io",
                   "why": f"'tom@berg.io' is not a valid member_id ({ID_HINT})"}], id="an email as the member id"),
    pytest.param({"member_id": "tom_berg_5512", "email": "415 555 0199", "phone": "415 555 0199"},
                 [{"slot": "email", "value": "415 555 0199",
                   "why": "'415 555 0199' is not a valid email (the email like ana@example.com)"}],
                 id="a phone as the email"),
    pytest.param({"member_id": "tom@berg.io", "email": "415 555 0199", "phone": "tom_berg_5512"},
                 [{"slot": "member_id", "value": "tom@berg.io",
                   "why": f"'tom@berg.io' is not a valid member_id ({ID_HINT})"},
                  {"slot": "email", "value": "415 555 0199",
                   "why": "'415 555 0199' is not a valid email (the email like ana@example.com)"},
                  {"slot": "phone", "value": "tom_berg_5512",
                   "why": "'tom_berg_5512' is not a valid phone (the phone number like 415 555 0142)"}],
                 id="every value in another's slot"),
]


@pytest.mark.parametrize(("proposed", "refused"), WRONG_KIND)
def test_a_value_of_another_kind_is_refused_and_the_rules_fill_the_slot(
        desk: Callable[..., Orchestrator], fake: FakeOpenAI, proposed: dict[str, str],
        refused: list[dict[str, str]]) -> None:
    orch = desk(ANSWER, proposed)
    trace = turn(orch, ANSWER)
    first, second = readings(trace)  # refused, told why, refused again: the rules read the message
    assert first["outcome"] == second["outcome"] == "invalid"
    assert first["refused"] == second["refused"] == refused
    assert second["fallback"] == "rule brain"
    assert trace["perception"]["brain"]["refused"] == refused
    assert trace["reading"]["reader"] == "rules"
    retry = fake.chat_requests()[-1]["messages"][-1]["content"]
    assert all(r["why"] in retry for r in refused)  # the model is told every refused value at once
    assert slots(orch) == RIGHT  # not the model's value: the customer's, as the rules read it


def test_a_value_of_another_kind_leaves_the_slot_missing_when_the_customer_gave_none(
        desk: Callable[..., Orchestrator]) -> None:
    """Hybrid: a reply without the member id does not fit the question, so the model is asked; its email as
    the member id is refused, and the question waits for the member id."""
    said = "tom@berg.io and 415 555 0199, member id to follow"
    orch = desk(said, {"member_id": "tom@berg.io", "email": "tom@berg.io", "phone": "415 555 0199"},
                brain="hybrid")
    trace = turn(orch, said)
    assert trace["perception"]["brain"]["reason"] == "the reply does not fit the pending question"
    assert [r["outcome"] for r in readings(trace)] == ["invalid", "invalid"]
    assert trace["perception"]["brain"]["refused"] == [
        {"slot": "member_id", "value": "tom@berg.io", "why": f"'tom@berg.io' is not a valid member_id ({ID_HINT})"}]
    assert slots(orch) == {"member_id": None, "email": "tom@berg.io", "phone": "+1 415-555-0199"}
    goal = orch.load_state("s").active_goal
    assert goal is not None and goal.pending is not None  # still asking


def test_a_model_told_why_its_value_was_refused_may_correct_it(desk: Callable[..., Orchestrator],
                                                                fake: FakeOpenAI) -> None:
    """The reason sent back names the slot's own part of the question's hint, and the corrected reading is
    used."""
    orch = desk(ANSWER, {"member_id": "tom@berg.io", "email": "tom@berg.io", "phone": "415 555 0199"},
                {"member_id": "tom_berg_5512", "email": "tom@berg.io", "phone": "415 555 0199"})
    trace = turn(orch, ANSWER)
    first, second = readings(trace)
    assert (first["outcome"], second["outcome"]) == ("invalid", "accepted")
    retry = fake.chat_requests()[-1]["messages"][-1]["content"]
    assert f"'tom@berg.io' is not a valid member_id ({ID_HINT})" in retry
    assert trace["reading"]["reader"] == "model" and "refused" not in trace["perception"]["brain"]
    assert slots(orch) == RIGHT


# ---------------------------------------------------------------------------- (c) a value never written


NEVER_WRITTEN = [
    pytest.param("member_id", "tom_berg_5521", "'tom_berg_5521'", id="a member id with digits swapped"),
    pytest.param("email", "tom@berg.com", "'tom@berg.com'", id="an email on another domain"),
    pytest.param("phone", "415 555 0100", "'+1 415-555-0100'", id="another phone number"),
]


@pytest.mark.parametrize(("slot", "invented", "shown"), NEVER_WRITTEN)
def test_a_value_the_customer_never_wrote_is_refused(desk: Callable[..., Orchestrator], slot: str, invented: str,
                                                     shown: str) -> None:
    proposed = {"member_id": "tom_berg_5512", "email": "tom@berg.io", "phone": "415 555 0199", slot: invented}
    orch = desk(ANSWER, proposed)
    trace = turn(orch, ANSWER)
    want = [{"slot": slot, "value": invented,
             "why": f"{shown} does not appear in the customer's message; copy values, never invent them"}]
    assert [r.get("refused") for r in readings(trace)] == [want, want]
    assert trace["perception"]["brain"]["refused"] == want
    assert trace["reading"]["reader"] == "rules"
    assert slots(orch) == RIGHT  # what the customer wrote
