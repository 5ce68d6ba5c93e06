"""The command processor: checks a model's commands against the context, then acts on a message's commands in
the order of precedence, handing each to the collaborator whose job it is (``core.engine.processor``)."""

from __future__ import annotations

from collections.abc import Callable

from core.engine.flow import SpecialistAgent
from core.engine.processor.answering import RunningGoal
from core.engine.processor.asides import Asides
from core.engine.processor.ending import cancel, leave
from core.engine.processor.follow_ups import FollowUps
from core.engine.processor.handing_off import HandOff
from core.engine.processor.knowledge import KnowledgeAnswers
from core.engine.processor.new_goals import NewGoals
from core.engine.processor.running import GoalRunner
from core.engine.processor.starting import Starting
from core.engine.processor.tool_calls import ToolCaller
from core.engine.processor.turn import Turn, first
from core.shared.models import Goal
from core.sop.graph import Sop
from core.tools.gateway import ToolGateway
from core.understanding import (
    NOT_KEPT,
    Answer,
    CancelGoal,
    Command,
    Commerce,
    CorrectSlot,
    FollowUp,
    GoBack,
    HumanHandoff,
    SetSlots,
    Skip,
    SmallTalk,
    StartGoal,
    Unclear,
)


class CommandProcessor:
    """Acts on one message's commands for a workspace: its SOPs, the agents that run them, the gateway."""

    def __init__(self, *, sops: dict[str, Sop], agent_of: Callable[[str], SpecialistAgent | None],
                 gateway: ToolGateway, max_steps: int, commerce: Commerce | None = None, greeting: str = "",
                 handoff: str = "") -> None:
        self.sops = sops
        self.agent_of = agent_of
        self.tools = ToolCaller(gateway)  # its ``before_change`` records a side-effecting call before it runs
        self.knowledge = KnowledgeAnswers(gateway, self.tools)
        self.new_goals = NewGoals(sops, agent_of)
        self.handoff = HandOff(sops=sops, gateway=gateway, tools=self.tools, handoff=handoff)
        self.runner = GoalRunner(sops=sops, agent_of=agent_of, max_steps=max_steps, tools=self.tools,
                                 new_goals=self.new_goals, handoff=self.handoff)
        self.asides = Asides(sops=sops, agent_of=agent_of, gateway=gateway, tools=self.tools,
                             knowledge=self.knowledge, runner=self.runner, commerce=commerce, greeting=greeting)
        self.running_goal = RunningGoal(sops=sops, agent_of=agent_of, gateway=gateway, knowledge=self.knowledge,
                                        runner=self.runner, asides=self.asides)
        self.starting = Starting(sops=sops, agent_of=agent_of, new_goals=self.new_goals, runner=self.runner)
        self.follow_ups = FollowUps(sops=sops, agent_of=agent_of, new_goals=self.new_goals, runner=self.runner)

    # ------------------------------------------------------------------ checking a model's commands
    def check(self, t: Turn, commands: list[Command]) -> list[Command]:
        """A model's commands the context allows; the others are dropped, with the reason."""
        active = t.state.active_goal
        return [c for c in commands if not self._refuse(t, c, active, commands)]

    def _refuse(self, t: Turn, c: Command, active: Goal | None, commands: list[Command]) -> bool:
        """Whether the context rules a command out (dropped, with the reason)."""
        answers = any(isinstance(o, Answer) for o in commands)
        reason = ""
        if isinstance(c, Answer | CorrectSlot | GoBack | Skip | CancelGoal) and active is None \
                or isinstance(c, SetSlots) and active is None and not c.sop:
            reason = "no request is running"
        elif isinstance(c, CancelGoal | GoBack | HumanHandoff | Skip) and answers:
            reason = "the message answers the pending question"
        elif isinstance(c, GoBack) and any(isinstance(o, CorrectSlot) for o in commands):
            reason = "the message gives the new value"
        elif isinstance(c, StartGoal) and (why := self._refuse_start(c, active)):
            reason = why
        elif isinstance(c, SmallTalk | Unclear) and any(not isinstance(o, SmallTalk | Unclear) for o in commands):
            reason = "the message also does something else"
        elif isinstance(c, SetSlots) and c.sop and c.sop not in self.sops:
            reason = "no such SOP"
        if reason:
            t.reading.drop(c, reason)
        return bool(reason)

    def _refuse_start(self, c: StartGoal, active: Goal | None) -> str:
        """Why a start_goal cannot be acted on ('' when it can)."""
        if active is not None and c.sop == active.type:
            return "that request is the one running"
        if self.agent_of(c.sop) is None:
            return "no agent runs that SOP"
        return ""

    # ------------------------------------------------------------------ acting, by precedence
    def act(self, t: Turn, commands: list[Command]) -> None:
        """Act on one message's commands in the order of precedence: a cancellation or a hand-off, a
        goodbye, a follow-up to the request finished last, a request for an SOP, then what the message
        does to the running goal (or, with none running, its small talk or question)."""
        active = t.state.active_goal
        if t.reading.closes and active is not None and active.type == t.reading.closes:
            t.trace.decisions.append(f"{active.type} done: the customer asks for more before it could offer it")
            t.ops.mark_done("completed")
            active = t.state.active_goal
        start = first(commands, StartGoal)
        lead = next((c for c in commands if isinstance(c, CancelGoal | HumanHandoff)), None)
        if isinstance(lead, CancelGoal) and active is not None:
            t.reading.add(lead)
            cancel(t, active, self.sops, self.runner, resume=start is None)
            if start is not None:  # "forget it then. What's the weather in Chicago?": the new request next
                self.starting.start(t, start, commands, t.state.active_goal)
            return
        if isinstance(lead, HumanHandoff):
            t.reading.add(lead)
            self.handoff.customer_asks(t, active)
            return
        goodbye = next((c for c in commands if isinstance(c, SmallTalk) and c.act == "goodbye"), None)
        if active is not None and goodbye is not None and first(commands, Answer) is None:
            t.reading.add(goodbye)
            leave(t)
            return
        follow = next((c for c in commands if isinstance(c, FollowUp) and c.about in ("reopen", "search")), None)
        if follow is not None and active is None and self.follow_ups.act(t, follow):
            t.reading.add(follow)
            return
        self._keep_for_later(t, commands, start)
        if active is not None and self._reuse(t, active):  # "the same dates as the room": it names the earlier
            if start is not None:                          # request, it does not ask for it again
                t.reading.drop(start, "it names the earlier request whose values are reused")
            self.runner.run_active(t)
        elif start is not None:
            self.starting.start(t, start, [*commands, *self._reused(t, start.sop)], active)
        elif active is not None:
            self.running_goal.act(t, active, commands)
        else:
            self.asides.no_goal(t, commands)

    def _reused(self, t: Turn, sop_id: str) -> list[SetSlots]:
        """"A car for the same dates as the hotel" starting a goal: the values it takes from an earlier request."""
        goal = t.state.waiting_goal(sop_id) or self.new_goals.draft(t.state, self.sops[sop_id])
        found = self.new_goals.reused(t.state, goal, t.perception.text)
        return [SetSlots(evidence=t.perception.text, values=found, sop=sop_id)] if found else []

    def _reuse(self, t: Turn, goal: Goal) -> bool:
        """"The same dates as the hotel" to the running goal's question: the values taken from an earlier request
        fill it, and the goal goes on (True); False when the message asks no such thing."""
        sop = self.sops.get(goal.type)
        node = sop.node(goal.pending) if sop is not None else None
        found = self.new_goals.reused(t.state, goal, t.perception.text)
        if node is None or not any(p.name in found for p in node.fills):
            return False
        goal.slots.update(found)
        t.reading.add(SetSlots(evidence=t.perception.text, values=found))
        t.trace.decisions.append(f"{', '.join(found)} taken from an earlier request, as the customer asked")
        goal.step, goal.pending = node.id, None
        return True

    def _keep_for_later(self, t: Turn, commands: list[Command], start: StartGoal | None) -> None:
        """Values for an SOP neither running nor starting: kept in the session for the goal that will ask
        for them (listed options, dates, numbers, ids; not free text, a yes/no or a pick)."""
        active = t.state.active_goal
        for c in commands:
            if not isinstance(c, SetSlots) or not c.sop or c.sop in (start.sop if start else "",
                                                                       active.type if active else ""):
                continue
            agent = self.agent_of(c.sop)
            types = agent.types(self.sops[c.sop]) if agent is not None else {}
            kept = {k: v for k, v in c.values.items() if k in types and types[k].kind not in NOT_KEPT}
            if not kept:
                t.reading.drop(c, "the SOP these values are for does not start, and keeps no such values")
                continue
            t.state.told.update(kept)
            t.reading.add(c)
            t.trace.decisions.append(f"kept for {c.sop}: {', '.join(sorted(kept))}")

