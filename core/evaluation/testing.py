"""The conversation test runner (ARCHITECTURE.md §6) with the §7 invariants checked every turn."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.engine.build import Workspace, build_orchestrator, load_workspace
from core.engine.flow import MAX_ATTEMPTS
from core.engine.grounding import SourceNumbers, session_sources, ungrounded
from core.engine.orchestrator import Orchestrator
from core.evaluation.testspec import TestFileError, load_spec
from core.shared.errors import UserInputError
from core.shared.models import GoalStatus, SessionState
from core.state.memory import LocalPreferenceMemory
from core.state.sessions import open_state_store
from core.tools.gateway import ToolScript

EXPECT_KEYS = {"active_goal", "status", "missing", "slots", "stack", "tools", "actions", "goal_status",
               "reply_contains", "reply_not_contains", "ended", "memory"}


@dataclass
class TurnResult:
    user: str
    reply: str
    passed: bool
    failures: list[str] = field(default_factory=list)
    session: str = "s1"
    trace: dict[str, Any] = field(default_factory=dict)
    seen: dict[str, Any] = field(default_factory=dict)  # what the turn did, as an expect block (see observed)

    def as_dict(self) -> dict[str, Any]:
        return {"user": self.user, "reply": self.reply, "passed": self.passed, "failures": self.failures,
                "session": self.session}


@dataclass
class FileResult:
    file: str
    name: str
    turns: list[TurnResult] = field(default_factory=list)
    error: str = ""
    workspace: str = ""  # the folder of the workspace the conversation ran on (empty when it did not run)

    @property
    def handed_off(self) -> bool:
        """Whether the conversation went to a person (the customer asked, or an SOP step handed off)."""
        return any(t.trace.get("handoff") for t in self.turns)

    @property
    def passed(self) -> bool:
        return not self.error and all(t.passed for t in self.turns)

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "name": self.name, "passed": self.passed, "error": self.error,
                "turns": [t.as_dict() for t in self.turns]}


class WorkspaceCache:
    """Loaded workspaces shared across test files (loading embeds SOP triggers and KB once)."""

    def __init__(self) -> None:
        self._loaded: dict[Path, Workspace] = {}

    def put(self, root: Path, workspace: Workspace) -> None:
        """Use an already loaded workspace for ``root``."""
        self._loaded[root.resolve()] = workspace

    def get(self, root: Path) -> Workspace:
        key = root.resolve()
        if key not in self._loaded:
            self._loaded[key] = load_workspace(key)
        return self._loaded[key]


def collect(paths: list[str]) -> list[Path]:
    """Test files under the given files/folders (``*.yaml``/``*.yml``), sorted."""
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            out += sorted([*path.rglob("*.yaml"), *path.rglob("*.yml")])
        elif path.exists():
            out.append(path)
        else:
            raise UserInputError(f"no such test file or folder: {p}")
    return out


def run_file(path: Path, default_workspace: Path | None, cache: WorkspaceCache) -> FileResult:
    """Run one conversation file on a fresh temporary state store and preference store."""
    try:
        spec = load_spec(path)
    except TestFileError as exc:  # not run, so it fails with each reason where it is in the file
        return FileResult(str(path), path.stem, error=str(exc))
    return run_spec(spec, path, default_workspace, cache)


def run_spec(spec: dict[str, Any], path: Path, default_workspace: Path | None, cache: WorkspaceCache) -> FileResult:
    """Run a conversation given as data (``path`` names it and anchors its ``workspace:``)."""
    result = FileResult(str(path), str(spec.get("name") or path.stem))
    ws_root = (path.parent / spec["workspace"]) if spec.get("workspace") else default_workspace
    if ws_root is None:
        result.error = "no workspace: set 'workspace:' in the file or pass --workspace"
        return result
    with tempfile.TemporaryDirectory(prefix="sop-test-") as tmp:
        store = open_state_store(f"sqlite:///{tmp}/sessions.sqlite")
        memory = LocalPreferenceMemory(Path(tmp) / "preferences.sqlite")
        try:
            loaded = cache.get(ws_root)
            result.workspace = str(ws_root.resolve())
            orch = build_orchestrator(ws_root, store=store, memory=memory, loaded=loaded)
            _run_turns(orch, spec, result)
        except UserInputError as exc:
            result.error = str(exc)
        finally:
            store.close()
            memory.close()
    return result


def _run_turns(orch: Orchestrator, spec: dict[str, Any], result: FileResult) -> None:
    customer = spec.get("customer_id")
    file_tools = spec.get("tools") or {}
    checker = InvariantChecker(orch)
    for turn in spec.get("turns") or []:
        session = str(turn.get("session") or "s1")
        user = str(turn.get("user", ""))
        script = ToolScript({**file_tools, **(turn.get("tools") or {})})
        before = orch.load_state(session)
        reply = orch.handle_message(session, user, customer_id=customer, script=script)
        state = orch.load_state(session)
        trace = orch.last_trace(session) or {}
        assert state is not None
        failures = [f"unknown expect key {k!r}" for k in (turn.get("expect") or {}) if k not in EXPECT_KEYS]
        failures += check_expect(turn.get("expect") or {}, state, trace, reply)
        failures += checker.check(before, state, trace, reply)
        result.turns.append(TurnResult(user, reply, not failures, failures, session, trace,
                                       observed(state, trace, reply)))


def observed(state: SessionState, trace: dict[str, Any], reply: str) -> dict[str, Any]:
    """What a turn did, as the ``expect`` block that :func:`check_expect` would pass (the reply whole,
    slots with plain values only, every goal type's latest status)."""
    goal = state.active_goal
    latest = {g.type: g.status.value for g in state.goals.values()}  # the last created of each type wins
    return {
        "active_goal": goal.type if goal else None,
        "status": goal.status.value if goal else None,
        "missing": list(goal.missing) if goal else [],
        "slots": {k: v for k, v in (goal.slots if goal else {}).items()
                  if isinstance(v, str | int | float | bool) and not k.startswith("_")},
        "stack": [state.goals[g].type for g in state.goal_stack],
        "tools": [c["tool"] for c in trace.get("tool_calls", [])],
        "actions": [a for a in trace.get("actions", []) if not a.startswith("follow-up:")],
        "goal_status": latest,
        "reply_contains": [reply] if reply.strip() else [],
        "ended": state.active_goal_id is None and not state.goal_stack,
    }


def check_expect(expect: dict[str, Any], state: SessionState, trace: dict[str, Any], reply: str) -> list[str]:
    """Compare one turn's outcome with its ``expect`` block."""
    fails: list[str] = []
    goal = state.active_goal
    if "active_goal" in expect and (goal.type if goal else None) != expect["active_goal"]:
        fails.append(f"active_goal: expected {expect['active_goal']!r}, got {goal.type if goal else None!r}")
    if "status" in expect and (goal.status.value if goal else None) != expect["status"]:
        fails.append(f"status: expected {expect['status']!r}, got {goal.status.value if goal else None!r}")
    if "missing" in expect:
        have = goal.missing if goal else []
        lacking = [m for m in expect["missing"] if m not in have]
        if lacking:
            fails.append(f"missing: expected {lacking} among {have}")
    if "slots" in expect:
        # with no goal active, the goal this turn finished (a request done in one message) is the one meant
        shown = goal or max(state.goals.values(), key=lambda g: g.updated_at, default=None)
        have_slots = shown.slots if shown else {}
        for k, v in expect["slots"].items():
            if not _same(have_slots.get(k), v):
                fails.append(f"slots.{k}: expected {v!r}, got {have_slots.get(k)!r}")
    if "stack" in expect:
        stack = [state.goals[g].type for g in state.goal_stack]
        if stack != list(expect["stack"]):
            fails.append(f"stack: expected {expect['stack']}, got {stack}")
    fails += _expect_lists(expect, trace)
    if "memory" in expect:
        fails += _expect_memory(expect["memory"], state)
    for gtype, want in (expect.get("goal_status") or {}).items():
        g = state.latest_goal(gtype)
        got = g.status.value if g else None
        if got != want:
            fails.append(f"goal_status.{gtype}: expected {want!r}, got {got!r}")
    fails += _expect_reply(expect, reply)
    if "ended" in expect:
        ended = state.active_goal_id is None and not state.goal_stack
        if ended != bool(expect["ended"]):
            fails.append(f"ended: expected {expect['ended']}, got {ended}")
    return fails


def _expect_reply(expect: dict[str, Any], reply: str) -> list[str]:
    low = reply.lower()
    fails = [f"reply_contains: {s!r} not in reply" for s in expect.get("reply_contains") or []
             if str(s).lower() not in low]
    fails += [f"reply_not_contains: {s!r} is in reply" for s in expect.get("reply_not_contains") or []
              if str(s).lower() in low]
    return fails


def _expect_lists(expect: dict[str, Any], trace: dict[str, Any]) -> list[str]:
    fails = []
    if "tools" in expect:
        tools = [c["tool"] for c in trace.get("tool_calls", [])]
        if tools != list(expect["tools"]):
            fails.append(f"tools: expected {expect['tools']}, got {tools}")
    if "actions" in expect:
        actions = [a for a in trace.get("actions", []) if not a.startswith("follow-up:")]
        if actions != list(expect["actions"]):
            fails.append(f"actions: expected {expect['actions']}, got {actions}")
    return fails


def _expect_memory(want: list[dict[str, Any]], state: SessionState) -> list[str]:
    """The execution memory (paper §2.2.2) of the active goal, else of the goal updated last: entry by
    entry, exact length; each entry checks the keys it gives (a dict observation: the keys given)."""
    goal = state.active_goal or max(state.goals.values(), key=lambda g: g.updated_at, default=None)
    have = [e.model_dump(include={"action", "observation", "feedback"}) for e in goal.memory] if goal else []
    fails = []
    if len(have) != len(want):
        fails.append(f"memory: expected {len(want)} entries, got {len(have)}: "
                     f"{[(e['action'], e['feedback']) for e in have]}")
    for i, (h, w) in enumerate(zip(have, want, strict=False), start=1):
        for key, value in w.items():
            got = h.get(key)
            ok = (isinstance(got, dict) and all(_same(got.get(k), v) for k, v in value.items())) \
                if isinstance(value, dict) else _same(got, value)
            if not ok:
                fails.append(f"memory[{i}].{key}: expected {value!r}, got {got!r}")
    return fails


def _same(have: Any, want: Any) -> bool:
    if isinstance(want, int | float) and not isinstance(want, bool):
        try:
            return float(have) == float(want)
        except (TypeError, ValueError):
            return False
    if isinstance(want, str) and isinstance(have, str):
        return have.strip().lower() == want.strip().lower()
    return bool(have == want)


class InvariantChecker:
    """ARCHITECTURE.md §7, checked after every turn."""

    def __init__(self, orch: Orchestrator) -> None:
        self.orch = orch

    def check(self, before: SessionState | None, state: SessionState, trace: dict[str, Any], reply: str) -> list[str]:
        fails: list[str] = []
        fails += self._blocked(state)
        fails += self._stack(before, state, trace)
        fails += self._permissions(trace)
        fails += self._grounding(state, reply)
        expected_version = (before.version if before else 0) + 1
        if state.version != expected_version:
            fails.append(f"invariant: version {state.version}, expected {expected_version}")
        for g in state.goals.values():
            for node, n in g.attempts.items():
                if n > MAX_ATTEMPTS:
                    fails.append(f"invariant: {g.type} step {node} ran {n} times without progress")
        return fails

    @staticmethod
    def _blocked(state: SessionState) -> list[str]:
        return [f"invariant: blocked goal {g.type} lacks missing/next_question" for g in state.goals.values()
                if g.status == GoalStatus.BLOCKED and (not g.missing or not g.next_question)]

    @staticmethod
    def _stack(before: SessionState | None, state: SessionState, trace: dict[str, Any]) -> list[str]:
        fails = []
        if state.active_goal_id and state.active_goal_id in state.goal_stack:
            fails.append("invariant: the active goal is also on the stack")
        for gid in state.goal_stack:
            if state.goals[gid].status != GoalStatus.SUSPENDED:
                fails.append(f"invariant: stacked goal {state.goals[gid].type} is {state.goals[gid].status.value}")
        stack = list(before.goal_stack) if before else []
        for op in trace.get("stack_ops", []):
            if op["op"] == "push":
                if op["goal_id"] in stack:
                    fails.append("invariant: a goal was pushed twice")
                stack.append(op["goal_id"])
            elif op["op"] == "pop":
                if op["goal_id"] not in stack:
                    fails.append("invariant: popped a goal that was not on the stack")
                else:
                    stack.remove(op["goal_id"])
        if sorted(stack) != sorted(state.goal_stack):
            fails.append(f"invariant: stack changed without push/pop ({stack} vs {state.goal_stack})")
        return fails

    def _permissions(self, trace: dict[str, Any]) -> list[str]:
        fails = []
        for c in trace.get("tool_calls", []):
            agent, tool = c.get("agent"), c.get("tool")
            if agent == "orchestrator" and tool == "knowledge_base.search":
                continue
            if not self.orch.gateway.allowed(agent, tool):
                fails.append(f"invariant: {agent} called {tool} outside its permissions")
        return fails

    def _grounding(self, state: SessionState, reply: str) -> list[str]:
        sources = session_sources(state)
        for t in self.orch.store.traces(state.session_id):
            sources += [c.get("result") for c in t.get("tool_calls", [])]
        bad = ungrounded(reply, SourceNumbers(sources, self.orch._sop_text_numbers))
        return [f"invariant: reply states ungrounded number(s) {bad}"] if bad else []
