"""``python -m core eval synthetic``: the paper's synthetic evaluation (§4) as a product feature.

Sessions come from :mod:`core.evaluation.generator` (inputs and API outcomes of known kinds,
expected next action at every state). Each session runs through the real engine with the
scripted tool outcomes; the engine's actions are read from its trace and compared state by
state. As in the paper, once a state is wrong every later state of that session counts as
wrong (the agent has left the path).
"""

from __future__ import annotations

import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.engine.build import Workspace, build_orchestrator, load_workspace
from core.engine.orchestrator import Orchestrator
from core.evaluation.generator import SessionPlan, generate_sessions, unexercised
from core.evaluation.walk import END_COMPLETED, EXTERNAL_KNOWLEDGE, Expected, TurnPlan
from core.retrieval.embedding import CachedEmbedder
from core.shared.models import GoalStatus, SessionState
from core.sop.graph import Sop
from core.state.memory import LocalPreferenceMemory
from core.state.sessions import open_state_store
from core.tools.gateway import ToolScript
from core.understanding import LLMUsage
from core.workspace.files import raise_on_errors

Progress = Callable[[int, int], None]
CAUSE_TITLES = {
    "opening": "opening message", "valid": "valid answer", "typo": "valid answer with typos",
    "invalid_format": "answer of the wrong format", "gibberish": "gibberish",
    "chitchat_offtopic": "off-topic chit-chat",
    "chitchat_social": "greeting or thanks", "doubt": "doubt / question", "go_back": "request to go back",
    "api:success": "API result (branch)", "api:failure": "API failure (retry)", "api:timeout": "API timeout (retry)",
    "api:invalid": "invalid-input error", "limit": "repeat limit (graceful end)",
}
OUTCOME_END = {"completed": "completed", "failed": "graceful", "cancelled": "cancelled"}


@dataclass
class Failure:
    """Where a session first left the expected path."""

    session: int
    sop: str
    turn: int
    user: str
    kind: str
    cause: str
    expected: list[str]
    observed: list[str]
    reply: str

    @property
    def category(self) -> str:
        i = next((k for k, (e, o) in enumerate(zip(self.expected, self.observed, strict=False)) if e != o),
                 min(len(self.expected), len(self.observed)))
        exp = self.expected[i] if i < len(self.expected) else "(nothing more)"
        obs = self.observed[i] if i < len(self.observed) else "(nothing more)"
        return f"{CAUSE_TITLES.get(self.cause, self.cause)}: expected {_kind_of(exp)}, got {_kind_of(obs)}"

    def to_dict(self) -> dict[str, Any]:
        return {"session": self.session, "sop": self.sop, "turn": self.turn, "user": self.user, "kind": self.kind,
                "cause": self.cause, "category": self.category, "expected": self.expected,
                "observed": self.observed, "reply": self.reply}


def _kind_of(action: str) -> str:
    if action.startswith("END:"):
        return {"END:completed": "the end of the flow", "END:failed": "a graceful end"}.get(action, action)
    return repr(action)


@dataclass
class Tally:
    """Correct and total states of one group."""

    states: int = 0
    correct: int = 0

    def add(self, ok: bool) -> None:
        self.states += 1
        self.correct += ok

    def to_dict(self) -> dict[str, Any]:
        return {"states": self.states, "correct": self.correct,
                "accuracy": round(self.correct / self.states, 4) if self.states else None}


@dataclass
class SyntheticReport:
    """The outcome of a synthetic evaluation; ``to_dict()`` is JSON-safe."""

    workspace: str
    brain: str | None
    seed: int
    sessions: int
    overall: Tally = field(default_factory=Tally)
    per_sop: dict[str, Tally] = field(default_factory=dict)
    per_cause: dict[str, Tally] = field(default_factory=dict)
    sop_sessions: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    expected_outcomes: Counter[str] = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    params: Tally = field(default_factory=Tally)
    turns: int = 0
    notes: list[str] = field(default_factory=list)
    unexercised: dict[str, list[str]] = field(default_factory=dict)  # SOP -> steps no session reached
    llm: LLMUsage = field(default_factory=LLMUsage)  # calls and prompt tokens of an LLM brain
    reached: Counter[tuple[str, str]] = field(default_factory=Counter)  # (SOP, step) -> sessions that visited it
    handoffs: int = 0  # sessions that went to a person (the customer asked, or an SOP step handed off)
    seconds: float = 0.0

    @property
    def accuracy(self) -> float:
        return self.overall.correct / self.overall.states if self.overall.states else 0.0

    def categories(self) -> dict[str, int]:
        return dict(Counter(f.category for f in self.failures).most_common())

    def to_dict(self) -> dict[str, Any]:
        return {
            "workspace": self.workspace, "brain": self.brain, "seed": self.seed, "sessions": self.sessions,
            "turns": self.turns, "states": self.overall.states, "correct": self.overall.correct,
            "accuracy": round(self.accuracy, 4),
            "per_sop": {k: {**v.to_dict(), "sessions": self.sop_sessions[k]} for k, v in sorted(self.per_sop.items())},
            "per_cause": {k: v.to_dict() for k, v in sorted(self.per_cause.items())},
            "outcomes": dict(sorted(self.outcomes.items())),
            "handoffs": self.handoffs,
            "handoff_rate": round(self.handoffs / self.sessions, 4) if self.sessions else 0.0,
            "expected_outcomes": dict(sorted(self.expected_outcomes.items())),
            "parameter_accuracy": self.params.to_dict(),
            **({"llm": self.llm.to_dict()} if self.llm.turns else {}),
            "failure_categories": self.categories(),
            "failures": [f.to_dict() for f in self.failures],
            "unexercised": self.unexercised, "notes": self.notes, "seconds": round(self.seconds, 1),
        }


# ---------------------------------------------------------------------------- running


def run_synthetic(workspace: str | Path, sessions: int = 220, seed: int = 7, brain: str | None = "rule",
                  progress: Progress | None = None, *, embedder: CachedEmbedder | None = None,
                  loaded: Workspace | None = None) -> SyntheticReport:
    """Generate ``sessions`` synthetic sessions for a workspace's SOPs and grade the brain on them.

    Args:
        workspace: the workspace folder.
        sessions: how many sessions (spread evenly over the SOPs).
        seed: the same seed gives the same sessions and, for a deterministic brain, the same report.
        brain: which brain runs the agent ("rule" offline; None: the default of ``build_orchestrator``).
        progress: called as ``progress(done, total)`` after each session.
        embedder: an embedder to share (tests, the playground); default: the workspace's cache.
        loaded: an already loaded workspace.

    Raises:
        WorkspaceError: when the workspace has errors (``python -m core lint`` lists them).
    """
    ws = loaded or load_workspace(workspace, embedder)
    raise_on_errors(ws.problems)
    plans = generate_sessions(ws, sessions, seed)
    with tempfile.TemporaryDirectory(prefix="sop-eval-") as tmp:
        store = open_state_store(f"sqlite:///{tmp}/sessions.sqlite")
        memory = LocalPreferenceMemory(Path(tmp) / "preferences.sqlite")
        orch = None
        try:
            orch = build_orchestrator(ws.files.root, brain=brain, store=store, memory=memory, loaded=ws)
            report = run_plans(orch, plans, progress=progress)
        finally:
            if orch is not None:
                orch.close()
            store.close()
            memory.close()
    report.workspace, report.brain, report.seed = str(workspace), brain, seed
    return report


def run_plans(orch: Orchestrator, plans: list[SessionPlan], progress: Progress | None = None) -> SyntheticReport:
    """Run generated sessions through an orchestrator and grade every state."""
    started = time.perf_counter()
    report = SyntheticReport(workspace="", brain="", seed=0, sessions=len(plans))
    for done, plan in enumerate(plans, start=1):
        _run_session(orch, plan, report)
        if progress is not None:
            progress(done, len(plans))
    report.notes = sorted({n for p in plans for n in p.notes})
    report.unexercised = unexercised(orch.sops, plans)
    report.seconds = time.perf_counter() - started
    return report


def _run_session(orch: Orchestrator, plan: SessionPlan, report: SyntheticReport) -> None:
    session = f"eval-{plan.index}"
    report.sop_sessions[plan.sop] += 1
    report.expected_outcomes[plan.outcome] += 1
    on_path = True
    visited: set[tuple[str, str]] = set()
    for number, turn in enumerate(plan.turns, start=1):
        before = orch.load_state(session)
        reply = orch.handle_message(session, turn.user, customer_id=plan.customer_id, script=ToolScript(turn.tools))
        state = orch.load_state(session)
        trace = orch.last_trace(session) or {}
        report.llm.add_turn(trace)
        visited |= {(str(p.get("sop", "")), str(p.get("node", ""))) for p in trace.get("path") or []}
        assert state is not None
        observed = observe(orch.sops[plan.sop], before, state, trace)
        report.turns += 1
        if on_path:
            on_path = _grade_turn(plan, number, turn, observed, reply, report)
            if on_path:
                _grade_params(turn, trace, report)
        else:
            _count(plan.sop, turn.expected, [False] * len(turn.expected), report)
    final = orch.load_state(session)
    report.outcomes[_outcome(final, plan.sop)] += 1
    report.handoffs += final is not None and final.handoff_turn is not None
    report.reached.update(visited)


def _grade_turn(plan: SessionPlan, number: int, turn: TurnPlan, observed: list[str], reply: str,
                report: SyntheticReport) -> bool:
    expected = [e.action for e in turn.expected]
    oks = [observed[:i + 1] == expected[:i + 1] for i in range(len(expected))]
    if oks and oks[-1] and len(observed) > len(expected):
        oks[-1] = False  # the agent went on when it should have stopped
    _count(plan.sop, turn.expected, oks, report)
    if all(oks):
        return True
    first = oks.index(False)
    report.failures.append(Failure(plan.index, plan.sop, number, turn.user, turn.kind, turn.expected[first].cause,
                                   expected, observed, reply[:300]))
    return False


def _count(sop: str, expected: list[Expected], oks: list[bool], report: SyntheticReport) -> None:
    for e, ok in zip(expected, oks, strict=True):
        report.overall.add(ok)
        report.per_sop.setdefault(sop, Tally()).add(ok)
        report.per_cause.setdefault(e.cause, Tally()).add(ok)


def _grade_params(turn: TurnPlan, trace: dict[str, Any], report: SyntheticReport) -> None:
    """Slot extraction → API params (paper Table 3): the values the customer typed reach the API intact."""
    calls = [c for c in trace.get("tool_calls", []) if c.get("agent") != "orchestrator"]
    for (tool, want), call in zip(turn.calls, calls, strict=False):
        if not want or call.get("tool") != tool:
            continue
        args = call.get("args") or {}
        report.params.add(all(_same_value(args.get(k), v) for k, v in want.items()))


PHONE_LIKE = re.compile(r"\+?[\d\s().-]{7,}")


def _same_value(got: Any, want: Any) -> bool:
    """A typed value arrived intact: the same text (case aside), or the same phone number with its
    country code written out ("+1 986-741-7919" for 9867417919)."""
    g, w = str(got).strip().lower(), str(want).strip().lower()
    if g == w:
        return True
    if PHONE_LIKE.fullmatch(g) and PHONE_LIKE.fullmatch(w):
        gd, wd = re.sub(r"\D", "", g), re.sub(r"\D", "", w)
        return len(wd) >= 7 and gd.endswith(wd) and len(gd) - len(wd) <= 3
    return False


# ---------------------------------------------------------------------------- observing the engine


def observe(sop: Sop, before: SessionState | None, state: SessionState, trace: dict[str, Any]) -> list[str]:
    """The agent's states in one turn, from its trace: another goal it started, the steps it ran, a
    doubt it answered (from the knowledge base or, for questions about items, the inventory), a
    question it asked again without running a step (after small talk), and the end of the goal."""
    out: list[str] = [f"START:{g.type}" for gid, g in state.goals.items()
                      if g.type != sop.id and (before is None or gid not in before.goals)]
    for action in trace.get("actions", []):
        if action.startswith("follow-up:"):
            action = EXTERNAL_KNOWLEDGE
        if not (out and out[-1] == action == EXTERNAL_KNOWLEDGE):
            out.append(action)
    goal = state.latest_goal(sop.id)
    if goal is None:
        return out
    was_done = before is not None and (old := before.goals.get(goal.id)) is not None and old.status == GoalStatus.DONE
    if goal.status == GoalStatus.DONE and not was_done:
        out.append(f"END:{goal.outcome}" if goal.outcome != "completed" else END_COMPLETED)
    elif goal.id == state.active_goal_id and (pending := sop.node(goal.pending)) is not None:
        if not out or out[-1] != pending.label:
            out.append(pending.label)
    return out


def _outcome(state: SessionState | None, sop_id: str) -> str:
    goal = state.latest_goal(sop_id) if state is not None else None
    if goal is None:
        return "not started"
    if goal.status == GoalStatus.DONE:
        return OUTCOME_END.get(goal.outcome, goal.outcome or "ended")
    return "looped"


# ---------------------------------------------------------------------------- text report


def format_report(report: SyntheticReport, failures: int = 10) -> str:
    """A plain-text summary of a report (the CLI's output without ``--json``)."""
    d = report.to_dict()
    lines = [f"Synthetic evaluation of {d['workspace']} (brain: {d['brain']}, seed {d['seed']})",
             f"{d['sessions']} sessions, {d['turns']} turns, {d['states']} states: "
             f"state-decision accuracy {d['accuracy']:.4f}", ""]
    lines += _table("SOP", {k: v for k, v in d["per_sop"].items()}, with_sessions=True)
    lines += [""] + _table("what called for the state", {CAUSE_TITLES.get(k, k): v for k, v in d["per_cause"].items()})
    out, exp = d["outcomes"], d["expected_outcomes"]
    lines += ["", f"sessions: completed {out.get('completed', 0)}, ended gracefully {out.get('graceful', 0)}, "
                  f"looped {out.get('looped', 0)}" + _others(out)
              + f"  (expected: completed {exp.get('completed', 0)}, graceful {exp.get('graceful', 0)})",
              f"hand-off rate: {d['handoffs']}/{d['sessions']} sessions went to a person ({d['handoff_rate']:.1%})"]
    params = d["parameter_accuracy"]
    if params["states"]:
        lines.append(f"typed values reaching the API intact: {params['correct']}/{params['states']} "
                     f"({params['accuracy']:.4f})")
    if d["failure_categories"]:
        lines += ["", "failures by category (the first wrong state of each failed session):"]
        lines += [f"  {n:4d}  {cat}" for cat, n in d["failure_categories"].items()]
    for f in d["failures"][:failures]:
        lines += [f"  - session {f['session']} ({f['sop']}), turn {f['turn']} [{f['kind']}] {f['user']!r}",
                  f"      expected: {f['expected']}", f"      observed: {f['observed']}"]
    lines += report.llm.lines()
    for sop_id, steps in d["unexercised"].items():
        lines.append(f"not exercised in {sop_id} (no session reached these steps): " + "; ".join(steps))
    lines += [f"note: {n}" for n in d["notes"]]
    return "\n".join(lines)


def _table(title: str, rows: dict[str, dict[str, Any]], with_sessions: bool = False) -> list[str]:
    width = max([len(title), *(len(k) for k in rows)])
    head = f"{title:<{width}}  {'sessions':>8}  {'states':>6}  accuracy" if with_sessions else \
        f"{title:<{width}}  {'states':>6}  accuracy"
    out = [head]
    for name, row in rows.items():
        acc = "-" if row["accuracy"] is None else f"{row['accuracy']:.4f}"
        sessions = f"{row['sessions']:>8}  " if with_sessions else ""
        out.append(f"{name:<{width}}  {sessions}{row['states']:>6}  {acc}")
    return out


def _others(outcomes: dict[str, int]) -> str:
    rest = {k: v for k, v in outcomes.items() if k not in ("completed", "graceful", "looped")}
    return "".join(f", {k} {v}" for k, v in rest.items())
