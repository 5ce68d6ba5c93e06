"""Open goals brought in line with SOPs edited since they started (the playground saves SOPs live)."""

from __future__ import annotations

from core.engine.processor.turn import Turn
from core.shared.models import GoalStatus
from core.sop.graph import Sop


def reconcile(t: Turn, sops: dict[str, Sop]) -> None:
    """Bring open goals in line with SOPs edited since they started (the playground saves SOPs live).

    A goal whose SOP is gone ends; a goal whose SOP changed restarts its walk at the
    start node with its slots kept, so answered questions are not asked again.
    """
    for goal in t.state.goals.values():
        if goal.status == GoalStatus.DONE or not goal.sop_version:
            continue
        sop = sops.get(goal.type)
        if sop is None:
            if goal.id == t.state.active_goal_id:
                t.ops.mark_done("sop removed")
            else:
                goal.status = GoalStatus.DONE
                goal.outcome = "sop removed"
                t.state.goal_stack = [g for g in t.state.goal_stack if g != goal.id]
            t.trace.decisions.append(f"goal {goal.type} ended: its SOP no longer exists")
        elif goal.sop_version != sop.version:
            goal.sop_version = sop.version
            same_ask = next((n for n in sop.nodes.values() if goal.pending and n.asks
                             and {f.name for f in n.fills} & set(goal.missing)), None)
            goal.attempts = {}
            if same_ask is not None:  # the pending question still exists: the reply answers it
                goal.step = goal.pending = same_ask.id
                t.trace.decisions.append(f"goal {goal.type} moved to {same_ask.label!r}: its SOP changed")
            else:
                goal.step, goal.pending = sop.start, None
                t.trace.decisions.append(f"goal {goal.type} restarted: its SOP changed (slots kept)")
