"""``python -m core simulate``: simulated customers try an SOP before real ones do.

Each persona (:mod:`core.evaluation.personas`: a goal and a manner) plays the customer against the engine
``k`` times, with the tool results of the goal's world scripted. Offline, a persona's messages are built by
rules (same seed, same report); with a language model configured, the model plays the customer from the
persona (:mod:`core.evaluation.sim_llm`). Every run is judged by checks read from the SOP and the goal:

- ``started``: a goal of the persona's SOP was started;
- ``end``: it ended the way the goal wants (completed, or the graceful end the goal's world leads to);
- ``steps``: it ran the steps the goal's path runs, in order;
- ``tools``: every tool the path calls was called, its latest call with the goal's values;
- ``on_goal``: the agent took up the request at the first message and started no SOP the customer did not
  ask for (a side question answered as a new request, a thank-you taken for the whole message);
- ``no_loop``: no error or fallback loop: no reply shows a template placeholder left unfilled, no two
  messages in a row were not understood, no reply repeated three times, and the conversation ended before
  the turn limit.

A persona passes ``pass^k`` when all its k runs pass (tau-bench's measure of reliability); ``pass@1`` is
the share of runs that pass. With a language model configured, a judge also rates each run on soft
criteria (polite, no invented facts), reported apart from the checks.
"""

from __future__ import annotations

import random
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.engine.build import Workspace, build_orchestrator, load_workspace
from core.engine.orchestrator import Orchestrator
from core.evaluation.data import DataIndex
from core.evaluation.personas import Goal, Heard, Persona, ScriptedCustomer, make_personas, side_topics
from core.evaluation.recording import dump, file_stem, recorded_test
from core.evaluation.sim_llm import JUDGE, SIMULATOR, Judgement, LLMCustomer, judge_run
from core.evaluation.sop_context import SopContext
from core.evaluation.synthetic import _same_value
from core.evaluation.testing import WorkspaceCache
from core.retrieval.embedding import CachedEmbedder
from core.shared.models import GoalStatus, SessionState
from core.state.memory import LocalPreferenceMemory
from core.state.sessions import open_state_store
from core.tools.gateway import ToolScript
from core.understanding.brains.llm_client import ChatModel, LLMSettings, OpenAIChat
from core.workspace.config import raise_on_errors

Progress = Callable[[int, int], None]
PLACEHOLDER = re.compile(r"\{\s*(?:context\.)?[A-Za-z_][\w.]*\s*\}")  # a template reference left in a reply
CHECKS = ("started", "end", "steps", "tools", "on_goal", "no_loop")
CHECK_TITLES = {"started": "the SOP was started", "end": "it ended as the goal wants",
                "steps": "the goal's steps ran", "tools": "tools called with the goal's values",
                "on_goal": "stayed on the customer's request",
                "no_loop": "no error or fallback loop"}


@dataclass
class Run:
    """One conversation of a persona with the engine, and how it was judged."""

    persona: str
    trial: int
    session: str
    customer_id: str | None
    turns: list[tuple[str, str]] = field(default_factory=list)  # (customer, agent)
    traces: list[dict[str, Any]] = field(default_factory=list)
    checks: dict[str, bool] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    soft: Judgement | None = None
    scripted: list[str] = field(default_factory=list)  # the tools whose results the goal's world gives

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(self.checks.values())

    def to_dict(self) -> dict[str, Any]:
        return {"persona": self.persona, "trial": self.trial, "passed": self.passed, "checks": self.checks,
                "problems": self.problems, "turns": [{"user": u, "reply": r} for u, r in self.turns],
                **({"soft": self.soft.to_dict()} if self.soft is not None else {})}


@dataclass
class PersonaResult:
    """A persona and its k runs."""

    persona: Persona
    runs: list[Run] = field(default_factory=list)

    @property
    def pass_k(self) -> bool:
        return bool(self.runs) and all(r.passed for r in self.runs)

    @property
    def pass_at_1(self) -> float:
        return sum(r.passed for r in self.runs) / len(self.runs) if self.runs else 0.0

    @property
    def mean_turns(self) -> float:
        return sum(len(r.turns) for r in self.runs) / len(self.runs) if self.runs else 0.0

    def to_dict(self) -> dict[str, Any]:
        soft = [r.soft for r in self.runs if r.soft is not None]
        return {**self.persona.to_dict(), "runs": len(self.runs), "passed": sum(r.passed for r in self.runs),
                "pass_k": self.pass_k, "pass_at_1": round(self.pass_at_1, 4), "mean_turns": round(self.mean_turns, 2),
                **({"soft_passed": sum(j.passed for j in soft)} if soft else {})}


@dataclass
class SimulationReport:
    """The outcome of a simulation; ``to_dict()`` is JSON-safe."""

    workspace: str
    seed: int
    k: int
    brain: str | None
    customer: dict[str, Any]  # who played the customers: rules, or a model with its pinned prompt
    judge: dict[str, Any] | None = None  # the soft-criteria judge, when a model is configured
    personas: list[PersonaResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def runs(self) -> list[Run]:
        return [r for p in self.personas for r in p.runs]

    @property
    def pass_k(self) -> float:
        return sum(p.pass_k for p in self.personas) / len(self.personas) if self.personas else 0.0

    @property
    def pass_at_1(self) -> float:
        runs = self.runs
        return sum(r.passed for r in runs) / len(runs) if runs else 0.0

    def failing(self) -> list[Run]:
        return [r for r in self.runs if not r.passed]

    def to_dict(self) -> dict[str, Any]:
        soft = [r.soft for r in self.runs if r.soft is not None]
        return {
            "workspace": self.workspace, "seed": self.seed, "k": self.k, "brain": self.brain,
            "customer": self.customer, "judge": self.judge,
            "personas": [p.to_dict() for p in self.personas], "runs": len(self.runs),
            "pass_k": round(self.pass_k, 4), "pass_at_1": round(self.pass_at_1, 4),
            "soft": ({"runs": len(soft), "passed": sum(j.passed for j in soft),
                      "impolite": sum(not j.polite for j in soft),
                      "invented_facts": sum(bool(j.invented_facts) for j in soft)} if soft else None),
            "failing": [r.to_dict() for r in self.failing()],
            "notes": self.notes, "seconds": round(self.seconds, 1),
        }


# ---------------------------------------------------------------------------- running


def simulate(workspace: str | Path, *, sops: list[str] | None = None, manners: list[str] | None = None,
             k: int = 3, seed: int = 7, brain: str | None = "rule", llm: LLMSettings | None = None,
             embedder: CachedEmbedder | None = None, loaded: Workspace | None = None,
             progress: Progress | None = None) -> SimulationReport:
    """Play every persona of the workspace's SOPs ``k`` times against the engine and judge each run.

    Args:
        workspace: the workspace folder.
        sops: the SOP ids to try (default: every SOP).
        manners: the personas' manners (default: every one that applies; see ``personas.MANNERS``).
        k: runs per persona.
        seed: the same seed gives the same personas, messages and, offline, the same report.
        brain: the engine's brain ("rule" offline; None: the default of ``build_orchestrator``).
        llm: a language model to play the customers and judge the runs (None: rules play them, no judge).
        embedder: an embedder to share (tests, the playground); default: the workspace's cache.
        loaded: an already loaded workspace.
        progress: called as ``progress(done, total)`` after each run.

    Raises:
        WorkspaceError: the workspace has errors.
        ValueError: an unknown SOP id or manner, or k below 1.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    started = time.perf_counter()
    ws = loaded or load_workspace(workspace, embedder)
    raise_on_errors(ws.problems)
    personas, notes = make_personas(ws, sops, manners, seed)
    chat: ChatModel | None = OpenAIChat(llm) if llm is not None else None
    shown_brain = brain or ("hybrid" if llm is not None else "rule")  # build_orchestrator's default
    report = SimulationReport(str(workspace), seed, k, shown_brain,
                              SIMULATOR.describe(chat) if chat else {"by": "rules"},
                              JUDGE.describe(chat) if chat else None, notes=notes)
    data = DataIndex(ws)
    titles = sorted({c.title for c in ws.kb.chunks}) if ws.kb is not None else []
    contexts = {s.id: SopContext(s, ws, data, titles) for s in ws.sops}
    topics = side_topics(ws)
    with tempfile.TemporaryDirectory(prefix="sop-sim-") as tmp:
        store = open_state_store(f"sqlite:///{tmp}/sessions.sqlite")
        memory = LocalPreferenceMemory(Path(tmp) / "preferences.sqlite")
        orch = None
        try:
            orch = build_orchestrator(ws.files.root, brain=brain, store=store, memory=memory, loaded=ws,
                                      llm=llm if brain != "rule" else None)
            total, done = len(personas) * k, 0
            for persona in personas:
                result = PersonaResult(persona)
                for trial in range(k):
                    rng = random.Random(f"{seed}:{persona.name}:{trial}")
                    customer: Any = (LLMCustomer(chat, persona) if chat is not None else
                                     ScriptedCustomer(persona, contexts[persona.goal.sop], rng, topics))
                    run = play(orch, persona, customer, trial)
                    if chat is not None:
                        run.soft = judge_run(chat, run.turns, run.traces)
                    result.runs.append(run)
                    done += 1
                    if progress is not None:
                        progress(done, total)
                report.personas.append(result)
        finally:
            if orch is not None:
                orch.close()
            store.close()
            memory.close()
            if isinstance(chat, OpenAIChat):
                chat.close()
    report.seconds = time.perf_counter() - started
    return report


def turn_limit(goal: Goal) -> int:
    """The most customer messages a run may take: three per question, and room to open and close."""
    return 3 * len(goal.answers) + 6


def play(orch: Orchestrator, persona: Persona, customer: Any, trial: int) -> Run:
    """One conversation of a persona (``customer``: ``first()`` and ``next(heard)``), judged by the checks."""
    goal = persona.goal
    session = f"sim-{re.sub(r'[^a-z0-9]+', '-', persona.name.lower())}-{trial + 1}"
    run = Run(persona.name, trial + 1, session, goal.customer_id, scripted=sorted(goal.script))
    script = ToolScript(goal.script)  # the goal's world: one script for the whole conversation
    message: str | None = customer.first()
    limit = turn_limit(goal)
    taken_up = False
    while message is not None and len(run.turns) < limit:
        reply = orch.handle_message(session, message, customer_id=goal.customer_id, script=script)
        run.turns.append((message, reply))
        run.traces.append(orch.last_trace(session) or {})
        state = orch.load_state(session)
        if len(run.turns) == 1:
            taken_up = state is not None and state.latest_goal(goal.sop) is not None
        message = customer.next(hear(state, orch, goal), reply)
    judge(run, goal, orch.load_state(session), hit_limit=message is not None, taken_up=taken_up)
    return run


def hear(state: SessionState | None, orch: Orchestrator, goal: Goal) -> Heard:
    """What the customer sees after a reply (the pending question of their SOP, or where the agent went)."""
    if state is None:
        return Heard(over=True)
    mine = state.latest_goal(goal.sop)
    done = mine is not None and mine.status == GoalStatus.DONE
    active = state.goals.get(state.active_goal_id) if state.active_goal_id else None
    if active is None:
        return Heard(over=True, done=done)
    if active.type != goal.sop:
        return Heard(elsewhere=active.type, done=False)
    sop = orch.sops.get(goal.sop)
    return Heard(pending=sop.node(active.pending) if sop is not None else None)


# ---------------------------------------------------------------------------- judging


def judge(run: Run, goal: Goal, state: SessionState | None, *, hit_limit: bool, taken_up: bool) -> None:
    """Fill a run's checks and problems from its traces and final state."""
    mine = state.latest_goal(goal.sop) if state is not None else None
    run.checks["started"] = mine is not None
    if mine is None:
        run.problems.append(f"{goal.sop} was never started")
    ended = mine is not None and mine.status == GoalStatus.DONE and (mine.outcome or "completed") == goal.end
    run.checks["end"] = ended
    if mine is not None and not ended:
        run.problems.append(f"{goal.sop} is {mine.status.value}" + (f" ({mine.outcome})" if mine.outcome else "")
                            + f" at the end; the goal wants it {goal.end}")
    actions = [a for t in run.traces for a in t.get("actions") or []]
    missing = _not_in_order(goal.steps, actions)
    run.checks["steps"] = not missing
    if missing:
        run.problems.append(f"step not reached in order: {missing}")
    run.checks["tools"] = _check_tools(run, goal)
    others = sorted({g.type for g in state.goals.values() if g.type != goal.sop}) if state is not None else []
    run.checks["on_goal"] = taken_up and not others
    if not taken_up:
        run.problems.append(f"the first message did not start {goal.sop}")
    if others:
        run.problems.append(f"started {', '.join(others)}, which the customer did not ask for")
    run.checks["no_loop"] = _check_loops(run, hit_limit)


def _not_in_order(wanted: list[str], seen: list[str]) -> str:
    """The first wanted step that ``seen`` does not run after the ones before it ('' when all do)."""
    i = 0
    for step in wanted:
        while i < len(seen) and seen[i] != step:
            i += 1
        if i == len(seen):
            return step
        i += 1
    return ""


def _check_tools(run: Run, goal: Goal) -> bool:
    calls = [c for t in run.traces for c in t.get("tool_calls") or [] if c.get("agent") != "orchestrator"]
    ok = True
    for tool, want in goal.calls:
        made = [c for c in calls if c.get("tool") == tool]
        if not made:
            run.problems.append(f"{tool} was never called")
            ok = False
            continue
        args = made[-1].get("args") or {}
        wrong = {p: args.get(p) for p, v in want.items() if not _matches(goal.kinds.get(p, "id"), args.get(p), v)}
        if wrong:
            run.problems.append(f"{tool} was called with {_shown(wrong)}; the customer's values are "
                                f"{_shown({p: want[p] for p in wrong})}")
            ok = False
    return ok


def _matches(kind: str, got: Any, want: Any) -> bool:
    if got is None:
        return False
    if kind in ("money", "number"):
        try:
            return abs(float(got) - float(want)) < 1e-6
        except (TypeError, ValueError):
            return False
    if kind in ("category", "option", "model"):
        g, w = str(got).strip().lower(), str(want).strip().lower()
        return g == w or (kind == "model" and (g in w or w in g))
    return _same_value(got, want)


def _shown(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in values.items())


def _check_loops(run: Run, hit_limit: bool) -> bool:
    ok = True
    if hit_limit:
        run.problems.append(f"the conversation was still going after {len(run.turns)} messages")
        ok = False
    unclear = [any(c.get("command") == "unclear" for c in (t.get("reading") or {}).get("commands") or [])
               for t in run.traces]
    for i in range(1, len(unclear)):
        if unclear[i] and unclear[i - 1]:
            run.problems.append(f"messages {i} and {i + 1} in a row were not understood")
            ok = False
            break
    replies = [r for _, r in run.turns]
    unfilled = next(((i, m.group(0)) for i, r in enumerate(replies) if (m := PLACEHOLDER.search(r))), None)
    if unfilled is not None:
        run.problems.append(f"reply {unfilled[0] + 1} shows the placeholder {unfilled[1]} unfilled")
        ok = False
    for i in range(2, len(replies)):
        if replies[i] == replies[i - 1] == replies[i - 2]:
            run.problems.append(f"the same reply three times in a row (turns {i - 1}-{i + 1})")
            ok = False
            break
    return ok


# ---------------------------------------------------------------------------- failing runs as tests


def failing_tests(report: SimulationReport, out: Path, root: Path, loaded: Workspace) -> list[Path]:
    """Write each failing run as a conversation test file in ``out`` (the way the chat's "Save chat as
    test" writes one: the customer's messages, the scripted tool results of the goal's world, and what each
    turn did as its expectations), each read back before it is written. Returns the files written.

    Raises:
        UnreadableTest: a test would not read back as written (nothing is written for it).
    """
    out.mkdir(parents=True, exist_ok=True)
    cache = WorkspaceCache()
    cache.put(root, loaded)
    written = []
    for run in report.failing():
        name = f"simulated {run.persona} run {run.trial}"
        path = out / f"{file_stem(name)}.yaml"
        spec, _ = recorded_test(name, run.traces, external=set(run.scripted), customer_id=run.customer_id or "",
                                path=path, root=root, cache=cache)
        text = dump(spec)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


# ---------------------------------------------------------------------------- text report


def format_report(report: SimulationReport, failures: int = 10) -> str:
    """A plain-text summary (the CLI's output without ``--json``)."""
    d = report.to_dict()
    who = "rules (offline)" if d["customer"].get("by") == "rules" else \
        f"{d['customer']['model']} (prompt {d['customer']['prompt_version']}, sha256 {d['customer']['prompt_sha256']})"
    lines = [f"Simulated customers on {d['workspace']} (brain: {d['brain']}, seed {d['seed']}, k={d['k']}; "
             f"customers played by {who})",
             f"{len(d['personas'])} personas, {d['runs']} runs: pass^{d['k']} {d['pass_k']:.2f}, "
             f"pass@1 {d['pass_at_1']:.2f}", ""]
    width = max((len(p["name"]) for p in d["personas"]), default=10)
    lines.append(f"{'persona':<{width}}  pass^{d['k']}  pass@1  runs passed  mean turns")
    for p in d["personas"]:
        lines.append(f"{p['name']:<{width}}  {'yes' if p['pass_k'] else 'no':<6}  {p['pass_at_1']:.2f}    "
                     f"{p['passed']}/{p['runs']}          {p['mean_turns']:.1f}")
    if d["soft"]:
        s = d["soft"]
        lines += ["", f"soft criteria (judge {d['judge']['model']}, prompt {d['judge']['prompt_version']}, sha256 "
                      f"{d['judge']['prompt_sha256']}): {s['passed']}/{s['runs']} runs polite with no invented facts "
                      f"({s['impolite']} impolite, {s['invented_facts']} with invented facts)"]
    if d["failing"]:
        lines += ["", f"failing runs ({len(d['failing'])}; --out DIR writes them as conversation tests):"]
        for r in d["failing"][:failures]:
            failed = [CHECK_TITLES[c] for c in CHECKS if not r["checks"].get(c, True)]
            lines.append(f"- {r['persona']} run {r['trial']}: failed {', '.join(failed)}")
            lines += [f"    {p}" for p in r["problems"]]
            for t in r["turns"]:
                lines.append(f"    customer: {t['user']}")
                lines.append(f"    agent:    {' '.join(t['reply'].split())[:160]}")
        if len(d["failing"]) > failures:
            lines.append(f"... and {len(d['failing']) - failures} more (--json lists them all)")
    if d["notes"]:
        lines += ["", "not simulated:"] + [f"- {n}" for n in d["notes"]]
    lines.append(f"\n{d['seconds']} s")
    return "\n".join(lines)

