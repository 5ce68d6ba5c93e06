"""Decisions: a decision step takes the first branch whose condition holds, a written condition evaluated over the
goal's slots and results, a worded one judged by the brain; the trace says what each condition saw."""

from __future__ import annotations

import json
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Implied:
    """A question the customer's words already answer (:func:`implied_answer`): its slot, the answer taken
    (None: the question's slot stays unknown), the question already answered that the answer leads to, and the
    step the goal goes on from."""

    slot: str
    answer: Any
    answered: Node
    go_to: str


def implied_answer(env: AgentEnv, goal: Goal, sop: Sop, node: Node) -> Implied | None:
    """A question the customer's earlier words already answer by what they gave: the decision right after it
    leads, for one way only, to a question whose every value is known.

    - A yes/no question whose written decision chooses between two questions: the answer that leads to the
      answered one is taken ("do you know the email on the account?" after a name and a zip code that its "no"
      branch asks for). A yes/no question that leads to a check on one side is always put.
    - Any question whose decision's other branches go on with its value (a tool or a step that needs it): the
      question is passed, its value unknown, and the goal goes on at the answered question ("what is your email?"
      after a name and a zip code, when only the email's branch looks the account up by email).

    None when the question still matters: both ways lead to answered questions, or neither does."""
    slots = [p.name for p in node.fills if not p.optional and slot_unknown(goal, p.name)]
    after = sop.node(node.next) if node.next else None
    if len(slots) != 1 or after is None or after.kind != "decision" or not after.branches:
        return None
    done = {m.action for m in goal.memory}  # a question gone through before leads back round a loop
    kind = env.types(sop).get(slots[0])
    if kind is not None and kind.kind == "boolean" and all(b.condition is None or b.expr for b in after.branches):
        ways = [sop.node(t) if t else None for t in (_branch_for(env, goal, sop, after, {slots[0]: a})
                                                      for a in (True, False))]
        if not all(w is not None and w.asks for w in ways):
            return None  # only a choice between two questions (two ways to find the account) is answered so
        found = [(answer, asked) for answer, asked in zip((True, False), ways, strict=True)
                 if asked is not None and _answered(goal, asked, done)]
        return Implied(slots[0], found[0][0], found[0][1], after.id) if len(found) == 1 else None
    targets = [sop.node(b.target) for b in after.branches]
    answered = [t for t in targets if t is not None and _answered(goal, t, done)]
    others = [t for t in targets if t is not None and t not in answered]
    if len(answered) != 1 or not others or not all(_needs(t, slots[0]) for t in others):
        return None
    return Implied(slots[0], None, answered[0], answered[0].id)


def _answered(goal: Goal, asked: Node, done: set[str]) -> bool:
    """Whether a question waits for nothing: every value it asks is known, and it was not gone through before."""
    return asked.asks and bool(asked.fills) and asked.label not in done and all(
        not slot_unknown(goal, p.name) for p in asked.fills if not p.optional)


def _needs(step: Node, slot: str) -> bool:
    """Whether a step goes on with a slot's value: a tool's parameter, or a message that says it."""
    return any(p.name == slot for p in step.params) or slot in step.arg_map.values() \
        or any(v.endswith(f".{slot}") or v == slot for v in step.arg_map.values()) or f"{{{slot}}}" in step.message


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
