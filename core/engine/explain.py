"""Why this reply: a turn's trace told in a few plain sentences for the SOP author.

The trace (:class:`core.shared.models.Trace`) holds everything the engine decided; this module says it the
way an author asks about it: what was read from the message, which values were filled, which rule
or SOP step decided, what the tools returned, and what the grounding check changed and why. It reads
the trace alone (a stored trace of any age can be explained) and never the customer-facing reply
machinery, so it cannot change what the customer sees.
"""

from __future__ import annotations

from typing import Any

LIMIT = 120  # characters of one value or result shown in a sentence

ACTS = {  # what made the reply when no SOP step did (Trace.act)
    "greeting": "the reply greets the customer (no request yet)",
    "thanks": "the reply answers a thank-you",
    "goodbye": "the customer said goodbye: the reply closes the conversation",
    "offer_more": "the request is finished: the reply offers more help",
    "capabilities": "nothing matched an SOP: the reply says what the agent can do",
    "kb_answer": "the reply is the knowledge-base passage that answers the question",
    "reprompt": "the pending question is asked again",
    "clarify": "two requests were about as likely: the reply asks which was meant, naming both",
    "cancelled": "the customer cancelled: the request was closed",
    "human_handoff": "the customer asked for a person: the conversation was handed over",
    "unsupported_language": "the message is in a language the store does not take",
}


def explain(trace: dict[str, Any]) -> list[str]:
    """A turn's explanation, one short sentence per aspect (empty aspects left out)."""
    out: list[str] = []
    read = _reading(trace.get("reading") or {}, trace.get("perception") or {})
    if read:
        out.append(read)
    filled = _filled(trace.get("slots") or {})
    if filled:
        out.append(filled)
    decisions = [str(d) for d in trace.get("decisions") or []]
    if decisions:
        out.append("Decided: " + "; ".join(decisions) + ".")
    ops = [op_text(o) for o in trace.get("stack_ops") or []]
    if ops:
        out.append("Goals: " + "; ".join(o for o in ops if o) + ".")
    steps = _steps(trace)
    if steps:
        out.append(steps)
    for call in trace.get("tool_calls") or []:
        out.append(_tool(call))
    for denied in trace.get("denied") or []:
        out.append(f"Denied: {denied.get('tool', '?')} is not in agent {denied.get('agent', '?')!r}'s tools "
                   "(store.yaml).")
    grounding = _grounding(trace.get("grounding") or {})
    if grounding:
        out.append(grounding)
    return out


def _reading(reading: dict[str, Any], perception: dict[str, Any]) -> str:
    commands = [_command(c, perception) for c in reading.get("commands") or []]
    dropped = [f"{_command(c, perception)}, not acted on: {c.get('reason')}" for c in reading.get("dropped") or []]
    parts = [p for p in commands + dropped if p]
    if not parts:
        return ""
    who = "a language model (checked by the rules)" if reading.get("reader") == "model" else "the rules"
    weighed = _weighed(reading.get("considered") or [])
    return f"Read by {who}: " + "; ".join(parts) + "." + (f" {weighed}" if weighed else "")


def _weighed(readings: list[dict[str, Any]]) -> str:
    """The reading chosen over the strongest one not chosen, and why (the trace's ``considered``)."""
    chosen = next((r for r in readings if r.get("chosen")), None)
    other = max((r for r in readings if not r.get("chosen")), key=lambda r: r.get("score", 0.0), default=None)
    if chosen is None or other is None:
        return ""
    return (f"It was read as {chosen.get('reading')} ({float(chosen.get('score') or 0):.2f}) rather than "
            f"{other.get('reading')} ({float(other.get('score') or 0):.2f}): {other.get('why', 'weaker evidence')}.")


def _command(c: dict[str, Any], perception: dict[str, Any]) -> str:
    kind = c.get("command")
    words = _quote(c.get("evidence"))
    if kind == "start_goal":
        runner_up = next((f"; next was {name} {score:.2f}" for name, score in perception.get("intents") or []
                          if name != c.get("sop")), "")
        text = f"a request for {c.get('sop')} (closest to its triggers, similarity {float(c.get('score') or 0):.2f}" \
               f"{runner_up})"
        if c.get("deferred"):
            text += f", then {', '.join(c['deferred'])}"
        return text
    if kind == "answer":
        return f"the answer {_value(c.get('value'))} to “{c.get('question')}”"
    if kind == "set_slots":
        return "values given: " + ", ".join(f"{k} = {_value(v)}" for k, v in (c.get("values") or {}).items()) \
            + (f" (cannot give {', '.join(c['unavailable'])})" if c.get("unavailable") else "")
    if kind == "correct_slot":
        return f"a correction: {c.get('slot')} = {_value(c.get('value'))}"
    if kind == "go_back":
        return f"going back to “{c.get('target')}”"
    if kind == "skip":
        return f"cannot answer “{c.get('question')}”"
    if kind == "cancel_goal":
        return f"cancelling {c.get('goal') or 'the request'} (from {words})"
    if kind == "knowledge_question":
        return f"a side question for the knowledge base: {_quote(c.get('query') or c.get('evidence'))}"
    if kind == "follow_up":
        return f"a follow-up on {c.get('about') or 'the last answer'}" + (f" ({c['sop']})" if c.get("sop") else "")
    if kind == "small_talk":
        return f"small talk ({c.get('act')})"
    if kind == "human_handoff":
        return "a request for a person"
    if kind == "unclear":
        return "nothing to act on" + (f" ({c['why']})" if c.get("why") else "")
    return f"{kind} (from {words})"


def _filled(slots: dict[str, dict[str, Any]]) -> str:
    parts = [f"{goal}: " + ", ".join(f"{k} = {_value(v)}" for k, v in values.items())
             for goal, values in slots.items() if values]
    return ("Filled " + "; ".join(parts) + ".") if parts else ""


def op_text(o: dict[str, Any]) -> str:
    """One goal or stack operation in words ("suspend sales.recommend_item (outranked)")."""
    op, goal = o.get("op"), o.get("goal")
    why = o.get("reason") or o.get("outcome")
    return f"{op} {goal}" + (f" ({why})" if why else "")


def _steps(trace: dict[str, Any]) -> str:
    actions = [str(a) for a in trace.get("actions") or []]
    sops = list(dict.fromkeys(str(p.get("sop")) for p in trace.get("path") or [] if p.get("sop")))
    act = ACTS.get(str(trace.get("act") or ""), "")
    if actions:
        text = (f"SOP {', '.join(sops)} ran: " if sops else "Steps run: ") + " → ".join(f"“{a}”" for a in actions)
        return text + (f"; {act}" if act else "") + "."
    if act:
        return act[0].upper() + act[1:] + "."
    return ""


def _tool(call: dict[str, Any]) -> str:
    args = ", ".join(f"{k}={brief(v)}" for k, v in (call.get("args") or {}).items())
    how = " (scripted)" if call.get("scripted") else " (result reused from an earlier attempt)" \
        if call.get("reused") else ""
    head = f"Tool {call.get('tool')}({args}){how}"
    if call.get("ok", True):
        return f"{head} returned {brief(call.get('result'))}."
    kind = call.get("error_kind") or "failure"
    meaning = {"invalid_input": "the tool says the input is wrong, so the value is asked for again",
               "bad_args": "the call's arguments do not match the tool's parameters (a mistake in the SOP or GAR)",
               "timeout": "it did not answer in time (an outage: retried unless it changes things)",
               "denied": "the agent may not call it"}.get(kind, "an outage of the tool or its service: retried")
    return f"{head} failed ({kind}: {brief(call.get('error'))}): {meaning}."


def _grounding(g: dict[str, Any]) -> str:
    out = []
    if g.get("replaced"):
        out.append("Grounding replaced the draft reply: it stated " + ", ".join(brief(x) for x in g.get("ungrounded")
                                                                                    or []) +
                   ", which no tool result, SOP text or customer message holds")
    llm = g.get("llm_reply") or {}
    if llm.get("replaced"):
        out.append("the model's wording was not used: it stated " + ", ".join(brief(x) for x in llm.get("ungrounded")
                                                                                or []) + " that the draft did not")
    elif llm:
        out.append("a language model worded the reply; every figure in it was checked against the tool results")
    return ("; ".join(out) + ".") if out else ""


def _value(value: Any) -> str:
    return _quote(value) if isinstance(value, str) else brief(value)


def _quote(text: Any) -> str:
    t = " ".join(str(text or "").split())
    return f"“{t if len(t) <= LIMIT else t[:LIMIT - 1] + '…'}”"


def brief(value: Any, limit: int = LIMIT) -> str:
    """A value in one short line: passages by title and heading, items by name, long text cut."""
    if isinstance(value, list) and value and all(isinstance(v, dict) and "snippet" in v for v in value):
        text = f"{len(value)} passage(s): " + ", ".join(
            f"{v.get('title')}" + (f" › {v['heading']}" if v.get("heading") else "")
            + (f" ({float(v['score']):.2f})" if isinstance(v.get("score"), int | float) else "") for v in value[:3])
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        names = [str(v.get("name") or v.get("title") or v.get("sku") or v.get("id") or "?") for v in value[:5]]
        text = f"{len(value)} item(s): " + ", ".join(names) + ("…" if len(value) > 5 else "")
    elif isinstance(value, dict):
        text = "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}"
    else:
        text = str(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"
