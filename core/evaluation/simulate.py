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
from pathlib import Path
from typing import Any

from core.engine.build import Workspace, build_orchestrator, load_workspace
from core.engine.orchestrator import Orchestrator
from core.evaluation.data import DataIndex
from core.evaluation.persona_goals import Goal
from core.evaluation.personas import Persona, make_personas, side_topics
from core.evaluation.recording import dump, file_stem, recorded_test
from core.evaluation.scripted_customer import Heard, ScriptedCustomer
from core.evaluation.sim_checks import judge
from core.evaluation.sim_llm import JUDGE, SIMULATOR, LLMCustomer, judge_run
from core.evaluation.sim_report import PersonaResult, Run, SimulationReport
from core.evaluation.sop_context import SopContext
from core.evaluation.testing import WorkspaceCache
from core.retrieval.embedding import CachedEmbedder
from core.shared.models import GoalStatus, SessionState
from core.state.memory import LocalPreferenceMemory
from core.state.sessions import open_state_store
from core.tools.gateway import ToolScript
from core.understanding import ChatModel, LLMSettings, OpenAIChat
from core.workspace.files import raise_on_errors

Progress = Callable[[int, int], None]


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
