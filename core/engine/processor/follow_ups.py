"""A follow-up to the request finished last: it runs again with the changed values ("and for Friday?"), or from
its tool over the next values until a result answers ("when is it going to clear up?")."""

from __future__ import annotations

from collections.abc import Callable

from core.engine.flow import SpecialistAgent
from core.engine.processor.new_goals import NewGoals
from core.engine.processor.running import GoalRunner
from core.engine.processor.turn import Turn
from core.sop.graph import Sop
from core.understanding import FollowUp


class FollowUps:
    """Runs the request finished last again, for a follow-up to it."""

    def __init__(self, *, sops: dict[str, Sop], agent_of: Callable[[str], SpecialistAgent | None],
                 new_goals: NewGoals, runner: GoalRunner) -> None:
        self.sops = sops
        self.agent_of = agent_of
        self.new_goals = new_goals
        self.runner = runner

    def act(self, t: Turn, c: FollowUp) -> bool:
        """A follow-up to the request finished last: run again with the changed values ("and for Friday?"),
        or from its tool over the next values until a result answers ("when is it going to clear up?").
        True when it ran."""
        last = self.new_goals.last_completed(t.state)
        sop = self.sops.get(c.sop)
        agent = self.agent_of(c.sop)
        if last is None or sop is None or agent is None or last.type != c.sop:
            return False
        if c.about == "reopen":
            goal = t.ops.new_goal(sop.id, sop.priority)
            names = set(sop.slot_names())
            goal.slots = {**{k: v for k, v in last.slots.items() if k in names}, **c.values}
            goal.step = sop.start
            t.ops.activate(goal)
            changed = sorted(k for k, v in c.values.items() if last.slots.get(k) != v)
            t.trace.decisions.append(f"follow-up to the finished {sop.id}: {', '.join(changed)} changed, "
                                     "running it again")
            self.runner.run_active(t)
            return True
        goal = t.ops.draft(sop.id, sop.priority)
        goal.slots = {k: v for k, v in last.slots.items() if not k.startswith("_")}
        wanted = agent.start_search(goal, sop, c.named, given=c.values)
        if wanted is None:
            return False
        t.ops.add(goal)
        t.ops.activate(goal)
        t.trace.decisions.append(f"follow-up to the finished {sop.id}: looking up the next {wanted} values")
        self.runner.run_active(t)
        return True

