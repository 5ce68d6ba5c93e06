"""Asking: putting a step's question to the customer, worded with this store's own examples and a remembered
value offered as the default answer."""

from __future__ import annotations

import re

from core.engine.flow.contract import AgentEnv, AgentRunRequest, AgentRunResponse
from core.engine.flow.failures import count_attempt
from core.engine.flow.results import facts
from core.engine.offers import offer_question, remembered_range
from core.language import text as T
from core.shared.models import Goal, GoalStatus
from core.sop.graph import Node, Sop
from core.state.memory.base import PreferenceSummary
from core.understanding import slot_unknown
from core.workspace.slots import SlotType

EXAMPLES = re.compile(r"\b(e\.g\.|for example|such as)\s+([^()?;]+?)(?=\)|\?|;|$)", re.I)
"""Examples a question gives: "(a product category, e.g. laptop, mouse or headset)" -> the list."""


def ask(env: AgentEnv, goal: Goal, sop: Sop, node: Node, resp: AgentRunResponse, req: AgentRunRequest, *,
        counted: bool = False) -> None:
    """Put the step's question to the customer; ``counted`` when this run was already counted
    (a step that called its API first)."""
    if not counted:
        if not count_attempt(goal, node, resp):
            return
        resp.actions.append(node.label)
    context = {**facts(goal), **goal.slots} if node.message else goal.slots  # "{context.minutesLate}"
    question = own_examples(env.types(sop), node, env.brain.question(node, context))
    offer = remembered_offer(env, goal, sop, node, req.preferences)
    question = f"{question} {offer}" if offer else question
    goal.pending = node.id
    goal.next_question = question
    goal.status = GoalStatus.BLOCKED
    resp.messages.append(question)
    resp.asked = True


def own_examples(types: dict[str, SlotType], node: Node, question: str) -> str:
    """Examples in a question ("e.g. laptop, mouse or headset") that this store's own data has none of
    (an SOP copied from another store) are replaced by the first values of that data, so a pet
    store never suggests laptops."""
    found = EXAMPLES.search(question)
    if found is None:
        return question
    given = [w.strip().lower() for w in re.split(r",|\bor\b|\band\b", found.group(2)) if w.strip()]
    for p in node.fills:
        st = types.get(p.name)
        own = [str(v) for v in (st.vocab or [])] if st is not None and st.kind in ("category", "brand") else []
        known = {T.singular(v.lower()) for v in own}
        if own and given and not any(T.singular(g) in known for g in given):
            picks = own[:3]
            listed = picks[0] if len(picks) == 1 else f"{', '.join(picks[:-1])} or {picks[-1]}"
            return question[:found.start(2)] + listed.lower() + question[found.end(2):]
    return question


def remembered_offer(env: AgentEnv, goal: Goal, sop: Sop, node: Node, prefs: PreferenceSummary) -> str:
    """A remembered value offered as the default answer (a known budget: "Still around ฿30,000–฿40,000?")."""
    types = env.types(sop)
    for p in node.fills:
        st = types.get(p.name)
        about = f"{p.name} {node.expects}"
        rng = remembered_range(st.kind, about, prefs) if st is not None and slot_unknown(goal, p.name) else None
        if rng is not None:
            return offer_question(goal.slots, p.name, rng, env.currency)
    return ""
