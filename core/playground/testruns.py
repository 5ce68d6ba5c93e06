"""The Test runs page's service (and the studio's replay, the chat's "save as test"): conversation tests run
and saved, chats replayed against unsaved drafts, the synthetic evaluation and simulated customers.

Each runs on fresh temporary stores with the workspace as loaded now, its knowledge base whole.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.engine.build import load_workspace
from core.evaluation import SyntheticReport, run_synthetic
from core.evaluation.recording import dump, file_stem, recorded_test
from core.evaluation.replay import Recording, ReplayReport, replay
from core.evaluation.sim_report import SimulationReport
from core.evaluation.simulate import simulate
from core.evaluation.testing import FileResult, WorkspaceCache, run_file
from core.playground.changes import ChangeSet, CheckResult, staged
from core.playground.conversations import conversation_files
from core.retrieval.embedding import Progress
from core.shared.errors import UserInputError
from core.shared.problems import errors
from core.tools.declared import HttpTool, PythonTool
from core.tools.held import HeldTool
from core.tools.mcp_tools import McpTool
from core.understanding import LLMSettings

if TYPE_CHECKING:
    from core.playground.service import Playground

SAVED_TESTS = "conversations"  # where tests saved from a chat go (the demo's tests/conversations is the project's)
MAX_EVAL_SESSIONS = 2000
MAX_SIMULATION_K = 20


class Runs:
    """Conversation tests, replays, evaluations and simulations of one
    :class:`~core.playground.service.Playground`'s workspace."""

    def __init__(self, pg: Playground) -> None:
        self.pg = pg

    def conversation_files(self) -> list[Path]:
        """The workspace's conversation test files (``conversations/`` or ``tests/conversations/``)."""
        return conversation_files(self.pg.root)

    def run_tests(self, files: list[Path], progress: Progress | None = None) -> list[FileResult]:
        """Run conversation files on fresh temporary stores, with this workspace as loaded now."""
        if progress is not None and not self.pg.wait_for_kb(0):
            progress(0.0, "waiting for the knowledge base to be indexed")
        cache = WorkspaceCache()
        cache.put(self.pg.root, self.pg.indexed_workspace())
        out = []
        for i, path in enumerate(files):
            if progress is not None:
                progress(i / max(len(files), 1), f"running {path.name}")
            out.append(run_file(path, self.pg.root, cache))
        if progress is not None:
            progress(1.0, "done")
        return out

    def save_chat_as_test(self, session_id: str, name: str = "") -> tuple[str, CheckResult, FileResult]:
        """Save a chat as a conversation test of this workspace: its messages, the results of tools outside
        the workspace (HTTP, Python) as scripted outcomes, and what each turn did as its expectations.

        Returns:
            The file written (workspace-relative), the save's result, and a run of the new test.
        """
        traces = self.pg.chat.traces(session_id)
        if not traces:
            raise UserInputError("this chat has no turns yet: send a message first")
        state = self.pg.chat.state(session_id)
        return self.save_traces_as_test(traces, name, customer_id=state.customer_id if state else "")

    def save_traces_as_test(self, traces: list[dict[str, Any]], name: str = "", *, customer_id: str = "",
                            scripted: Collection[str] = ()) -> tuple[str, CheckResult, FileResult]:
        """Save a conversation's turn traces (a chat, a simulated customer's run) as a conversation test of
        this workspace, as :meth:`save_chat_as_test` does; ``scripted``: tools whose results the conversation
        was given (recorded as scripted outcomes, like those of tools outside the workspace)."""
        if not traces:
            raise UserInputError("this conversation has no turns")
        name = " ".join(name.split()) or f"chat: {str(traces[0].get('user', ''))[:50]}"
        rel = f"{SAVED_TESTS}/{file_stem(name)}.yaml"  # the workspace's own tests, never a project's test suite
        if (self.pg.root / rel).exists():
            raise UserInputError(f"{rel} already exists; pick another name")
        path = self.pg.root / rel
        external = {n for n, t in (self.pg.orch.gateway.tools.items() if self.pg.orch else [])
                    if isinstance(t, HttpTool | PythonTool | McpTool | HeldTool)} | set(scripted)
        cache = WorkspaceCache()
        cache.put(self.pg.root, self.pg.indexed_workspace())
        spec, first = recorded_test(name, traces, external=external, customer_id=customer_id, path=path,
                                    root=self.pg.root, cache=cache)
        result = self.pg.apply(ChangeSet(f"save chat as {rel}").put(rel, dump(spec)))  # dump checks it reads back
        return rel, result, (run_file(path, self.pg.root, cache) if result.saved else first)  # the file as written

    def replay(self, *, session_id: str = "", test: Path | None = None,
               progress: Progress | None = None) -> ReplayReport:
        """Replay a chat of this workspace (or a conversation test) against the unsaved drafts, beside the
        workspace as saved: the turns whose replies, steps, tools or decisions change (:mod:`core.evaluation.replay`).
        With no drafts, a chat is compared with what it did when it was recorded."""
        if session_id:
            traces = self.pg.chat.traces(session_id)
            if not traces:
                raise UserInputError(f"session {session_id!r} has no turns to replay")
            state = self.pg.chat.state(session_id)
            recording = Recording.from_traces(f"chat: {str(traces[0].get('user', ''))[:50]}", traces,
                                              state.customer_id if state else "")
        elif test is not None:
            recording = Recording.load(test)
        else:
            raise UserInputError("pick a chat or a conversation test to replay")
        drafts = {rel: text for rel in self.pg.drafts.names() if (text := self.pg.drafts.get(rel)) is not None}
        saved = (self.pg.root, self.pg.indexed_workspace())
        build: dict[str, Any] = {"brain": self.pg.brain, "llm": self.pg.llm}
        if not drafts:
            if not recording.has_replies:
                raise UserInputError("there are no unsaved drafts to compare with: edit an SOP or the GAR first")
            return replay(recording, saved, before_label="as recorded", after_label="as saved now",
                          progress=progress, **build)
        change = ChangeSet("replay")
        for rel, text in drafts.items():
            change.put(rel, text)
        with staged(self.pg.root, change) as stage:
            edited = load_workspace(stage, self.pg.embedder)
            if errors(edited.problems):
                first = errors(edited.problems)[0]
                raise UserInputError(f"the drafts do not compile, so nothing can be replayed yet: {first}")
            return replay(recording, (stage, edited), saved, before_label="as saved",
                          after_label="with the drafts of " + ", ".join(sorted(drafts)), progress=progress, **build)

    def evaluate(self, sessions: int = 60, seed: int = 7, progress: Progress | None = None) -> SyntheticReport:
        """The paper's synthetic evaluation of this workspace's SOPs with the current brain (fresh temporary stores)."""
        if sessions < 1 or sessions > MAX_EVAL_SESSIONS:
            raise UserInputError(f"sessions must be between 1 and {MAX_EVAL_SESSIONS}, got {sessions}")
        report_progress = (lambda done, total: progress(done / total, f"session {done} of {total}")) \
            if progress is not None else None
        return run_synthetic(self.pg.root, sessions=sessions, seed=seed, brain=self.pg.brain, progress=report_progress,
                             embedder=self.pg.embedder, loaded=self.pg.indexed_workspace())

    def simulate(self, sops: list[str] | None = None, manners: list[str] | None = None, k: int = 3, seed: int = 7,
                 progress: Progress | None = None) -> SimulationReport:
        """Simulated customers on this workspace's SOPs with the current brain (fresh temporary stores); the
        chat's language model, when one is set, plays the customers and judges the runs."""
        if not 1 <= k <= MAX_SIMULATION_K:
            raise UserInputError(f"k must be between 1 and {MAX_SIMULATION_K}, got {k}")
        report_progress = (lambda done, total: progress(done / total, f"run {done} of {total}")) \
            if progress is not None else None
        try:
            return simulate(self.pg.root, sops=sops, manners=manners, k=k, seed=seed, brain=self.pg.brain,
                            llm=self.pg.llm or LLMSettings.from_env(), embedder=self.pg.embedder,
                            loaded=self.pg.indexed_workspace(), progress=report_progress)
        except ValueError as exc:
            raise UserInputError(str(exc)) from exc
