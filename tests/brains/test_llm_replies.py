"""Replies in the customer's language, cleaned, and kept honest by the grounding guard in code."""

from __future__ import annotations

from core.engine.build import Workspace
from tests.brains.conftest import OrchFactory
from tests.brains.fake_openai import FakeOpenAI, reading, wording

CUSTOMER = "S1001"
HOLA = "hola, ¿por qué está bloqueado mi anuncio?"


def test_a_spanish_conversation_is_answered_in_spanish_and_cleaned(seller: Workspace, fake: FakeOpenAI,
                                                                   make_orch: OrchFactory) -> None:
    orch = make_orch(seller, fake, "hybrid")
    fake.push(reading("start_goal", sop="seller.listing_blocked", language="es"),
              wording("<think>The seller asks in Spanish; I must ask for the id.</think>"
                      "¿Me podrías dar el ID de tu anuncio? (por ejemplo LSTXXXXXXXXX)"))
    first = orch.handle_message("s1", HOLA, customer_id=CUSTOMER)
    assert first == "¿Me podrías dar el ID de tu anuncio? (por ejemplo LSTXXXXXXXXX)"
    state = orch.load_state("s1")
    assert state is not None and state.active_goal is not None and state.active_goal.type == "seller.listing_blocked"
    fake.push(wording("¡Buenas noticias! Tu anuncio LSTFYDF12G está activo y visible para los compradores. "
                      "¿Hay algo más en lo que pueda ayudarte?"))
    last = orch.handle_message("s1", "LSTFYDF12G", customer_id=CUSTOMER)  # no reading: a well-formed id
    assert last == "¡Buenas noticias! Tu anuncio LSTFYDF12G está activo y visible para los compradores."
    bodies = fake.chat_requests()
    assert [b["response_format"]["json_schema"]["name"] for b in bodies] == ["Reading", "Wording", "Wording"]
    system = bodies[2]["messages"][0]["content"]
    assert "in Spanish" in system and "The conversation ends here" in system
    assert "Good news: your listing LSTFYDF12G is active" in bodies[2]["messages"][1]["content"]  # the draft
    trace = orch.last_trace("s1")
    assert trace is not None and trace["grounding"]["llm_reply"] == {"replaced": False, "ungrounded": []}


def test_a_reworded_reply_with_an_invented_id_is_replaced_by_the_draft(seller: Workspace, fake: FakeOpenAI,
                                                                       make_orch: OrchFactory) -> None:
    orch = make_orch(seller, fake, "hybrid")
    fake.push(reading("start_goal", sop="seller.listing_blocked", language="es"), wording("¿Cuál es el ID?"))
    orch.handle_message("s1", HOLA, customer_id=CUSTOMER)
    fake.push(wording("¡Buenas noticias! Tu anuncio LSTFYDF99Z está activo."))
    reply = orch.handle_message("s1", "LSTFYDF12G", customer_id=CUSTOMER)
    assert reply.startswith("Good news: your listing LSTFYDF12G is active")
    trace = orch.last_trace("s1")
    assert trace is not None
    assert trace["grounding"]["llm_reply"]["replaced"] is True
    assert trace["grounding"]["llm_reply"]["ungrounded"] == ["LSTFYDF99Z"]


def test_a_hallucinated_price_is_replaced_by_the_template_built_from_tool_results(
        demo_ws: Workspace, fake: FakeOpenAI, make_orch: OrchFactory) -> None:
    orch = make_orch(demo_ws, fake, "hybrid")
    fake.push(reading("start_goal", sop="sales.recommend_item", language="es"),
              wording("¿Qué tipo de producto buscas?"))
    orch.handle_message("s1", "Hola, recomiéndame un ratón para juegos")
    fake.push(wording("¿Cuál es tu presupuesto?"))
    assert orch.handle_message("s1", "un mouse") == "¿Cuál es tu presupuesto?"
    fake.push(wording("Te recomiendo el HyperX Pulsefire Haste por solo ฿999, ¡una ganga!"))
    reply = orch.handle_message("s1", "1500")
    trace = orch.last_trace("s1")
    assert trace is not None
    [query] = [c for c in trace["tool_calls"] if c["tool"] == "inventory.query"]
    assert reply.startswith("Here are")  # the template answer, every price from the inventory
    for item in query["result"][:3]:  # the three best matches, as the template shows them
        assert item["name"] in reply
    assert "999" not in reply
    assert trace["grounding"]["llm_reply"]["replaced"] is True
    assert trace["grounding"]["llm_reply"]["ungrounded"] == [999.0]
    assert [r["purpose"] for r in trace["llm"]] == ["phrase"]  # "1500" needs no reading


def test_english_replies_are_not_sent_to_the_model(seller: Workspace, fake: FakeOpenAI,
                                                   make_orch: OrchFactory) -> None:
    orch = make_orch(seller, fake, "llm")
    fake.push(reading("start_goal", sop="seller.brand_approval"))
    reply = orch.handle_message("s1", "what happened to my brand approval request?", customer_id=CUSTOMER)
    assert "request id" in reply.lower()
    assert [b["response_format"]["json_schema"]["name"] for b in fake.chat_requests()] == ["Reading"]
