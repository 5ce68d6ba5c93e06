"""What a goal's tools returned, as its steps read it: the fields of its results, the context a text SOP's written
condition reads, and what a called SOP's goal hands back to the goal that called it."""

from __future__ import annotations

from typing import Any

from core.engine.flow.moves import move
from core.shared.models import Goal, GoalStatus, MemoryEntry
from core.sop.graph import Sop


def facts(goal: Goal) -> dict[str, Any]:
    """The fields of what the goal's tools returned so far, the latest winning."""
    found: dict[str, Any] = {}
    for entry in goal.memory:
        if entry.feedback == "success" and isinstance(entry.observation, dict):
            found.update(entry.observation)
    return found


def results_context(goal: Goal, sop: Sop, last: Any) -> dict[str, Any]:
    """What a text SOP's written condition reads: slots, the fields of earlier results (``status``),
    the last result (``result.status``) and each result under the words of its step and tool
    (``loan.renewals`` after "look up the loan" or a tool ``loans.lookup``)."""
    named: dict[str, Any] = {}
    steps = {n.label: n for n in sop.nodes.values() if n.tool}
    for entry in goal.memory:
        node = steps.get(entry.action)
        if node is None or entry.feedback != "success" or not isinstance(entry.observation, dict):
            continue
        named.update(dict.fromkeys(node.result_names(), entry.observation))
    return {**named, **facts(goal), **goal.slots, "result": last}


def returned(goal: Goal, sop: Sop, callee: Goal, turn: int) -> bool:
    """A goal whose ``call`` step's SOP has ended: what the called goal learned (its slots, and the fields of
    its tools' results) joins this goal's, and the flow goes past the call step. False (the flow stays)
    when the called goal did not complete."""
    node = sop.node(goal.step)
    if node is None or not node.call:
        return False
    learned = {**facts(callee), **{k: v for k, v in callee.slots.items() if v not in (None, "")}}
    ok = callee.outcome == "completed"
    goal.memory.append(MemoryEntry(action=node.label, observation=learned if ok else callee.outcome or "ended",
                                   feedback="success" if ok else "fail", turn=turn))
    if not ok:
        return False
    goal.slots.update({k: v for k, v in callee.slots.items() if v not in (None, "")})
    goal.attempts.pop(node.id, None)
    goal.status = GoalStatus.ACTIVE
    move(goal, sop, node, node.next)
    return True
