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


def _brief(value: Any, limit: int = 60) -> str:
    """A value as the trace shows what a condition saw: JSON-like, cut to ``limit`` characters."""
    text = json.dumps(value, ensure_ascii=False, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"
