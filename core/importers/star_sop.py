"""A STAR flowchart as a JSON node SOP (:mod:`core.importers.star`): asks, queries, messages and the chart's
implicit branches as decision nodes; the node descriptions, message templates and example requests."""

from __future__ import annotations

import re
from typing import Any

from core.importers.star_flow import Ask, Flow, Query
from core.importers.star_format import StarTask
from core.language import text as T

STAR_PLACEHOLDER = re.compile(r"\{(\w+)(?::[^}]*)?\}")
CAPABILITY = re.compile(r"\bonly able to (.+?)[.!]*$", re.I | re.S)


def slug(text: str) -> str:
    return "_".join(T.words(text.replace("-", " "))) or "star"


def build_sop(flow: Flow, sop_id: str, agent: str, tool: str) -> dict[str, Any]:
    """The chart as a JSON node SOP (ARCHITECTURE.md §4)."""
    task = flow.task
    title = title_of(task.name)
    nodes: dict[str, dict[str, Any]] = {}
    for ask in flow.asks.values():
        nodes[ask.id] = _ask_node(flow, ask, _after_ask(flow, ask, nodes))
    for q in flow.queries.values():
        nodes[q.id] = _query_node(flow, q, tool, _after_query(flow, q, nodes))
    for m in [*flow.messages, *([flow.nothing_found] if flow.nothing_found else [])]:
        verb = "Offer more help" if m in flow.offers else "Tell the customer"
        nodes[m] = {"id": m, "type": "action", "description": f"{verb}: {flat(task.replies.get(m, m))}",
                    "messageTemplate": template(flow, m), "nextNodes": [flow.next_of(m) or "end"]}
    nodes["end"] = {"id": "end", "type": "end", "description": "Done"}
    capability = _capability(task)
    about = re.sub(r"^help you(?: with)? ", "", capability, flags=re.I) or title
    return {"id": sop_id, "name": title, "description": about[:1].upper() + about[1:],
            "version": "1.0", "agent": agent, "priority": 1, "triggers": _triggers([task.name, task.alias], capability),
            "startNode": flow.start if flow.start in nodes else "end", "nodes": _ordered(nodes, flow.start)}


def _ordered(nodes: dict[str, dict[str, Any]], start: str) -> dict[str, dict[str, Any]]:
    """Nodes in reading order: depth first from the start, unreachable ones last."""
    order: list[str] = []
    todo = [start]
    while todo:
        nid = todo.pop(0)
        if nid in order or nid not in nodes:
            continue
        order.append(nid)
        todo = list(nodes[nid].get("nextNodes", [])) + todo
    return {n: nodes[n] for n in order + [n for n in nodes if n not in order]}


def _ask_node(flow: Flow, ask: Ask, nxt: str) -> dict[str, Any]:
    return {"id": ask.id, "type": "action", "description": ask_description(ask),
            "messageTemplate": template(flow, ask.id), "resultKey": ask.slot + ("?" if ask.optional else ""),
            "nextNodes": [nxt]}


def ask_description(ask: Ask) -> str:
    """What a valid answer is, in words the engine types slots from (options, numbers, yes/no)."""
    if ask.yes_no or ask.field is None:
        return f"Ask the customer whether to {ask.slot.replace('_', ' ')} (yes or no)" if ask.yes_no else \
            f"Ask the customer for their {ask.slot.replace('_', ' ')}"
    f = ask.field
    label = f.label.lower()
    if f.categories:
        options = ", ".join(f.categories[:-1]) + (" or " if len(f.categories) > 1 else "") + f.categories[-1]
        return f"Ask the customer for the {label}, one of {options}"
    if f.type.lower() in ("integer", "int", "number"):
        span = f" from {f.minimum} to {f.maximum}" if f.minimum is not None and f.maximum is not None else ""
        counted = re.search(r"\bhow many \w+", ask.question, re.I)  # "for how many people" says what it counts
        unit = f" ({counted.group(0).lower()})" if counted else ""
        return f"Ask the customer for the {label}, a number{span}{unit}"
    if f.type.lower() == "longstring":
        return f"Ask the customer to describe the {label} in their own words"
    return f"Ask the customer for their {label}"


def _after_ask(flow: Flow, ask: Ask, nodes: dict[str, dict[str, Any]]) -> str:
    nxt = flow.next_of(ask.id) or "end"
    if ask.id in flow.answers:
        by = {o.kind: flow.next_of(o.id) or "end" for o in flow.answers[ask.id]}
        return _decision(nodes, f"if_{ask.slot}", f"Did the customer say yes to {ask.id}?",
                         f"context.{ask.slot} === true", by.get("yes", "end"), by.get("no", "end"))
    if ask.id in flow.unable:
        other = flow.next_of(flow.unable[ask.id].id) or "end"
        return _decision(nodes, f"if_{ask.slot}_given", f"Could the customer give their {ask.slot.replace('_', ' ')}?",
                         f"context.{ask.slot} != null", nxt, other)
    return nxt


def _after_query(flow: Flow, q: Query, nodes: dict[str, dict[str, Any]]) -> str:
    nxt = flow.next_of(q.id) or "end"
    outcomes = flow.results.get(q.id, [])
    if outcomes:
        by = {o.kind: flow.next_of(o.id) or "end" for o in outcomes}
        nxt = _decision(nodes, f"if_{q.id}_succeeded", f"Did {q.id} succeed?", f"context.{q.id}.success === true",
                        by.get("positive", "end"), by.get("negative", "end"))
    if flow.nothing_found:
        nxt = _decision(nodes, f"if_{q.id}_found", f"Did {q.id} find anything?", f"context.{q.id}.found === true",
                        nxt, flow.nothing_found)
    return nxt


def _decision(nodes: dict[str, dict[str, Any]], nid: str, desc: str, cond: str, yes: str, no: str) -> str:
    nodes[nid] = {"id": nid, "type": "decision", "description": desc, "condition": cond, "nextNodes": [yes, no]}
    return nid


def _query_node(flow: Flow, q: Query, tool: str, nxt: str) -> dict[str, Any]:
    """The query with every API input from its slot: those the chart asks for (required ones as it
    requires them), and the others as optional values the customer may give unasked ("a premium
    bike"), the slots of the GAR's ask rows."""
    api = flow.task.api
    assert api is not None
    asked = {a.field.name for a in flow.asks.values() if a.field is not None}
    slots = input_slots(flow)
    params: dict[str, str] = {}
    for f in api.inputs:
        if f.name in q.constants:
            params[f.name] = q.constants[f.name]
        else:
            params[f.name] = f"context.{slots[f.name]}" + ("" if f.name in api.required and f.name in asked else "?")
    return {"id": q.id, "type": "action", "description": f"Query {api.name}" + "".join(
        f" ({k} {v})" for k, v in q.constants.items()), "tool": tool, "toolParams": params, "resultKey": q.id,
        "nextNodes": [nxt]}


def template(flow: Flow, node: str) -> str:
    """The chart's reply with ``{name:fmt}`` placeholders pointing at a query result field or a slot."""
    api = flow.task.api
    source = _upstream_query(flow, node)
    slots = {a.slot: a for a in flow.asks.values()}

    def sub(m: re.Match[str]) -> str:
        want = set(_words(m.group(1)))
        if api is not None and source is not None:
            best = max(api.outputs, key=lambda f: len(want & set(_words(f.name))), default=None)
            if best is not None and want & set(_words(best.name)):
                return f"{{context.{source}.{best.name}}}"
        slot = max(slots, key=lambda s: len(want & set(_words(s))), default=None)
        if slot is not None and want & set(_words(slot)):
            return f"{{context.{slot}}}"
        return "{" + m.group(1) + "}"

    return STAR_PLACEHOLDER.sub(sub, flow.task.replies.get(node, node.replace("_", " ")))


def _words(name: str) -> list[str]:
    from core.importers.star_format import split_camel

    return [T.singular(w) for w in T.words(split_camel(name))]


def _upstream_query(flow: Flow, node: str) -> str | None:
    """The last query from which a node can be reached (whose result its message may quote)."""
    found = None
    for q in flow.queries:
        seen, todo = set(), [q]
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            todo += [flow.task.graph[n]] if n in flow.task.graph else []
            todo += [o.id for o in flow.results.get(n, [])]
        if node in seen and node != q:
            found = q
    return found


def flat(text: str) -> str:
    return " ".join(text.split())


def title_of(name: str) -> str:
    words = name.replace("_", " ").strip()
    return words[:1].upper() + words[1:]


def _capability(task: StarTask) -> str:
    """What the wizard says it can do ("I am only able to retrieve your bank balance"), if a reply says."""
    for reply in task.replies.values():
        m = CAPABILITY.search(reply.strip())
        if m:
            return " ".join(m.group(1).split())
    return ""


def _first_person(phrase: str) -> str:
    return re.sub(r"\byour\b", "my", re.sub(r"\byou\b", "me", phrase, flags=re.I), flags=re.I)


def _triggers(names: list[str], capability: str) -> list[str]:
    """Example requests: the task's names and what the chart says it does, in the customer's words
    ("help you with restaurant reservations" -> "I need help with restaurant reservations")."""
    out = []
    for human in (n.replace("_", " ") for n in names if n):
        out += [human, f"I need help with {human}"]
    cap = _first_person(capability)
    about = re.match(r"^help me with (.+)$", cap, re.I)
    if about:
        out += [about.group(1), f"I need help with {about.group(1)}"]
    elif cap:
        out += [cap, f"can you {cap}", f"please {cap}"]
    return list(dict.fromkeys(out))


def input_slots(flow: Flow) -> dict[str, str]:
    """The slot that holds each API input: the chart's ask for it, else one named after the input."""
    api = flow.task.api
    assert api is not None
    by_field = {a.field.name: a.slot for a in flow.asks.values() if a.field is not None}
    return {f.name: by_field.get(f.name) or slug(f.label) for f in api.inputs}
