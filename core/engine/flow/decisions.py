"""Decisions: a decision step takes the first branch whose condition holds, a written condition evaluated over the
goal's slots and results, a worded one judged by the brain; the trace says what each condition saw."""

from __future__ import annotations

import json
from typing import Any

from core.engine.flow.contract import AgentEnv, AgentRunResponse
from core.engine.flow.moves import move
from core.engine.flow.results import facts, results_context
from core.shared.models import Goal
from core.sop.expr import parse, paths
from core.sop.expr_eval import EvalError, evaluate, lookup
from core.sop.graph import Node, Sop
from core.understanding import slot_unknown


def decide(env: AgentEnv, goal: Goal, sop: Sop, node: Node, resp: AgentRunResponse) -> None:
    """Take the decision's first branch that holds (none: the flow stops, ``goal.step`` None)."""
    obs = goal.memory[-1].observation if goal.memory else None
    seen: dict[str, str] = {}  # what the conditions were judged on, for the trace
    for b in node.branches:
        if b.condition is None:
            taken = True
        elif b.expr:
            tree = parse(b.condition)
            context = {**facts(goal), **goal.slots} if sop.format == "json" \
                else results_context(goal, sop, obs)  # a JSON SOP's context holds its results' fields
            seen.update({path: _brief(lookup(context, path)) for path in paths(tree)})
            try:
                taken = bool(evaluate(tree, context, env.today()))
            except EvalError as exc:  # "a * b" on a missing key or a word, a division by zero: false
                resp.decisions.append(f"{node.label}: could not evaluate {b.condition!r} ({exc.reason}): else")
                taken = False
        else:
            seen.setdefault("the last result", _brief(obs))
            taken = env.brain.branch(b.condition, obs)
        if taken:
            saw = f" (saw {', '.join(f'{k} = {v}' for k, v in seen.items())})" if seen else ""
            resp.decisions.append(f"{node.label}: {b.condition or 'else'} -> {b.target}{saw}")
            move(goal, sop, node, b.target)
            return
    goal.step = None


def implied_answer(env: AgentEnv, goal: Goal, sop: Sop, node: Node) -> tuple[str, bool, Node] | None:
    """A yes/no question the customer's earlier words already answer by what they gave: the decision right after
    it leads, for one answer only, to a question whose every value is known ("do you know the email on the
    account?" after a name and a zip code that its "no" branch asks for). The slot, the answer and that
    question; None when the question still matters (both answers lead to answered questions, or neither)."""
    slots = [p.name for p in node.fills if not p.optional and slot_unknown(goal, p.name)]
    after = sop.node(node.next) if node.next else None
    if len(slots) != 1 or after is None or after.kind != "decision" or not after.branches:
        return None
    kind = env.types(sop).get(slots[0])
    if kind is None or kind.kind != "boolean":
        return None
    if any(b.condition is not None and not b.expr for b in after.branches):
        return None  # a worded condition is the brain's to judge, on the customer's own answer
    done = {m.action for m in goal.memory}  # a question gone through before leads back round a loop
    found: list[tuple[bool, Node]] = []
    for answer in (True, False):
        target = _branch_for(env, goal, sop, after, {slots[0]: answer})
        asked = sop.node(target) if target else None
        if asked is not None and asked.asks and asked.fills and asked.label not in done and all(
                not slot_unknown(goal, p.name) for p in asked.fills if not p.optional):
            found.append((answer, asked))
    return (slots[0], *found[0]) if len(found) == 1 else None


def _branch_for(env: AgentEnv, goal: Goal, sop: Sop, node: Node, values: dict[str, Any]) -> str | None:
    """The branch a decision of written conditions would take were ``values`` among the goal's slots."""
    context = {**facts(goal), **goal.slots, **values} if sop.format == "json" \
        else {**results_context(goal, sop, goal.memory[-1].observation if goal.memory else None), **values}
    for b in node.branches:
        if b.condition is None:
            return b.target
        try:
            if evaluate(parse(b.condition), context, env.today()):
                return b.target
        except EvalError:
            continue
    return None


def _brief(value: Any, limit: int = 60) -> str:
    """A value as the trace shows what a condition saw: JSON-like, cut to ``limit`` characters."""
    text = json.dumps(value, ensure_ascii=False, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"
