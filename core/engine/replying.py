"""The turn's reply: its messages joined, checked against the numbers the sources hold (grounding; an ungrounded
reply is replaced by one built from the tool results), and worded by an LLM brain when the wording is grounded."""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from core.engine.grounding import SourceNumbers, session_sources, ungrounded, ungrounded_facts
from core.engine.processor.turn import Turn, say_to
from core.language import render
from core.understanding import Brain, phrase


def finish_reply(t: Turn, brain: Brain, currency: str, sop_text_numbers: set[float]) -> str:
    """The reply to send for a turn's messages (``sop_text_numbers``: the figures the SOPs and GAR state)."""
    reply = "\n\n".join(m.strip() for m in t.messages if m and m.strip())
    if not reply:
        reply = say_to(t, "rephrase")
    sources = session_sources(t.state) + [c.result for c in t.trace.tool_calls] + [{"computed": t.computed}]
    allowed = SourceNumbers(sources, sop_text_numbers)
    bad = ungrounded(reply, allowed)
    t.trace.grounding = {"checked": True, "ungrounded": bad}
    if bad:
        t.trace.grounding["replaced"] = True
        reply = grounded_fallback(t, currency)
    reply = worded(t, brain, reply, allowed, sources)
    if t.prefs.communication_style == "short":
        reply = reply.replace("\n\n", "\n")
    return reply


def worded(t: Turn, brain: Brain, draft: str, allowed: Container[float], sources: list[Any]) -> str:
    """An LLM brain may word the reply for the customer (their language). The grounding guard is
    code: a figure, id, email, link or menu path that neither the draft nor a tool result holds
    sends the draft (the template answer built from the tool results) instead, and the trace says so."""
    text = phrase(brain, draft, ending=t.state.active_goal is None)
    if not text or text == draft:
        return draft
    bad: list[Any] = [*ungrounded(text, allowed), *ungrounded_facts(text, [draft, *sources])]
    t.trace.grounding["llm_reply"] = {"replaced": bool(bad), "ungrounded": bad}
    if bad:
        t.trace.grounding["llm_reply"]["text"] = text
        return draft
    return text


def grounded_fallback(t: Turn, currency: str) -> str:
    """A reply built from the turn's tool results alone (items, knowledge-base passages), else the pending
    question or a promise to check back."""
    for call in reversed(t.trace.tool_calls):
        if call.ok and render.is_item_list(call.result):
            return render.render_items(call.result, currency)
        if call.ok and render.is_kb_hits(call.result):
            return render.render_kb_answer(call.result)
    goal = t.state.active_goal
    return goal.next_question if goal and goal.next_question else say_to(t, "check_back")
