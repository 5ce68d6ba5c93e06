"""Searches over an ordered slot's values ("when is it going to clear up?"): the goal's tool is called with the
next day of the week or time of day, one call each, until a result answers the customer."""

from __future__ import annotations

from typing import Any

from core.engine.flow.contract import AgentRunResponse
from core.language import text as T
from core.shared.models import Goal
from core.sop.expr import strip_context
from core.sop.graph import Sop
from core.understanding import slot_unknown
from core.workspace.slots import SlotType

SEARCH_KEY = "_search"
"""Slot holding a search over an ordered slot's values in progress (see ``start_search``)."""


def start_search(types: dict[str, SlotType], goal: Goal, sop: Sop, named: dict[str, Any],
                 given: dict[str, Any] | None = None) -> str | None:
    """"When is it going to clear up?": look the next values of an ordered slot of the goal's tool up
    (days of the week, times of day), one call each, until a result answers the customer: it has a
    value the message names ("sunny" -> Sunny), or else differs from the one just given. Returns the
    slot searched over, or None when the goal has no such slot or no value to start from. ``types``: the
    SOP's slot kinds, ``named``: the listed values the message names (:meth:`named_values`), ``given``:
    the values it gives."""
    for node in sop.nodes.values():
        if not node.tool:
            continue
        for src in node.arg_map.values():
            name = src[len("context."):] if src.startswith("context.") else ""
            name = name.rstrip("?")
            st = types.get(name)
            current = goal.slots.get(name)
            if st is None or st.kind != "option" or not _ordered(st.vocab) or current not in st.vocab \
                    or name in (given or {}):  # "and on Friday?" names the value: no search
                continue
            last = goal.slots.get(node.result_key) if sop.format == "json" else None
            # a value the last request used is changed ("when will Chicago next be sunny?"); a value
            # it did not use is what a result must show ("sunny"), not a filter
            shown = {**named, **{k: v for k, v in (given or {}).items()
                                 if k in types and types[k].kind == "option"}}
            want = {k: v for k, v in shown.items() if k != name and slot_unknown(goal, k)}
            goal.slots.update({k: v for k, v in shown.items() if k != name and k not in want})
            args = {T.squash(a) for a, src in node.arg_map.items()  # the inputs the last call sent
                    if not (src.startswith("context.") and slot_unknown(goal, strip_context(src)))}
            avoid = {k: v for k, v in (last or {}).items() if isinstance(v, str) and T.squash(k) not in args}
            goal.slots[SEARCH_KEY] = {"node": node.id, "slot": name, "tried": [current], "want": want,
                                      "avoid": avoid}
            goal.slots[name] = _after(st.vocab, current)
            goal.step, goal.pending = node.id, None
            return name
    return None


def search_on(types: dict[str, SlotType], goal: Goal, sop: Sop, resp: AgentRunResponse) -> bool:
    """After each call of a search: stop when the result answers, else call again with the next
    value. True when the step was sent back to the tool."""
    search = goal.slots[SEARCH_KEY]
    node = sop.node(search["node"])
    if node is None or goal.step is None or goal.step not in (node.id, *sop.reachable(node.id)):
        goal.slots.pop(SEARCH_KEY, None)  # the flow went elsewhere: the search is over
        return False
    if goal.step != node.next:  # the call is still to come
        return False
    result = goal.slots.get(node.result_key) if sop.format == "json" else (
        goal.memory[-1].observation if goal.memory else None)
    st = types.get(search["slot"])
    current = goal.slots.get(search["slot"])
    tried = [*search["tried"], current]
    nxt = _after(st.vocab, current) if st is not None and current in st.vocab else None
    if _answers(result, search["want"], search["avoid"]) or nxt is None or nxt in tried:
        resp.decisions.append(f"search over {search['slot']} ends at {current}")
        goal.slots.pop(SEARCH_KEY, None)
        return False
    resp.decisions.append(f"search over {search['slot']}: {current} does not answer, trying {nxt}")
    goal.slots[SEARCH_KEY] = {**search, "tried": tried}
    goal.slots[search["slot"]] = nxt
    goal.step = node.id
    return True


def _ordered(vocab: list[str]) -> bool:
    """Whether a list of values is a cycle in time: days of the week, or clock times."""
    days = {d.lower() for d in T.WEEKDAYS}
    return len(vocab) > 2 and (all(v.lower() in days for v in vocab) or all(T.CLOCK.fullmatch(v.strip())
                                                                           for v in vocab))


def _after(vocab: list[str], value: str) -> str:
    return vocab[(vocab.index(value) + 1) % len(vocab)]


def _answers(result: Any, want: dict[str, str], avoid: dict[str, str]) -> bool:
    """Whether a search's result answers the customer: it has every wanted value, or (nothing wanted)
    one of its values differs from where the search started."""
    if not isinstance(result, dict) or not result or result.get("found") is False:
        return False
    values = {T.squash(k): str(v).lower() for k, v in result.items()}
    if want:
        return all(values.get(T.squash(k)) == str(v).lower() for k, v in want.items())
    return any(values.get(T.squash(k)) != str(v).lower() for k, v in avoid.items()) if avoid else True
