"""Teacher forcing in a STAR replay (:mod:`core.evaluation.star_replay`): the wizard's real action laid over
the engine's session (its task's goal made active and moved to the chart step the wizard took, or queried with
the wizard's values and the dialogue's own result), and the tool node a wizard's query names."""

from __future__ import annotations

from typing import Any

from core.engine.flow import AgentRunRequest
from core.engine.goals import GoalOps
from core.engine.orchestrator import Orchestrator
from core.importers.star import ImportResult
from core.importers.star_api import normalise
from core.importers.star_format import constraints
from core.language import text as T
from core.shared.models import Goal, GoalStatus, MemoryEntry, SessionState
from core.sop.expr_eval import lookup
from core.sop.graph import Node, Sop
from core.state.memory.base import PreferenceSummary
from core.understanding import extract_values
from core.workspace.slots import ISO_DATE, SlotType


class Forcing:
    """Lays the wizard's steps over the session of one replay's engine; ``heard`` (the customer's messages the
    engine last took in) and ``just_closed`` (the goal its last turns completed) come from the replay."""

    def __init__(self, orch: Orchestrator, imports: dict[str, ImportResult]) -> None:
        self.orch = orch
        self.imports = imports  # task -> its import

    def force_query(self, state: SessionState, ops: GoalOps, event: dict[str, Any], rest: list[dict[str, Any]],
                    heard: list[str], just_closed: str) -> None:
        """The wizard's query: its values in the goal's slots, the dialogue's own result as the observation."""
        wanted = constraints(event)
        found = self.query_node(str(event.get("APIName")), wanted, state)
        if found is None:
            return
        sop, node = found
        goal = self.switch(state, ops, sop.id, heard, just_closed)
        for key, src in node.arg_map.items():
            if src.startswith("context.") and isinstance(wanted.get(key), str | int | float):
                goal.slots[src[len("context."):]] = wanted[key]
        item = next((e.get("Item") for e in rest[:1] if e.get("Action") == "return_item"), None)
        result = normalise(item)
        goal.slots[node.result_key] = result
        goal.memory.append(MemoryEntry(action=node.label, observation=result, feedback="success", turn=state.turn))
        _move(goal, node.next)

    def force_step(self, state: SessionState, ops: GoalOps, sop: Sop, node: Node, heard: list[str],
                   just_closed: str) -> bool:
        """The chart step the wizard took; True when it ended the flow (the engine would have closed it)."""
        goal = self.switch(state, ops, sop.id, heard, just_closed)
        goal.attempts = {}
        if node.asks:
            goal.step = goal.pending = node.id
            goal.status = GoalStatus.BLOCKED
            goal.next_question = self.orch.brain.question(node, goal.slots)
            goal.missing = [p.name for p in node.fills if lookup(goal.slots, p.name) in (None, "")] or \
                [p.name for p in node.fills]
            return False
        goal.memory.append(MemoryEntry(action=node.label, observation="done", feedback="success", turn=state.turn))
        _move(goal, node.next)
        if self.silent_end(goal):  # the engine ends a flow in the turn of its last message
            ops.mark_done("completed")
            return True
        return False

    def silent_end(self, goal: Goal) -> bool:
        """Whether the rest of a goal's flow is only decisions on the way to its end."""
        agent = self.orch.agents.get(self.orch.sop_agent.get(goal.type, ""))
        sop = self.orch.sops.get(goal.type)
        if agent is None or sop is None:
            return False
        resp = agent.run(AgentRunRequest(goal.model_copy(deep=True), sop, PreferenceSummary()))
        return resp.done and not resp.actions and not resp.messages

    def switch(self, state: SessionState, ops: GoalOps, sop_id: str, heard: list[str], just_closed: str) -> Goal:
        """Make the goal of an SOP active (resumed, or new), as the wizard's choice of task says."""
        active = state.active_goal
        if active is not None and active.type == sop_id:
            return active
        waiting = state.waiting_goal(sop_id)
        if active is not None and _finished(active, self.orch.sops.get(active.type)):
            finish(ops, state, resume=False)
            if state.active_goal is not None and state.active_goal.type == sop_id:
                return state.active_goal
        if waiting is not None and waiting.id in state.goal_stack:
            ops.bring_forward(waiting)
            return waiting
        sop = self.orch.sops[sop_id]
        last = latest_open(state, sop_id)
        if last is not None and last.status == GoalStatus.DONE and just_closed == last.id:
            last.outcome = ""  # the engine closed the flow the wizard is still in: carry on with it
            if state.active_goal is None:
                ops.activate(last)
            else:
                ops.suspend_and_activate(last)
            return last
        goal = ops.new_goal(sop_id, sop.priority)
        goal.step, goal.sop_version = sop.start, sop.version
        goal.slots.update(self.orch.already_told(state, sop))
        agent = self.orch.agents.get(self.orch.sop_agent.get(sop_id, ""))
        for text in heard:  # what the customer said that started this task
            if agent is not None:
                found = agent.reader.extract_volunteered(goal, sop, text, opening=True)
                agent.note_unavailable(goal, sop, text, found)
                goal.slots.update(found)
        if state.active_goal is None:
            ops.activate(goal)
        else:
            ops.suspend_and_activate(goal)
        return goal


    def query_node(self, api: str, wanted: dict[str, Any], state: SessionState | None) -> tuple[Sop, Node] | None:
        """The tool node of an API whose fixed params agree with the wizard's constraints (the nearest
        ahead of the goal's position when several do)."""
        imp = next((i for i in self.imports.values() if i.api == api), None)
        sop = self.orch.sops.get(imp.sop_id) if imp else None
        if sop is None or imp is None:
            return None
        nodes = [n for n in sop.nodes.values() if n.tool == imp.tool]
        fitting = [n for n in nodes if all(same(wanted.get(k), v) for k, v in n.arg_map.items()
                                           if not v.startswith("context.") and k in wanted)] or nodes
        goal = latest_open(state, sop.id) if state else None
        here = goal.step if goal else None
        ahead = [n for n in fitting if here and n.id in sop.reachable(here)]
        return (sop, (ahead or fitting)[0]) if fitting else None


def _move(goal: Goal, nxt: str | None) -> None:
    goal.step, goal.pending = nxt, None
    goal.status = GoalStatus.ACTIVE
    goal.next_question, goal.missing, goal.attempts = "", [], {}


def _finished(goal: Goal, sop: Sop | None) -> bool:
    """A goal past its last question: nothing pending and only decisions, messages or the end ahead."""
    if goal.pending or sop is None:
        return False
    node = sop.node(goal.step)
    return node is None or node.kind == "end"


def finish(ops: GoalOps, state: SessionState, *, resume: bool = True) -> None:
    ops.mark_done("completed")
    if not resume and state.active_goal is not None:  # put the resumed goal back where it was
        goal = state.active_goal
        goal.status = GoalStatus.SUSPENDED
        state.goal_stack.append(goal.id)
        state.active_goal_id = None


def latest_open(state: SessionState | None, sop_id: str) -> Goal | None:
    if state is None:
        return None
    goals = [g for g in state.goals.values() if g.type == sop_id]
    open_ = [g for g in goals if g.status != GoalStatus.DONE]
    found = open_ or goals
    return found[-1] if found else None


def same(a: Any, b: Any) -> bool:
    """Values equal once case, spacing and punctuation are ignored ("7pm" = "7 pm", 30 = "30"), and a
    date the engine keeps as YYYY-MM-DD equal to the same date as the wizard wrote it."""
    if a is None or b is None:
        return a is b
    if T.squash(str(a)) == T.squash(str(b)):
        return True
    iso = next((str(v) for v in (a, b) if ISO_DATE.fullmatch(str(v))), None)
    if iso is None:
        return False
    other = str(b if str(a) == iso else a)
    return extract_values(SlotType("date", "date"), other, asked=True) == iso
