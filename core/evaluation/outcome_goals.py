"""Simulated customers judged by their goal: what the customer wanted, written apart from the SOPs under test.

The personas of :mod:`core.evaluation.personas` read what a customer should go through from the SOP being
tested, so an SOP that ends too early or takes the wrong branch sets its own bar. A goals file says instead
what each customer wants, in terms of the outcome only, and each run is judged by that::

    - name: a shipped order
      request: where is my order?
      knows: {order_id: A123}              # what the customer answers when asked for it (by slot name)
      world:                               # optional: the tool results of the customer's world
        orders.get_status: [{result: {status: shipped}}]
      wants:                               # every key optional; all must hold
        called: {orders.get_status: {order_id: A123}}   # a call of the tool with these arguments
        reply_contains: [shipped]          # said in some reply (case-insensitive)
        reply_not_contains: [cancelled]    # said in no reply
        handoff: false                     # whether the customer was handed to the team

``python -m core simulate --goals FILE`` plays each goal once (offline: the customer opens with the request and
answers a question with what it knows, else says it does not know) and reports the goals not met.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from core.engine.build import Workspace, build_orchestrator, load_workspace
from core.engine.orchestrator import Orchestrator
from core.shared.errors import Location, UserInputError
from core.shared.models import SessionState
from core.state.memory import LocalPreferenceMemory
from core.state.sessions import open_state_store
from core.tools.gateway import ToolScript
from core.workspace.files import raise_on_errors

WANTS = ("called", "reply_contains", "reply_not_contains", "handoff")
KEYS = ("name", "request", "knows", "world", "wants", "customer_id")
MAX_MESSAGES = 12
UNKNOWN = "I don't know that, sorry."


@dataclass
class OutcomeGoal:
    """One customer's goal: the request, what they know, their world, and the outcome they want."""

    name: str
    request: str
    knows: dict[str, Any] = field(default_factory=dict)
    world: dict[str, Any] = field(default_factory=dict)
    wants: dict[str, Any] = field(default_factory=dict)
    customer_id: str | None = None


@dataclass
class GoalRun:
    """One conversation played for a goal, and what it missed of the goal ('' problems: met)."""

    goal: str
    turns: list[tuple[str, str]] = field(default_factory=list)
    traces: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def met(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"goal": self.goal, "met": self.met, "problems": self.problems,
                "turns": [{"user": u, "reply": r} for u, r in self.turns]}


def load_goals(path: Path) -> list[OutcomeGoal]:
    """The goals of a goals file.

    Raises:
        UserInputError: naming the file, the goal and what is wrong with it.
    """
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise UserInputError(f"cannot read the goals: {exc}", Location(str(path))) from None
    if not isinstance(data, list) or not data:
        raise UserInputError("a goals file is a list of goals, each with a request and what it wants",
                             Location(str(path)))
    return [_goal(entry, i, path) for i, entry in enumerate(data, start=1)]


def _goal(entry: Any, i: int, path: Path) -> OutcomeGoal:
    where = Location(str(path))
    if not isinstance(entry, dict) or not isinstance(entry.get("request"), str) or not entry["request"].strip():
        raise UserInputError(f"goal {i}: needs a request (the customer's first message)", where)
    name = str(entry.get("name") or f"goal {i}")
    unknown = sorted(set(map(str, entry)) - set(KEYS))
    wants = entry.get("wants") or {}
    if unknown or not isinstance(wants, dict) or set(map(str, wants)) - set(WANTS) or not wants:
        raise UserInputError(f"goal {name!r}: keys are {', '.join(KEYS)} and wants takes {', '.join(WANTS)} "
                             f"(at least one){'; unknown: ' + ', '.join(unknown) if unknown else ''}", where)
    for key in ("knows", "world"):
        if not isinstance(entry.get(key) or {}, dict):
            raise UserInputError(f"goal {name!r}: {key} must be a mapping", where)
    if not isinstance(wants.get("called") or {}, dict) or not all(
            isinstance(a, dict) for a in (wants.get("called") or {}).values()):
        raise UserInputError(f"goal {name!r}: wants.called maps a tool to the arguments it must get", where)
    customer = entry.get("customer_id")
    return OutcomeGoal(name, entry["request"].strip(), dict(entry.get("knows") or {}), dict(entry.get("world") or {}),
                       dict(wants), str(customer) if customer is not None else None)


def simulate_goals(workspace: str | Path, goals: list[OutcomeGoal], *, k: int = 1, brain: str | None = "rule",
                   loaded: Workspace | None = None) -> list[GoalRun]:
    """Play every goal ``k`` times against the workspace, on stores of their own, and judge each run.

    Raises:
        WorkspaceError: the workspace has errors.
    """
    ws = loaded or load_workspace(workspace)
    raise_on_errors(ws.problems)
    with tempfile.TemporaryDirectory(prefix="sop-goals-") as tmp:
        store = open_state_store(f"sqlite:///{tmp}/sessions.sqlite")
        memory = LocalPreferenceMemory(Path(tmp) / "preferences.sqlite")
        orch = build_orchestrator(ws.files.root, brain=brain, store=store, memory=memory, loaded=ws)
        try:
            return [play_goal(orch, goal, f"goal-{i}-{trial + 1}") for i, goal in enumerate(goals, start=1)
                    for trial in range(k)]
        finally:
            orch.close()
            store.close()
            memory.close()


def format_goal_runs(runs: list[GoalRun]) -> str:
    """One line per run (met or missed) and, under a missed one, what it missed."""
    lines = []
    for run in runs:
        lines.append(f"{'MET   ' if run.met else 'MISSED'}  {run.goal}")
        lines += [f"        {p}" for p in run.problems]
    met = sum(r.met for r in runs)
    lines.append(f"{met}/{len(runs)} goal run(s) met")
    return "\n".join(lines)


def play_goal(orch: Orchestrator, goal: OutcomeGoal, session: str) -> GoalRun:
    """Play one customer for ``goal``: the request, then an answer to each question from what it knows (once
    "I don't know" when it knows nothing asked), until no request runs or MAX_MESSAGES; then judge it."""
    run = GoalRun(goal.name)
    script = ToolScript(goal.world)
    message: str | None = goal.request
    shrugged = False
    while message is not None and len(run.turns) < MAX_MESSAGES:
        reply = orch.handle_message(session, message, customer_id=goal.customer_id, script=script)
        run.turns.append((message, reply))
        run.traces.append(orch.last_trace(session) or {})
        message = _answer(orch, orch.load_state(session), goal)
        if message == UNKNOWN:
            message, shrugged = (None, True) if shrugged else (message, True)
    run.problems = judge_outcome(run, goal)
    return run


def _answer(orch: Orchestrator, state: SessionState | None, goal: OutcomeGoal) -> str | None:
    """What the customer says to the question pending now (None: nothing is asked, the conversation is over)."""
    active = state.goals.get(state.active_goal_id) if state is not None and state.active_goal_id else None
    sop = orch.sops.get(active.type) if active is not None else None
    node = sop.node(active.pending) if sop is not None and active is not None and active.pending else None
    if node is None:
        return None
    known = [str(goal.knows[p.name]) for p in node.fills if p.name in goal.knows]
    return ", ".join(known) if known else UNKNOWN


def judge_outcome(run: GoalRun, goal: OutcomeGoal) -> list[str]:
    """What the run missed of what the goal wants (empty: the goal was met)."""
    wants, problems = goal.wants, []
    calls = [c for t in run.traces for c in t.get("tool_calls") or []]
    for tool, args in (wants.get("called") or {}).items():
        made = [c.get("args") or {} for c in calls if c.get("tool") == tool]
        if not any(all(_same(a.get(k), v) for k, v in args.items()) for a in made):
            problems.append(f"{tool} was {'called with ' + _shown(made[-1]) if made else 'never called'}; the goal "
                            f"wants it called with {_shown(args)}")
    replies = " \n".join(r for _, r in run.turns).lower()
    problems += [f"no reply says {w!r}" for w in wants.get("reply_contains") or [] if str(w).lower() not in replies]
    problems += [f"a reply says {w!r}" for w in wants.get("reply_not_contains") or [] if str(w).lower() in replies]
    if "handoff" in wants:
        handed = any(t.get("handoff") for t in run.traces)
        if handed != bool(wants["handoff"]):
            problems.append("the customer was handed to the team" if handed else "the customer never reached the team")
    return problems


def _same(got: Any, want: Any) -> bool:
    if got is None:
        return want is None
    try:
        return abs(float(got) - float(want)) < 1e-9
    except (TypeError, ValueError):
        return re.sub(r"\s+", " ", str(got)).strip().lower() == re.sub(r"\s+", " ", str(want)).strip().lower()


def _shown(args: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in args.items()) or "no arguments"
