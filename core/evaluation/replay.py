"""Replay a recorded conversation against an edited workspace: the decisions and replies that change.

Before an author saves an SOP change, they want to know what it does to conversations that already
happened. A *recording* is a conversation's customer messages with the tool outcomes it saw: a
session of the playground (its traces), a session exported from the Inspector (JSON), or a
conversation test file (YAML, its scripted tools). :func:`replay` sends the same messages, on fresh
temporary stores, to the edited workspace and, when given, to the workspace as saved, and lines the
two up turn by turn.

The world is not touched twice: a tool call the recording holds (the same tool and arguments) gets
the recorded outcome; a tool that changes things (``side_effects``) never runs again when replaying a
recorded session (it gets the outcome it had in the recording, or, if it never ran, a failure saying
so); read-only tools the recording did not call (a new lookup the edit adds) run for real. A
conversation test's tools run as they do when the test runs (scripted where it scripts them). Each
turn notes the calls it could not match exactly.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from core.engine.build import Workspace, build_orchestrator
from core.evaluation.recording import outcome
from core.shared.errors import UserInputError
from core.state.memory.local import LocalPreferenceMemory
from core.state.sessions import open_state_store
from core.tools.gateway import ToolScript
from core.workspace.paths import read_text_file

NOT_RUN = "not run during a replay: this tool changes things and the recording never called it"
ASPECTS = ("reply", "steps", "tools", "goal", "decisions")


@dataclass
class RecordedTurn:
    """One customer message of a recording and the tool outcomes its turn saw."""

    user: str
    session: str = "s1"
    calls: list[dict[str, Any]] = field(default_factory=list)  # recorded tool calls: tool, args, ok, result, ...
    script: dict[str, Any] = field(default_factory=dict)  # a test file's scripted outcomes for this turn
    trace: dict[str, Any] | None = None  # what the turn did when it was recorded


@dataclass
class Recording:
    """A conversation to replay."""

    name: str
    turns: list[RecordedTurn]
    customer_id: str = ""

    @property
    def has_replies(self) -> bool:
        """Whether the recording holds what the engine did (a session does; a test file does not)."""
        return bool(self.turns) and all(t.trace is not None for t in self.turns)

    @classmethod
    def from_traces(cls, name: str, traces: Iterable[dict[str, Any]], customer_id: str = "",
                    session: str = "s1") -> Recording:
        """A session's turn traces, oldest first."""
        turns = [RecordedTurn(str(tr.get("user", "")), session, list(tr.get("tool_calls") or []), trace=tr)
                 for tr in traces]
        return cls(name, turns, customer_id)

    @classmethod
    def from_test(cls, spec: dict[str, Any], name: str) -> Recording:
        """A conversation test (ARCHITECTURE.md §6): its messages and scripted tool outcomes."""
        file_tools = spec.get("tools") or {}
        turns = [RecordedTurn(str(t.get("user", "")), str(t.get("session") or "s1"),
                              script={**file_tools, **(t.get("tools") or {})})
                 for t in spec.get("turns") or [] if isinstance(t, dict)]
        return cls(str(spec.get("name") or name), turns, str(spec.get("customer_id") or ""))

    @classmethod
    def load(cls, path: Path) -> Recording:
        """A recording from a file: a session exported from the Inspector (.json) or a conversation test
        (.yaml/.yml)."""
        text = read_text_file(path)
        try:
            data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
        except (json.JSONDecodeError, yaml.YAMLError) as exc:
            raise UserInputError(f"{path.name}: cannot read the recording: {exc}") from exc
        if isinstance(data, dict) and isinstance(data.get("traces"), list):
            state = data.get("state") or {}
            return cls.from_traces(path.stem, data["traces"], str(state.get("customer_id") or ""))
        if isinstance(data, dict) and isinstance(data.get("turns"), list):
            return cls.from_test(data, path.stem)
        raise UserInputError(f"{path.name}: not a recording: expected a session exported from the Inspector "
                             "(JSON with 'traces') or a conversation test (YAML with 'turns')")


@dataclass
class Side:
    """What one run of a turn did."""

    reply: str = ""
    steps: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    goal: str = ""
    decisions: list[str] = field(default_factory=list)
    why: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, trace: dict[str, Any]) -> Side:
        ops = trace.get("stack_ops") or []
        goal = " → ".join(f"{o.get('op')} {o.get('goal')}" for o in ops)
        return cls(reply=str(trace.get("reply", "")), steps=[str(a) for a in trace.get("actions") or []],
                   tools=[_call_text(c) for c in trace.get("tool_calls") or []], goal=goal,
                   decisions=[str(d) for d in trace.get("decisions") or []], why=list(trace.get("why") or []))

    def as_dict(self) -> dict[str, Any]:
        return {"reply": self.reply, "steps": self.steps, "tools": self.tools, "goal": self.goal,
                "decisions": self.decisions, "why": self.why}


@dataclass
class ReplayedTurn:
    """One turn, before and after the edit."""

    turn: int
    user: str
    session: str
    before: Side
    after: Side
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> list[str]:
        """What differs: reply, steps, tools, goal, decisions."""
        return [a for a in ASPECTS if getattr(self.before, a) != getattr(self.after, a)]

    def as_dict(self) -> dict[str, Any]:
        return {"turn": self.turn, "user": self.user, "session": self.session, "changed": self.changed,
                "before": self.before.as_dict(), "after": self.after.as_dict(), "notes": self.notes}


@dataclass
class ReplayReport:
    """A recording replayed: each turn before and after."""

    name: str
    before_label: str
    after_label: str
    turns: list[ReplayedTurn] = field(default_factory=list)

    @property
    def changed_turns(self) -> list[ReplayedTurn]:
        return [t for t in self.turns if t.changed]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "before": self.before_label, "after": self.after_label,
                "turns": len(self.turns), "changed": len(self.changed_turns),
                "details": [t.as_dict() for t in self.turns]}

    def text(self) -> str:
        """The report for a terminal: changed turns side by side, unchanged ones in one line each."""
        lines = [f"Replay of {self.name!r}: {len(self.changed_turns)} of {len(self.turns)} turn(s) change "
                 f"({self.before_label} → {self.after_label})", ""]
        for t in self.turns:
            if not t.changed:
                lines.append(f"  turn {t.turn}: unchanged · {t.user[:70]}")
                continue
            lines.append(f"✱ turn {t.turn}: {', '.join(t.changed)} changed · customer: {t.user}")
            for aspect in t.changed:
                lines.append(f"    {aspect} before: {_shown(getattr(t.before, aspect))}")
                lines.append(f"    {aspect} after:  {_shown(getattr(t.after, aspect))}")
            lines += [f"    note: {n}" for n in t.notes]
        return "\n".join(lines)


class ReplayTools(ToolScript):
    """Tool outcomes for one replayed turn: the recording's for the calls it holds, never a second run of a
    tool that changes things (see the module's rules)."""

    def __init__(self, turn: RecordedTurn, everything: list[dict[str, Any]], changing: set[str]) -> None:
        super().__init__(turn.script)
        self._turn = [c for c in turn.calls if c.get("error_kind") != "denied"]
        self._all = [c for c in everything if c.get("error_kind") != "denied"]
        self._changing = changing
        self._taken: set[int] = set()
        self.notes: list[str] = []

    def has(self, tool: str, args: Mapping[str, Any] | None = None) -> bool:
        return super().has(tool) or self._match(tool, args) is not None or tool in self._changing

    def next(self, tool: str, args: Mapping[str, Any] | None = None) -> dict[str, Any]:
        if super().has(tool):
            return super().next(tool)
        found = self._match(tool, args)
        if found is not None:
            self._taken.add(id(found))
            return outcome(found)
        earlier = next((c for c in reversed(self._all) if c.get("tool") == tool), None)
        if earlier is not None:
            self.notes.append(f"{tool}{_args_text(args)} changes things: not run; the recording's outcome of "
                              f"{tool}{_args_text(earlier.get('args'))} was used instead")
            return outcome(earlier)
        self.notes.append(f"{tool}{_args_text(args)} changes things and the recording never called it: not run")
        return {"error": NOT_RUN, "kind": "failure"}

    def _match(self, tool: str, args: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The recorded call of ``tool`` with the same arguments: this turn's first, then any turn's."""
        key = _key(args)
        for pool in (self._turn, self._all):
            for c in pool:
                if c.get("tool") == tool and _key(c.get("args")) == key and id(c) not in self._taken:
                    return c
            for c in pool:  # a call repeated more often than recorded gets the last recorded outcome
                if c.get("tool") == tool and _key(c.get("args")) == key:
                    return c
        return None


Loaded = tuple[Path, Workspace]  # a workspace folder and the workspace loaded from it
Progress = Callable[[float, str], None]


def replay(recording: Recording, after: Loaded, before: Loaded | None = None, *, before_label: str = "",
           after_label: str = "", progress: Progress | None = None, **build: Any) -> ReplayReport:
    """Replay ``recording`` on ``after`` and line it up with ``before`` (replayed the same way) or, with no
    ``before``, with what the recording says happened. ``build``: options for :func:`build_orchestrator`
    (the brain)."""
    if not recording.turns:
        raise UserInputError(f"{recording.name!r} has no customer messages to replay")
    if before is None and not recording.has_replies:
        raise UserInputError(f"{recording.name!r} holds no replies of its own (a conversation test): replay it "
                             "against the workspace as saved and an edited one")
    report = (progress or (lambda _f, _s: None))
    old_runs: list[tuple[dict[str, Any], list[str]]]
    if before is None:
        old_runs = [(t.trace or {}, []) for t in recording.turns]
    else:
        old_runs = _run(recording, before, lambda f, s: report(f / 2, s), build)
    new_runs = _run(recording, after, lambda f, s: report(0.5 + f / 2 if before else f, s), build)
    out = ReplayReport(recording.name, before_label or ("as recorded" if before is None else "as saved"),
                       after_label or "edited")
    for i, (turn, (old, old_notes), (new, new_notes)) in enumerate(
            zip(recording.turns, old_runs, new_runs, strict=True), start=1):
        out.turns.append(ReplayedTurn(i, turn.user, turn.session, Side.of(old), Side.of(new),
                                      list(dict.fromkeys(old_notes + new_notes))))
    report(1.0, "done")
    return out


def _run(recording: Recording, where: Loaded, report: Progress,
         build: dict[str, Any]) -> list[tuple[dict[str, Any], list[str]]]:
    root, workspace = where
    if workspace.kb is not None:
        workspace.kb.wait()  # a replay sees the whole knowledge base
    # a recorded session touched the world: its changes are never made again; a test file's tools run as
    # they do when the test runs (scripted where it scripts them)
    changing = {name for name, tool in workspace.tools.items() if tool.spec.side_effects} \
        if recording.has_replies else set()
    everything = [c for t in recording.turns for c in t.calls]
    out: list[tuple[dict[str, Any], list[str]]] = []
    with tempfile.TemporaryDirectory(prefix="sop-replay-") as tmp:
        store = open_state_store(f"sqlite:///{tmp}/sessions.sqlite")
        memory = LocalPreferenceMemory(Path(tmp) / "preferences.sqlite")
        try:
            orch = build_orchestrator(root, store=store, memory=memory, loaded=workspace, **build)
            for i, turn in enumerate(recording.turns):
                report(i / len(recording.turns), f"turn {i + 1} of {len(recording.turns)}")
                tools = ReplayTools(turn, everything, changing)
                orch.handle_message(turn.session, turn.user, customer_id=recording.customer_id or None,
                                    script=tools)
                out.append((orch.last_trace(turn.session) or {}, tools.notes))
        finally:
            store.close()
            memory.close()
    return out


def _key(args: Any) -> str:
    """Arguments compared as the customer's values, whatever their Python type ("7" and 7 alike)."""
    if not isinstance(args, Mapping):
        return ""
    return json.dumps({str(k): str(v) for k, v in args.items() if v not in (None, "")}, sort_keys=True)


def _args_text(args: Any) -> str:
    if not isinstance(args, Mapping):
        return "()"
    return "(" + ", ".join(f"{k}={v}" for k, v in args.items()) + ")"


def _call_text(call: dict[str, Any]) -> str:
    state = "" if call.get("ok", True) else f" ✗ {call.get('error_kind') or 'failure'}"
    return f"{call.get('tool')}{_args_text(call.get('args'))}{state}"


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return " | ".join(str(v) for v in value) or "—"
    return " ".join(str(value).split()) or "—"
