"""Running goals through their agents (the flow executor, ``core.engine.flow``): the active goal's steps with
their tool calls, ``call`` steps (another SOP runs on top of its caller, which goes on when it ends), a step
that hands the conversation to the team, and the goal that comes back when one ends."""

from __future__ import annotations

from collections.abc import Callable

from core.engine.flow import AgentRunRequest, AgentRunResponse, SpecialistAgent
from core.engine.processor.handing_off import HandOff
from core.engine.processor.new_goals import NewGoals
from core.engine.processor.tool_calls import ToolCaller
from core.engine.processor.turn import Turn, say_to
from core.shared.models import Goal
from core.sop.graph import Sop


class GoalRunner:
    """Runs the active goal's steps, and the goals that come back after it, within one turn."""

    def __init__(self, *, sops: dict[str, Sop], agent_of: Callable[[str], SpecialistAgent | None], max_steps: int,
                 tools: ToolCaller, new_goals: NewGoals, handoff: HandOff) -> None:
        self.sops = sops
        self.agent_of = agent_of
        self.max_steps = max_steps
        self.tools = tools
        self.new_goals = new_goals
        self.handoff = handoff

    def run_active(self, t: Turn) -> None:
        """Run the active goal; when it ends, resume the previous one (bounded)."""
        for _ in range(2 * len(t.state.goals) + 8):  # a call step adds a goal and comes back
            goal = t.state.active_goal
            if goal is None:
                return
            resp = self.run_goal(t, goal)
            if resp.handoff:  # the team takes it from here: nothing resumes in this turn
                self.hand_off_step(t, goal, resp)
                return
            if resp.call:  # a call step: the called SOP runs now, this goal waits for it on the stack
                self.start_call(t, goal, resp.call)
                continue
            if not resp.done:
                return
            resumed = t.ops.mark_done(resp.outcome)
            if resumed is not None and goal.caller == resumed.id:  # back from a call: the caller goes on
                if self.return_from_call(t, goal, resumed):
                    continue
                resumed = t.ops.mark_done("failed")  # the called procedure did not finish: nor does its caller
            if resumed is None or self.announce_resume(t, resumed):
                return

    def hand_off_step(self, t: Turn, goal: Goal, resp: AgentRunResponse) -> None:
        """An SOP step hands the conversation to the team (``hand off to a person``): the session is marked, the
        store's hand-off tool is called, and the customer is told (after the step's own message, if it has one).
        The goal ends; its callers end with it; other requests wait on the stack for the person."""
        t.trace.decisions.append(f"{goal.type} hands the conversation to the team ({resp.handoff!r})")
        self.handoff.handed_over(t, goal, "sop", step=resp.handoff, told=bool(resp.messages))
        end_with_callers(t, goal, "handed_off")  # other requests wait on the stack for the person

    def start_call(self, t: Turn, caller: Goal, sop_id: str) -> None:
        """Run another SOP for a ``call`` step: a goal of it, given the caller's values it asks for, on top of
        the caller (which waits on the stack and goes on when it ends)."""
        sop = self.sops[sop_id]
        callee = self.new_goals.fresh(t, sop)
        callee.caller = caller.id
        wanted = set(sop.slot_names())
        callee.slots.update({k: v for k, v in caller.slots.items() if k in wanted and v not in (None, "")})
        t.ops.suspend_and_activate(callee)
        t.trace.decisions.append(f"{caller.type} calls {sop_id}" + (f" with {', '.join(sorted(callee.slots))}"
                                                                   if callee.slots else ""))

    def return_from_call(self, t: Turn, callee: Goal, caller: Goal) -> bool:
        """The called goal ended: its caller takes what it learned and goes on (True), or, when it did not
        complete, stays where it is (False)."""
        agent = self.agent_of(caller.type)
        sop = self.sops.get(caller.type)
        if agent is None or sop is None:
            return False
        ok = agent.returned(caller, sop, callee, t.state.turn)
        t.trace.decisions.append(f"back from {callee.type} to {caller.type}" if ok else
                                 f"{callee.type} ended ({callee.outcome or 'not completed'}): {caller.type} ends too")
        return ok

    def run_goal(self, t: Turn, goal: Goal) -> AgentRunResponse:
        """Run one goal's steps through its agent, with the tool calls they ask for (at most ``max_steps`` rounds)."""
        sop = self.sops[goal.type]
        agent = self.agent_of(goal.type)
        if agent is None:
            t.messages.append(say_to(t, "nobody"))
            return AgentRunResponse(done=True, outcome="failed")
        visited: list[str] = []  # the steps run for this goal this turn, across its passes (the cycle guard)
        req = AgentRunRequest(goal, sop, t.prefs, turn=t.state.turn, others_waiting=bool(t.state.goal_stack),
                              language=t.reading.language, visited=visited, off=self.tools.off(t))
        resp = agent.run(req)
        self.collect(t, resp, goal)
        passes = 0
        while resp.tool_requests and not resp.done and passes < self.max_steps:
            passes += 1
            results = [self.tools.call(t, agent.name, r.tool, r.args) for r in resp.tool_requests]
            resp = agent.run(AgentRunRequest(goal, sop, t.prefs, tool_results=results, turn=t.state.turn,
                                             others_waiting=req.others_waiting, language=req.language,
                                             visited=visited, off=req.off))
            self.collect(t, resp, goal)
        if resp.tool_requests and not resp.done:
            goal.step = resp.tool_requests[0].node
        return resp

    @staticmethod
    def collect(t: Turn, resp: AgentRunResponse, goal: Goal) -> None:
        """Add what an agent's run said and did to the turn (messages, figures, trace)."""
        t.messages += resp.messages
        t.computed += resp.computed
        t.trace.actions += resp.actions
        t.trace.path += [{"sop": goal.type, "goal": goal.id, "node": nid} for nid in resp.path]
        t.trace.decisions += resp.decisions

    def resume(self, t: Turn, goal: Goal) -> None:
        """A goal comes back: announced, and run on unless it waits on its question."""
        if not self.announce_resume(t, goal):
            self.run_active(t)

    def announce_resume(self, t: Turn, goal: Goal) -> bool:
        """Tell the customer we are back to a resumed goal; re-ask its question. True when it waits on one."""
        sop = self.sops.get(goal.type)
        if goal.memory or goal.pending or sop is None:
            back = say_to(t, "back_to")
            if not t.messages or t.messages[-1] != back:  # one goal resumed on the way to another: said once
                t.messages.append(back)
        else:  # a request that waited its turn and has not started yet
            t.messages.append(say_to(t, "other_request", title=sop.title.lower()))
        node = sop.node(goal.pending) if sop is not None and goal.pending else None
        if goal.pending:
            if node is not None and goal.next_question:
                t.trace.actions.append(node.label)  # the pending question, asked again
            self.reprompt(t, goal)
            return True
        return False

    @staticmethod
    def reprompt(t: Turn, goal: Goal) -> None:
        """Ask a goal's pending question again."""
        if goal.next_question:
            t.messages.append(goal.next_question)


def end_with_callers(t: Turn, goal: Goal, outcome: str) -> Goal | None:
    """End the active ``goal`` with ``outcome``, and the goals that called it, waiting on the stack, with
    it; returns the goal that comes back (None when none waits)."""
    goals_calling = callers(t, goal)
    resumed = t.ops.mark_done(outcome)
    while resumed is not None and resumed.id in goals_calling:
        resumed = t.ops.mark_done(outcome)
    return resumed


def callers(t: Turn, goal: Goal) -> set[str]:
    """The goals that called ``goal``, directly or through others."""
    out: set[str] = set()
    while goal.caller and goal.caller in t.state.goals and goal.caller not in out:
        out.add(goal.caller)
        goal = t.state.goals[goal.caller]
    return out
