"""The playground's hold on one workspace: the loaded workspace, its orchestrator and stores, and checked saves.

Pages call the page services it holds and render the result; nothing here knows about Streamlit. One
:class:`Playground` per workspace folder is shared by every page and browser
session of a process (it holds the loaded workspace, the orchestrator and the
SQLite stores), so a saved SOP is used by the very next chat turn everywhere.

Each page's work is a service of its own, reached through the Playground:
``pg.chat`` (:mod:`core.playground.chat`), ``pg.inspector`` (:mod:`core.playground.inspector`),
``pg.preferences`` (:mod:`core.playground.preferences`), ``pg.studio`` (:mod:`core.playground.studio`),
``pg.history`` (:mod:`core.playground.history`), ``pg.store`` (:mod:`core.playground.store`) and
``pg.runs`` (:mod:`core.playground.testruns`).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

from core.engine.build import BRAINS, Workspace, build_orchestrator, embedder_for, load_workspace
from core.engine.orchestrator import Orchestrator
from core.playground import versions
from core.playground.changes import ChangeSet, CheckResult, apply_checked
from core.playground.chat import Chat
from core.playground.conversations import Tests, save_gate
from core.playground.drafts import Drafts
from core.playground.history import History
from core.playground.inspector import Inspector
from core.playground.preferences import Preferences
from core.playground.store import Store
from core.playground.studio import Studio
from core.playground.testruns import Runs
from core.retrieval.embedding import CachedEmbedder, Progress
from core.shared.errors import UserInputError
from core.shared.problems import Problem
from core.state.memory import open_preference_memory
from core.state.sessions import open_state_store
from core.understanding import LLMSettings
from core.workspace.files import load_workspace_files
from core.workspace.paths import state_folder
from core.workspace.trust import keep_trust, not_run, trust

log = logging.getLogger(__name__)


class Playground:
    """Everything the playground does to one workspace, thread-safe for Streamlit's script threads."""

    def __init__(self, root: str | Path, *, embedder: CachedEmbedder | None = None,
                 state_url: str | None = None, progress: Progress | None = None) -> None:
        self.root = Path(root).resolve()
        if not (self.root / "store.yaml").is_file():
            raise UserInputError(f"{self.root} is not a workspace (it has no store.yaml)")
        self.embedder = embedder or embedder_for(self.root)
        self.lock = threading.RLock()
        state_dir = state_folder(self.root)  # nothing written outside the workspace through a link
        url = state_url or os.environ.get("SOP_STATE_URL") or f"sqlite:///{state_dir / 'sessions.sqlite'}"
        self.state_store = open_state_store(url)
        self.memory = open_preference_memory(state_dir, state_store=self.state_store)  # Zep when configured
        self.brain: str | None = None  # None: hybrid when an LLM is configured in the environment, else rule
        self.llm: LLMSettings | None = None
        self.workspace: Workspace
        self.orch: Orchestrator | None = None
        self.error = ""
        self.chat = Chat(self)
        self.inspector = Inspector(self)
        self.preferences = Preferences(self)
        self.studio = Studio(self)
        self.history = History(self)
        self.store = Store(self)
        self.runs = Runs(self)
        self.reload(progress)

    # ------------------------------------------------------------------ loading
    def reload(self, progress: Progress | None = None) -> list[Problem]:
        """Load the workspace from disk again and rebuild the orchestrator (stores are kept).

        With ``progress`` (start-up, "re-index everything") the knowledge base is indexed before this
        returns; without it, in the background (see :meth:`kb_status`), so a change is in use at once.
        """
        ws = load_workspace(self.root, self.embedder, progress, kb_index="now" if progress else "background")
        try:
            orch: Orchestrator | None = build_orchestrator(self.root, brain=self.brain, llm=self.llm,
                                                           store=self.state_store, memory=self.memory, loaded=ws)
            orch.version = versions.current(self.root)  # each chat turn records the version that answered it
            error = ""
        except UserInputError as exc:
            orch, error = None, str(exc)
        with self.lock:
            old = getattr(self, "workspace", None)
            self.workspace, self.orch, self.error = ws, orch, error
        if old is not None and old.kb is not None and old.kb is not ws.kb:
            old.kb.stop()
        return ws.problems

    def kb_status(self) -> dict[str, Any] | None:
        """The knowledge base's indexing: chunks indexed and in all, whether it is finished, any error
        (None when the workspace has no KB)."""
        kb = self.workspace.kb
        return kb.status if kb is not None else None

    def indexed_workspace(self) -> Workspace:
        """The workspace in use once its knowledge base is whole: tests and evaluations never see the part
        indexed so far."""
        ws = self.workspace
        if ws.kb is not None:
            ws.kb.wait()
        return ws

    def wait_for_kb(self, timeout: float | None = None) -> bool:
        """Wait until the knowledge base is fully indexed (True when it is, or there is none)."""
        kb = self.workspace.kb
        return kb is None or kb.wait(timeout)

    @property
    def trusted(self) -> bool:
        """Whether the workspace's Python tools and MCP servers run (:mod:`core.workspace.trust`)."""
        return self.workspace.trusted

    def trust_notice(self) -> str:
        """What the playground says while the workspace is not trusted ('' once it is)."""
        if self.trusted:
            return ""
        said = not_run(self.workspace.files.config)
        return (f"{said[0].upper()}{said[1:]}. Trust it only if you know where it comes from: its tools then run "
                "on this computer, with your permissions.")

    def trust(self) -> list[Problem]:
        """Trust the workspace as it is now (recorded outside it) and load it again, its tools now run."""
        with self.lock:
            trust(self.root, load_workspace_files(self.root).config)
        return self.reload()

    @property
    def problems(self) -> list[Problem]:
        """The current lint problems of the workspace."""
        return self.workspace.problems

    @property
    def name(self) -> str:
        """The store's name from store.yaml."""
        return self.workspace.files.config.name

    @property
    def brain_in_use(self) -> str:
        """The brain new turns run on."""
        return self.brain or ("hybrid" if self.llm is not None or LLMSettings.from_env() is not None else "rule")

    def set_brain(self, brain: str, model: str = "", base_url: str = "", api_key: str = "") -> None:
        """Choose the brain for new turns (``core.engine.build.BRAINS``) and, for "llm"/"hybrid", its endpoint.

        Blank fields fall back to OPENAI_API_KEY / OPENAI_BASE_URL / SOP_LLM_MODEL. Nothing changes
        when the choice cannot work.

        Raises:
            UserInputError: an unknown brain, or an LLM brain without a usable model configuration.
        """
        if brain not in BRAINS:
            raise UserInputError(f"unknown brain {brain!r}; available: {', '.join(BRAINS)}")
        llm = None if brain == "rule" else LLMSettings.from_fields(model=model, base_url=base_url, api_key=api_key)
        build_orchestrator(self.root, brain=brain, llm=llm, store=self.state_store, memory=self.memory,
                           loaded=self.workspace)  # raises before anything changes
        with self.lock:
            self.brain, self.llm = brain, llm
            self.reload()

    # ------------------------------------------------------------------ saving
    def apply(self, change: ChangeSet, tests: Tests = "skip", *, own_code: bool = False) -> CheckResult:
        """Write ``change`` when it lints without new errors and (``tests="check"``) breaks no conversation
        test that passes now; ``tests="accept"`` writes it with those tests' expectations updated. ``own_code``:
        the change writes code the product made (an import's mock API), so a trusted workspace stays trusted."""
        with self.lock:
            was_trusted = self.trusted
            loaded: list[Workspace] = []

            def lint(stage: Path) -> list[Problem]:
                loaded.append(load_workspace(stage, self.embedder, kb_index="lazy"))
                return loaded[-1].problems

            gate = save_gate(self.root, self.workspace, change, tests, loaded) if tests != "skip" else None
            result = apply_checked(self.root, change, lint, self.problems, gate)
            if result.saved:
                for rel in change.files:
                    self.drafts.drop(rel)
                if own_code:
                    keep_trust(self.root, was_trusted)
                self.reload()
        return result

    @property
    def drafts(self) -> Drafts:
        """The workspace's unsaved edits."""
        return Drafts(self.root)

    def close(self) -> None:
        """Stop indexing and close the stores."""
        if self.workspace.kb is not None:
            self.workspace.kb.stop()
        self.state_store.close()
        self.memory.close()


__all__ = ["Playground"]
