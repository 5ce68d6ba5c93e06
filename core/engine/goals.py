"""Goal and stack operations on SessionState (the PRD's SuspendAndActivate / MarkGoalDone / ResumePrevious)."""

from __future__ import annotations

from typing import Any

from core.shared.models import Goal, GoalStatus, SessionState, utcnow


class GoalOps:
    """Pure state transitions on one SessionState, each recorded for the trace."""

    def __init__(self, state: SessionState) -> None:
        self.state = state
        self.ops: list[dict[str, Any]] = []

    def _log(self, op: str, goal: Goal | None, **extra: Any) -> None:
        self.ops.append({"op": op, "goal": goal.type if goal else None, "goal_id": goal.id if goal else None,
                         "stack": [self.state.goals[g].type for g in self.state.goal_stack], **extra})

    def new_goal(self, goal_type: str, priority: int) -> Goal:
        """Create a goal (not yet scheduled)."""
        goal = self.draft(goal_type, priority)
        self.state.goals[goal.id] = goal
        return goal

    def draft(self, goal_type: str, priority: int) -> Goal:
        """The goal :meth:`new_goal` would create, not yet part of the session (see :meth:`add`)."""
        return Goal(id=f"g{next_number(self.state)}", type=goal_type, priority=priority)

    def add(self, goal: Goal) -> None:
        """Make a drafted goal part of the session (not yet scheduled)."""
        self.state.goals[goal.id] = goal

    def activate(self, goal: Goal) -> None:
        """Make a goal active when nothing is active."""
        self.state.active_goal_id = goal.id
        goal.status = GoalStatus.ACTIVE
        self._log("activate", goal)

    def suspend_and_activate(self, goal: Goal) -> None:
        """Push the active goal on the stack (suspended) and activate ``goal``."""
        current = self.state.active_goal
        if current is not None:
            current.status = GoalStatus.SUSPENDED
            current.updated_at = utcnow()
            self.state.goal_stack.append(current.id)
            self._log("push", current, reason="interrupted")
        self.state.active_goal_id = goal.id
        goal.status = GoalStatus.ACTIVE
        self._log("suspend_and_activate", goal)

    def defer(self, goal: Goal) -> None:
        """Push a new goal of equal or lower priority, suspended, to run when the active one is done.

        It goes under goals that are already waiting of a higher priority, so the
        order of resumption follows priority.
        """
        goal.status = GoalStatus.SUSPENDED
        self.state.goal_stack.insert(self._defer_index(goal), goal.id)
        self._log("push", goal, reason="deferred")

    def _defer_index(self, goal: Goal) -> int:
        stack = self.state.goal_stack
        i = len(stack)
        while i > 0 and self.state.goals[stack[i - 1]].priority > goal.priority:
            i -= 1
        return i

    def mark_done(self, outcome: str) -> Goal | None:
        """MarkGoalDone for the active goal, then ResumePrevious; returns the resumed goal."""
        current = self.state.active_goal
        if current is not None:
            current.status = GoalStatus.DONE
            current.outcome = outcome
            current.pending = None
            current.missing = []
            current.next_question = ""
            current.updated_at = utcnow()
            self._log("done", current, outcome=outcome)
        self.state.active_goal_id = None
        return self.resume_previous()

    def resume_previous(self) -> Goal | None:
        """Pop the top of the stack and make it active again."""
        if not self.state.goal_stack:
            return None
        gid = self.state.goal_stack.pop()
        goal = self.state.goals[gid]
        goal.status = GoalStatus.BLOCKED if goal.pending else GoalStatus.ACTIVE
        goal.updated_at = utcnow()
        self.state.active_goal_id = gid
        self._log("pop", goal, reason="resume")
        return goal

    def bring_forward(self, goal: Goal) -> None:
        """A suspended goal the customer returns to: take it off the stack and make it active."""
        self.state.goal_stack.remove(goal.id)
        self._log("pop", goal, reason="customer returned to it")
        self.suspend_and_activate(goal)
        if goal.pending:
            goal.status = GoalStatus.BLOCKED


def next_number(state: SessionState) -> int:
    """The number of the session's next goal: one more than any goal's it has made. Retired goals always
    have a newer goal of their SOP in the working state (:func:`retire_finished`), so the highest number
    is always there."""
    numbers = [int(gid[1:]) for gid in state.goals if gid[1:].isdigit()]
    return max(len(state.goals), *numbers, 0) + 1


def retire_finished(state: SessionState) -> list[str]:
    """Move finished goals the turn no longer reads out of the working state into ``state.retired`` (the store
    keeps them beside the session: the Inspector, exports and replay still read them), so a turn costs the
    same at turn 300 as at turn 3. Kept: every goal not finished, the goals the stack or a running call
    names, and per SOP its newest finished goal and its newest completed one (what a follow-up, "the one
    you found last time" or the customer's earlier answers are read from), and any goal finished in this
    turn or the one before. Returns the ids retired."""
    keep = {state.active_goal_id, *state.goal_stack}
    keep |= {g.caller for g in state.goals.values() if g.caller and g.status != GoalStatus.DONE}
    newest: dict[str, str] = {}
    latest: dict[tuple[str, bool], Goal] = {}  # per SOP, the goal finished last, and the one completed last
    for gid, goal in state.goals.items():  # in the order they were made
        if goal.status != GoalStatus.DONE:
            keep.add(gid)
            continue
        newest[goal.type] = gid
        for key in {(goal.type, False), (goal.type, goal.outcome == "completed")}:
            if key not in latest or goal.updated_at >= latest[key].updated_at:
                latest[key] = goal
        if goal.memory and goal.memory[-1].turn >= state.turn - 1:
            keep.add(gid)
    keep |= set(newest.values()) | {g.id for g in latest.values()}
    gone = [gid for gid in state.goals if gid not in keep]
    for gid in gone:
        state.retired[gid] = state.goals.pop(gid)
    return gone
