"""Replay one STAR dialogue through the engine with teacher forcing (the README's scoring protocol).

At every scored wizard turn the engine gets the history so far and names its next step:

* after customer messages, each message is one engine turn (``handle_message``: the engine's own
  perception, goal detection, slot extraction and step decision); the first step of the last
  turn is the prediction;
* when the wizard acts again with no message in between and has so far done what the engine did
  in its last turn, the prediction is the engine's next step of that turn (it took several: a
  query, then the answer; or one query per day while searching); once the wizard does something
  else, the active goal's step loop runs on a copy of it (the engine's own step decision, nothing
  perceived).

Then the wizard's real action is laid over the session (teacher forcing): its task's goal becomes
active, the goal moves to the chart step the wizard took (asked, told, or queried with the
wizard's values and the dialogue's own result as the observation). The customer's words stay
what the engine made of them. What the engine does is read from its trace; the labels are the
chart's node ids, a tool call is ``query``, and the engine's own small talk maps to STAR's
shared labels (greeting, "anything else?", goodbye, out of scope).

The engine never sees what the protocol withholds (the hidden user instructions, the wizard's
suggestion lists and typed search, the wizard's own words). The one scenario fact it gets is the
calendar the wizard was given ("Today is Friday"): it becomes the engine's clock, so "tomorrow"
means the same day to both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from core.engine.flow import AgentRunRequest
from core.engine.goals import GoalOps
from core.engine.orchestrator import Orchestrator
from core.evaluation.metrics import accuracy
from core.evaluation.star_forcing import Forcing, finish, latest_open, same
from core.importers.star import ImportResult
from core.importers.star_api import normalise
from core.importers.star_format import Dialogue, StarApi, constraints
from core.language import text as T
from core.shared.models import GoalStatus, Message, SessionState, Trace
from core.sop.expr_eval import lookup
from core.sop.graph import Node, Sop
from core.state.memory.base import PreferenceSummary
from core.tools.gateway import ToolScript

GREETING, CLOSING, GOODBYE, OUT_OF_SCOPE = "hello", "anything_else", "goodbye_1", "out_of_scope"
"""STAR's labels shared by every task (its README: wizards use them even where a chart names its own)."""
QUERY = "query"
NO_ACTION = "(no action)"
ACT_LABELS = {"greeting": GREETING, "thanks": CLOSING, "offer_more": CLOSING, "goodbye": GOODBYE,
              "capabilities": OUT_OF_SCOPE, "kb_answer": OUT_OF_SCOPE, "cancelled": CLOSING}
EXTERNAL_KNOWLEDGE = "seek external knowledge"
SCORED = {("Wizard", "pick_suggestion"), ("Wizard", "query")}
REFERENCE_MONDAY = date(2020, 6, 1)


@dataclass
class TaskSpace:
    """An engine on a workspace holding a set of imported tasks (a dialogue's wizard capabilities)."""

    orch: Orchestrator
    imports: dict[str, ImportResult]  # task -> its import
    apis: dict[str, StarApi]  # API name -> schema
    replies: dict[str, str] = field(default_factory=dict)  # chart label -> the wizard's canonical text

    def sop_of_task(self, task: str) -> str | None:
        imp = self.imports.get(task)
        return imp.sop_id if imp else None

    def api_of_tool(self, tool: str) -> str:
        return next((imp.api for imp in self.imports.values() if imp.tool == tool), tool)

    def tool_nodes(self) -> set[str]:
        return {n.id for s in self.orch.sops.values() for n in s.nodes.values() if n.tool}


@dataclass
class Scored:
    """One scored wizard turn."""

    task: str
    gold: str
    predicted: str
    user: str = ""  # the customer's message(s) the step answers ("" when the wizard acted again)


@dataclass
class QueryScore:
    """One wizard query: did the engine call the same API, and which constraint values did it have."""

    task: str
    api_match: bool | None  # None when the engine did not predict a query at that turn
    values: list[tuple[str, bool]] = field(default_factory=list)  # (API input, engine value == wizard value)


@dataclass
class TaskPick:
    """A task the wizard selected in a multi-task dialogue, and the one the engine was on then."""

    selected: str
    engine: str | None
    user: str = ""
    gold: str = ""  # the wizard's step right after selecting

    @property
    def identified(self) -> bool:
        return self.selected == self.engine


@dataclass
class DialogueResult:
    """What replaying one dialogue gave."""

    dialogue: Dialogue
    turns: list[Scored] = field(default_factory=list)
    queries: list[QueryScore] = field(default_factory=list)
    task_picks: list[TaskPick] = field(default_factory=list)
    error: str = ""

    @property
    def accuracy(self) -> float:
        return accuracy([t.gold for t in self.turns], [t.predicted for t in self.turns])


class Replay:
    """Teacher-forced replay of one dialogue on one task space."""

    def __init__(self, space: TaskSpace, dialogue: Dialogue, long_text: set[str]) -> None:
        self.space = space
        self.orch = space.orch
        self.d = dialogue
        self.session = f"star-{dialogue.id}"
        self.long_text = long_text  # API inputs of free long text, left out of value accuracy
        self.result = DialogueResult(dialogue)
        self.pending: list[str] = []
        self.selected: str | None = dialogue.tasks[0] if len(dialogue.tasks) == 1 else None
        self.picked: str | None = None  # a task the wizard selected since the engine last ran
        self.tools = space.tool_nodes()
        self.heard: list[str] = []  # the customer's messages the engine last took in
        self.just_closed = ""  # the goal the engine's last turns completed, if any
        self.last_user = ""
        self.turn_ops: list[dict[str, Any]] = []
        self.turn_sops: list[str] = []  # the SOPs whose tools the engine's last turn called, in order
        self.just_finished = False  # the wizard's last step ended a flow (the engine would have closed it)
        self.plan: list[str] = []  # the rest of the steps the engine took in its last turn, while the wizard agrees
        self.plan_calls: list[dict[str, Any]] = []  # the tool calls of those steps
        self.forcing = Forcing(space.orch, space.imports)

    # ------------------------------------------------------------------ events
    def run(self) -> DialogueResult:
        """Replay every event in order; the result holds each scored step."""
        envs = {id(a.env): a.env for a in self.orch.agents.values()}
        clocks = {k: env.today for k, env in envs.items()}
        if self.d.today in T.WEEKDAYS:  # the wizard's calendar: "today" for the engine too
            day = REFERENCE_MONDAY + timedelta(days=T.WEEKDAYS.index(self.d.today))
            for env in envs.values():
                env.today = _fixed(day)
        try:
            return self._events()
        finally:
            for k, env in envs.items():
                env.today = clocks[k]

    def _events(self) -> DialogueResult:
        events = self.d.events
        for i, e in enumerate(events):
            kind = (e.get("Agent"), e.get("Action"))
            if kind == ("User", "utter") and str(e.get("Text") or "").strip():
                self.pending.append(str(e["Text"]))
            elif kind == ("Wizard", "select_task"):
                self.selected = self.picked = str(e.get("Task"))
            elif kind in SCORED:
                self._scored(e, events[i + 1:])
            elif kind == ("Wizard", "utter") and self.pending:
                self._engine_turns(events[i + 1:])  # the customer's words are understood; free text forces nothing
        return self.result

    def _scored(self, event: dict[str, Any], rest: list[dict[str, Any]]) -> None:
        gold = QUERY if event.get("Action") == "query" else str(event.get("ActionLabel"))
        user = " / ".join(self.pending)
        if not self.pending:
            self.turn_sops = []  # the wizard's forced steps since the engine's turn say where it is now
        if self.pending:
            predicted, calls = self._engine_turns(rest)
        elif self.plan:  # the wizard has done what the engine did so far: its next step is the engine's next one
            predicted = self.plan.pop(0)
            calls = [self.plan_calls.pop(0)] if predicted == QUERY and self.plan_calls else []
        else:
            predicted, calls = self._continue(), []
        if gold != predicted:
            self.plan = []
        state = self._state()
        if self.picked is not None:
            focus = self._focus(state)
            task = next((t for t, i in self.space.imports.items() if i.sop_id == focus), focus)
            self.result.task_picks.append(TaskPick(self.picked, task, user or self.last_user, gold))
            self.picked = None
        task = self.selected or self._task_of(gold, state) or "(none)"
        self.result.turns.append(Scored(task, gold, predicted, user))
        if gold == QUERY:
            self._score_query(event, task, predicted, calls, state)
        self._force(gold, event, rest)

    # ------------------------------------------------------------------ predicting
    def _engine_turns(self, rest: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
        """Run each waiting customer message as one engine turn; the last turn's first step."""
        script = self._script(rest)
        trace: dict[str, Any] = {}
        before = start = self._state()
        self.heard, self.just_finished = list(self.pending), False
        self.last_user = " / ".join(self.pending)
        for text in self.pending:
            before = self._state()
            self.orch.handle_message(self.session, text, script=script)
            trace = self.orch.last_trace(self.session) or {}
        self.pending = []
        after = self._state()
        assert after is not None
        closed = [g for gid, g in after.goals.items() if g.status == GoalStatus.DONE
                  and (start is None or gid not in start.goals or start.goals[gid].status != GoalStatus.DONE)]
        self.just_closed = closed[-1].id if closed else ""
        self.turn_ops = list(trace.get("stack_ops") or [])
        by_tool = {imp.tool: imp.sop_id for imp in self.space.imports.values()}
        self.turn_sops = [by_tool[str(c.get("tool"))] for c in trace.get("tool_calls") or []
                          if str(c.get("tool")) in by_tool]
        first = self._first_act(trace, before, after)
        steps = [label for a in trace.get("actions") or [] if (label := self._label(a))]
        self.plan = steps[1:] if steps and steps[0] == first else []
        calls = list(trace.get("tool_calls") or [])
        self.plan_calls = calls[1:] if first == QUERY else calls
        return first, calls

    def _script(self, rest: list[dict[str, Any]]) -> ToolScript:
        """Tool results for calls the engine makes now: the dialogue's coming results of that API, in order."""
        coming: dict[str, list[dict[str, Any]]] = {}
        for e in rest:
            if e.get("Action") == "return_item":
                coming.setdefault(str(e.get("APIName")), []).append({"result": normalise(e.get("Item"))})
        spec: dict[str, Any] = {}
        for imp in self.space.imports.values():
            spec[imp.tool] = coming.get(imp.api) or [{"result": normalise(None)}]
        return ToolScript(spec)

    def _continue(self) -> str:
        """The active goal's next step with no new message (the engine's step loop on a copy)."""
        state = self._state()
        goal = state.active_goal if state else None
        if goal is None and self.just_finished:
            return CLOSING  # nothing left to do after the flow's last message: "anything else?"
        if state is None or goal is None or goal.pending or goal.type not in self.orch.sops:
            return NO_ACTION
        agent = self.orch.agents.get(self.orch.sop_agent.get(goal.type, ""))
        if agent is None:
            return NO_ACTION
        copy = goal.model_copy(deep=True)
        resp = agent.run(AgentRunRequest(copy, self.orch.sops[goal.type], PreferenceSummary(), turn=state.turn))
        for action in resp.actions:
            return self._label(action)
        return CLOSING if resp.done else NO_ACTION

    def _first_act(self, trace: dict[str, Any], before: SessionState | None, after: SessionState) -> str:
        for action in trace.get("actions") or []:
            label = self._label(action)
            if label:
                return label
        act = str(trace.get("act") or "")
        if act == "reprompt" and after.active_goal is not None and after.active_goal.pending:
            return after.active_goal.pending
        if act in ACT_LABELS:
            return ACT_LABELS[act]
        finished = [g for gid, g in after.goals.items() if g.status == GoalStatus.DONE
                    and (before is None or gid not in before.goals or before.goals[gid].status != GoalStatus.DONE)]
        return CLOSING if finished else NO_ACTION

    def _label(self, action: str) -> str:
        if action in self.tools:
            return QUERY
        if action == EXTERNAL_KNOWLEDGE or action.startswith("follow-up:"):
            return OUT_OF_SCOPE
        return action

    # ------------------------------------------------------------------ scoring queries
    def _score_query(self, event: dict[str, Any], task: str, predicted: str, calls: list[dict[str, Any]],
                     state: SessionState | None) -> None:
        api = str(event.get("APIName"))
        engine_call = next((c for c in calls if self.space.api_of_tool(str(c.get("tool"))) in self.space.apis), None)
        match = None if predicted != QUERY else engine_call is not None and \
            self.space.api_of_tool(str(engine_call.get("tool"))) == api
        wanted = {k: v for k, v in constraints(event).items()
                  if isinstance(v, str | int | float) and not str(v).startswith("api.") and k not in self.long_text}
        sent = self._engine_args(api, wanted, state)
        values = [(k, same(sent.get(k), v)) for k, v in wanted.items()]
        self.result.queries.append(QueryScore(task, match, values))

    def _engine_args(self, api: str, wanted: dict[str, Any], state: SessionState | None) -> dict[str, Any]:
        """The values the engine would send to the wizard's API now (from its own slots)."""
        found = self.forcing.query_node(api, wanted, state)
        if found is None or state is None:
            return {}
        sop, node = found
        goal = latest_open(state, sop.id)
        if goal is None:
            return {}
        return {k: (lookup(goal.slots, src) if src.startswith("context.") else src) for k, src in node.arg_map.items()}

    # ------------------------------------------------------------------ teacher forcing
    def _force(self, gold: str, event: dict[str, Any], rest: list[dict[str, Any]]) -> None:
        self.just_finished = False
        state = self._state() or SessionState(session_id=self.session, workspace_id=self.orch.workspace_id)
        if gold != QUERY:  # what the wizard said is part of the history the engine sees next
            state.history.append(Message(role="assistant", text=self.space.replies.get(gold, gold), turn=state.turn))
        ops = GoalOps(state)
        chosen = self.space.sop_of_task(self.selected) if self.selected else None
        if chosen is not None and (gold == QUERY or self._node(gold, state) is not None):
            # the wizard works on the task it selected
            self.forcing.switch(state, ops, chosen, self.heard, self.just_closed)
        if gold == QUERY:
            self.forcing.force_query(state, ops, event, rest, self.heard, self.just_closed)
        elif (found := self._node(gold, state)) is not None:
            self.just_finished = self.forcing.force_step(state, ops, *found, self.heard, self.just_closed)
        elif gold == CLOSING:
            goal = state.active_goal
            if goal is not None and not goal.pending:
                finish(ops, state)
        elif gold == GOODBYE:
            while state.active_goal is not None:
                finish(ops, state)
        self._save(state)

    # ------------------------------------------------------------------ helpers
    def _node(self, label: str, state: SessionState) -> tuple[Sop, Node] | None:
        """The SOP step a chart label names: in the active goal's SOP first, then the selected task's."""
        order: list[str] = []
        if state.active_goal is not None:
            order.append(state.active_goal.type)
        if self.selected and self.space.sop_of_task(self.selected):
            order.append(str(self.space.sop_of_task(self.selected)))
        order += [self.space.sop_of_task(t) or "" for t in self.d.tasks]
        for sop_id in dict.fromkeys(order):
            sop = self.orch.sops.get(sop_id)
            node = sop.nodes.get(label) if sop else None
            if sop is not None and node is not None and node.kind == "action" and not node.tool:
                return sop, node
        return None

    def _task_of(self, label: str, state: SessionState | None) -> str | None:
        found = self._node(label, state) if state else None
        if found is None:
            return None
        return next((t for t, imp in self.space.imports.items() if imp.sop_id == found[0].id), None)

    def _focus(self, state: SessionState | None) -> str | None:
        """The task the engine is on: the one whose API its last turn called first (the request it
        worked on, though it may have finished it and gone back to another), else a goal its last turns
        started and completed (a request finished in one turn), else its active goal, else the goal those
        turns completed, else the goal it worked on last (after a goodbye nothing is active, but the
        conversation was about that)."""
        if state is None:
            return None
        if self.turn_sops:
            return self.turn_sops[0]
        active, closed = state.active_goal, state.goals.get(self.just_closed)
        started = {op.get("goal_id") for op in self.turn_ops if op.get("op") in ("activate", "suspend_and_activate")}
        if closed is not None and (closed.id in started or active is None):
            return closed.type
        if active is not None:
            return active.type
        last = max(state.goals.values(), key=lambda g: g.updated_at, default=None)
        return last.type if last is not None else None

    def _state(self) -> SessionState | None:
        return self.orch.load_state(self.session)

    def _save(self, state: SessionState) -> None:
        expected = state.version
        state.version += 1
        self.orch.store.save(state, expected, Trace(session_id=self.session, turn=state.turn, user="(forced)"))


def _fixed(day: date) -> Callable[[], date]:
    """A clock that always says ``day``."""
    return lambda: day
