"""The playground's services for one workspace: chat, SOP studio, inspector, store and test runs.

Pages call these and render the result; nothing here knows about Streamlit. One
:class:`Playground` per workspace folder is shared by every page and browser
session of a process (it holds the loaded workspace, the orchestrator and the
SQLite stores), so a saved SOP is used by the very next chat turn everywhere.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import re
import tempfile
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import yaml

from core.engine.build import BRAINS, Workspace, build_orchestrator, embedder_for, load_workspace
from core.engine.explain import op_text
from core.engine.orchestrator import Orchestrator
from core.evaluation import SyntheticReport, run_synthetic
from core.evaluation.recording import accept, dump, file_stem, recorded_test
from core.evaluation.replay import Recording, ReplayReport, replay
from core.evaluation.sim_report import SimulationReport
from core.evaluation.simulate import simulate
from core.evaluation.testing import FileResult, WorkspaceCache, run_file
from core.importers.star import ImportResult
from core.language.lexicons import lexicons
from core.playground import newstore, versions
from core.playground.changes import (
    Backup,
    ChangeSet,
    CheckResult,
    apply_checked,
    backups,
    change_diff,
    recover,
    staged,
    undo_last,
)
from core.playground.drafts import Drafts
from core.playground.newstore import NewStore
from core.playground.sheet_inventory import read_sheet, sheet_change, sheet_decl
from core.playground.uploads import (
    INVENTORY_TYPES,
    MappingProblem,
    UploadError,
    check_mapping,
    inventory_change,
    kb_change,
    read_inventory,
    replace_top_level_block,
    safe_filename,
)
from core.playground.versions import Version
from core.retrieval.embedding import CachedEmbedder, Progress
from core.shared.errors import UserInputError
from core.shared.models import SessionState, utcnow
from core.shared.problems import Problem, errors
from core.sop import Sop
from core.state.memory import open_preference_memory
from core.state.memory.base import MemoryUnavailableError, PreferenceEntry, PreferenceSummary
from core.state.sessions import open_state_store
from core.state.sessions.base import whole_session
from core.tools.declared import HttpTool, PythonTool
from core.tools.mcp_tools import McpTool
from core.tools.sheets import SheetFeed, SheetStatus
from core.tools.sheets_api import SheetRef
from core.understanding.brains.llm import LLMSettings
from core.workspace.config import GAR_COLUMNS, leads_outside, read_text_file, workspace_path

SOP_SUFFIXES = (".sop", ".json")
TEST_FOLDERS = ("conversations", "tests/conversations")
SAVED_TESTS = "conversations"  # where tests saved from a chat go (the demo's tests/conversations is the project's)
Tests = Literal["check", "skip", "accept"]  # what a save does with the conversation tests it would break
MAX_EVAL_SESSIONS = 2000
MAX_SIMULATION_K = 20

log = logging.getLogger(__name__)


@dataclass
class TurnView:
    """What one chat turn produced."""

    reply: str
    trace: dict[str, Any]
    state: SessionState


@dataclass
class SopCheck:
    """Live lint of an SOP being edited: problems for the whole workspace, the compiled SOP if it compiles."""

    problems: list[Problem]
    sop: Sop | None

    @property
    def ok(self) -> bool:
        """No errors anywhere the edit touches."""
        return not errors(self.problems)


@dataclass(frozen=True)
class SopFile:
    """One SOP file of the workspace."""

    name: str
    format: str
    id: str
    title: str
    compiled: bool


class Playground:
    """Everything the playground does to one workspace, thread-safe for Streamlit's script threads."""

    def __init__(self, root: str | Path, *, embedder: CachedEmbedder | None = None,
                 state_url: str | None = None, progress: Progress | None = None) -> None:
        self.root = Path(root).resolve()
        if not (self.root / "store.yaml").is_file():
            raise UserInputError(f"{self.root} is not a workspace (it has no store.yaml)")
        rolled = recover(self.root)  # a change cut off midway by a crash: the workspace as before it
        if rolled:
            log.warning("%s: rolled back change(s) cut off midway: %s", self.root, ", ".join(rolled))
        self.embedder = embedder or embedder_for(self.root)
        self._lock = threading.RLock()
        state_dir = self.root / ".state"
        url = state_url or os.environ.get("SOP_STATE_URL") or f"sqlite:///{state_dir / 'sessions.sqlite'}"
        self.store = open_state_store(url)
        self.memory = open_preference_memory(state_dir, state_store=self.store)  # Zep when configured
        self.brain: str | None = None  # None: hybrid when an LLM is configured in the environment, else rule
        self.llm: LLMSettings | None = None
        self.workspace: Workspace
        self.orch: Orchestrator | None = None
        self.error = ""
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
                                                           store=self.store, memory=self.memory, loaded=ws)
            orch.version = versions.current(self.root)  # each chat turn records the version that answered it
            error = ""
        except UserInputError as exc:
            orch, error = None, str(exc)
        with self._lock:
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

    def _indexed_workspace(self) -> Workspace:
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
        build_orchestrator(self.root, brain=brain, llm=llm, store=self.store, memory=self.memory,
                           loaded=self.workspace)  # raises before anything changes
        with self._lock:
            self.brain, self.llm = brain, llm
            self.reload()

    def _apply(self, change: ChangeSet, tests: Tests = "skip") -> CheckResult:
        """Write ``change`` when it lints without new errors and (``tests="check"``) breaks no conversation
        test that passes now; ``tests="accept"`` writes it with those tests' expectations updated."""
        with self._lock:
            loaded: list[Workspace] = []

            def lint(stage: Path) -> list[Problem]:
                loaded.append(load_workspace(stage, self.embedder, kb_index="lazy"))
                return loaded[-1].problems

            gate = self._test_gate(change, tests, loaded) if tests != "skip" else None
            result = apply_checked(self.root, change, lint, self.problems, gate)
            if result.saved:
                for rel in change.files:
                    self.drafts.drop(rel)
                self.reload()
        return result

    def _test_gate(self, change: ChangeSet, tests: Tests,
                   loaded: list[Workspace]) -> Callable[[Path], list[FileResult]]:
        files = self.conversation_files()

        def gate(stage: Path) -> list[FileResult]:
            if not files:
                return []
            failing = [r for r in self._run_on(loaded[-1], files) if not r.passed]
            if not failing:
                return []
            unreadable = {r.file for r in failing if r.error and not r.turns}  # a test that cannot run checks
            readable = [Path(r.file) for r in failing if r.file not in unreadable]  # nothing: a save waits for it
            passed_before = {r.file for r in self._run_on(self.workspace, readable) if r.passed}
            broken = [r for r in failing if r.file in passed_before or r.file in unreadable]
            if tests == "accept":
                for r in [r for r in broken if not r.error]:
                    path = Path(r.file)
                    change.put(path.relative_to(self.root).as_posix(), accept(read_text_file(path), r))
                return [r for r in broken if r.error]
            return broken
        return gate

    def _run_on(self, workspace: Workspace, files: list[Path]) -> list[FileResult]:
        if workspace.kb is not None:
            workspace.kb.wait()  # a test sees the whole knowledge base, never the part indexed so far
        cache = WorkspaceCache()
        cache.put(self.root, workspace)
        return [run_file(path, self.root, cache) for path in files]

    # ------------------------------------------------------------------ chat
    @staticmethod
    def new_session_id() -> str:
        """A fresh session id."""
        return f"s-{uuid.uuid4().hex[:8]}"

    def send(self, session_id: str, text: str, customer_id: str | None = None) -> TurnView:
        """Run one chat turn.

        Raises:
            UserInputError: the workspace has errors (nothing runs), or the message is empty.
        """
        orch = self.orch
        if orch is None:
            raise UserInputError(f"the workspace has errors, so the agent cannot run: {self.error}")
        if not text.strip():
            raise UserInputError("type a message first")
        before = orch.store.load(session_id)  # its version: the whole session is read after the turn
        reply = orch.handle_message(session_id, text, customer_id=customer_id or None)
        state = orch.load_state(session_id)
        if state is None or (before is not None and state.version == before.version):
            raise UserInputError(reply)  # the turn was abandoned (e.g. the language model is unreachable)
        return TurnView(reply, orch.last_trace(session_id) or {}, state)

    def state(self, session_id: str) -> SessionState | None:
        """A session's saved state, its retired goals included."""
        return whole_session(self.store, session_id)

    def sessions(self, limit: int = 200) -> list[dict[str, Any]]:
        """The stored sessions, newest first (at most ``limit``), each with its first message and number of
        turns, so people can tell them apart."""
        found = sorted(self.store.list_sessions(), key=lambda s: str(s.get("updated_at", "")), reverse=True)[:limit]
        for s in found:
            traces = self.store.traces(str(s["session_id"]))
            s["first_message"] = str(traces[0].get("user", "")) if traces else ""
            s["turns"] = len(traces)
        return found

    def traces(self, session_id: str) -> list[dict[str, Any]]:
        """A session's turn traces, oldest first."""
        return self.store.traces(session_id)

    def delete_session(self, session_id: str) -> None:
        """Remove a session and its traces."""
        self.store.delete_session(session_id)

    @staticmethod
    def goal_panel(state: SessionState | None) -> dict[str, Any]:
        """What the chat shows beside the conversation: the active goal and the stack."""
        if state is None:
            return {"active_goal": None, "status": None, "slots": {}, "missing": [], "next_question": "",
                    "stack": []}
        goal = state.active_goal
        return {
            "active_goal": goal.type if goal else None,
            "status": goal.status.value if goal else None,
            "step": goal.step if goal else None,
            "slots": dict(goal.slots) if goal else {},
            "missing": list(goal.missing) if goal else [],
            "next_question": goal.next_question if goal else "",
            "stack": [state.goals[g].type for g in state.goal_stack],
            "turn": state.turn,
            "version": state.version,
        }

    def goal_story(self, state: SessionState | None) -> dict[str, Any]:
        """The goals of a session in plain words, for people who do not read engine ids: what the agent
        is doing now ("Recommend an item: waiting for the budget"), what waits, and how each finished
        request ended, newest first."""
        titles = {sop.id: sop.title or sop.id for sop in self.workspace.sops}
        if state is None:
            return {"now": "", "waiting": [], "finished": [], "handoff": None}
        goal = state.active_goal
        now = ""
        if goal is not None:
            title = titles.get(goal.type, goal.type)
            if goal.pending and goal.missing:
                now = f"{title}: waiting for the {_words(goal.missing[0])}"
            elif goal.pending:
                now = f"{title}: waiting for the customer's answer"
            else:
                now = f"{title}: in progress"
        waiting = [titles.get(state.goals[g].type, state.goals[g].type) for g in reversed(state.goal_stack)
                   if g in state.goals]
        done = sorted((g for g in state.goals.values() if g.status.value == "done"), key=lambda g: g.updated_at,
                      reverse=True)
        finished = [{"request": titles.get(g.type, g.type), "outcome": OUTCOMES.get(g.outcome, g.outcome or "ended")}
                    for g in done]
        return {"now": now, "waiting": waiting, "finished": finished, "handoff": state.handoff_turn}

    def flow(self, session_id: str) -> dict[str, Any] | None:
        """The SOP graph of the session's active goal (else its latest one) with the path the conversation
        took through it drawn and the current step lit, as Graphviz DOT; None before any SOP ran."""
        state = self.state(session_id)
        if state is None or not state.goals:
            return None
        goal = state.active_goal or max(state.goals.values(), key=lambda g: g.updated_at)
        sop = next((s for s in self.workspace.sops if s.id == goal.type), None)
        if sop is None:
            return None
        path = [p["node"] for tr in self.traces(session_id) for p in tr.get("path") or []
                if p.get("goal") == goal.id and p.get("node") in sop.nodes]
        current = (goal.pending or goal.step) if goal is state.active_goal else None
        return {"sop": sop.id, "title": sop.title or sop.id, "current": current, "visited": path,
                "dot": sop.to_dot(visited=path, taken=sop.walked(path), current=current)}

    # ------------------------------------------------------------------ inspector
    def timeline(self, session_id: str) -> list[dict[str, Any]]:
        """Turn by turn: the goal and stack operations, and the active goal and stack after each turn."""
        rows: list[dict[str, Any]] = []
        active: str | None = None
        stack: list[str] = []
        for tr in self.traces(session_id):
            ops = tr.get("stack_ops") or []
            for op in ops:
                kind = op.get("op")
                if kind in ("activate", "suspend_and_activate") or (kind == "pop"):
                    active = op.get("goal")
                elif kind == "done":
                    active = None
                stack = list(op.get("stack") or [])
            rows.append({
                "turn": tr.get("turn"),
                "user": tr.get("user", ""),
                "active goal": active or "",
                "stack (bottom → top)": " → ".join(stack),
                "operations": "; ".join(op_text(op) for op in ops),
                "actions": ", ".join(tr.get("actions") or []),
                "reply": tr.get("reply", ""),
            })
        return rows

    @staticmethod
    def execution_memory(state: SessionState) -> list[dict[str, Any]]:
        """The paper's execution memory of every goal: action, observation, feedback."""
        return [{"goal": f"{g.id} {g.type}", "turn": m.turn, "action": m.action,
                 "observation": _short(m.observation), "feedback": m.feedback}
                for g in state.goals.values() for m in g.memory]

    def tool_calls(self, session_id: str) -> list[dict[str, Any]]:
        """Every tool call of a session, with arguments, outcome and latency."""
        return [{"turn": tr.get("turn"), "agent": c.get("agent", ""), "tool": c.get("tool", ""),
                 "args": _short(c.get("args")), "ok": c.get("ok"),
                 "result": _short(c.get("result")) if c.get("ok") else c.get("error", ""),
                 "latency_ms": c.get("latency_ms")}
                for tr in self.traces(session_id) for c in tr.get("tool_calls") or []]

    def export_session(self, session_id: str) -> str:
        """A session as one JSON document for a bug report: state, traces, the customer's memory."""
        state = self.state(session_id)
        if state is None:
            raise UserInputError(f"no session {session_id!r}")
        customer = state.customer_id
        doc = {
            "exported_at": utcnow().isoformat(),
            "workspace": {"id": self.workspace.files.id, "name": self.name},
            "sops": {s.id: s.version for s in self.workspace.sops},
            "state": state.model_dump(mode="json"),
            "traces": self.traces(session_id),
            "preferences": [e.model_dump() for e in self._entries_or_empty(customer)],
        }
        return json.dumps(doc, indent=2, ensure_ascii=False, default=str)

    def remembered(self, customer_id: str) -> tuple[PreferenceSummary, str]:
        """A customer's preference summary and, when the store is unreachable, a warning (the last known one)."""
        try:
            return self.memory.summary(customer_id), ""
        except MemoryUnavailableError as exc:
            return exc.fallback or PreferenceSummary(), f"{self.memory.label} is unreachable ({exc.message}); " \
                                                         "showing the last known preferences"

    def preference_entries(self, customer_id: str) -> list[PreferenceEntry]:
        """What is remembered about a customer, with where it came from.

        Raises:
            UserInputError: when the preference store is unreachable.
        """
        try:
            return self.memory.entries(customer_id)
        except MemoryUnavailableError as exc:
            raise UserInputError(f"{self.memory.label} is unreachable: {exc.message}") from exc

    def _entries_or_empty(self, customer_id: str) -> list[PreferenceEntry]:
        try:
            return self.memory.entries(customer_id) if customer_id else []
        except MemoryUnavailableError:
            return []

    def forget_preference(self, customer_id: str, entry_id: int) -> None:
        """Forget one remembered fact."""
        self.memory.forget(customer_id, entry_id)

    def edit_preference(self, customer_id: str, entry_id: int, value: str) -> None:
        """Change one remembered fact (raises UserInputError when the value is invalid)."""
        self.memory.set_entry(customer_id, entry_id, value)

    # ------------------------------------------------------------------ SOP studio
    def sop_files(self) -> list[SopFile]:
        """The workspace's SOP files and whether each compiled."""
        by_file = {s.file: s for s in self.workspace.sops}
        out = []
        for path in self.workspace.files.sop_files():
            sop = by_file.get(f"sops/{path.name}")
            out.append(SopFile(path.name, "json" if path.suffix == ".json" else "text",
                               sop.id if sop else path.stem, sop.title if sop else "", sop is not None))
        return out

    def read_sop(self, name: str) -> str:
        """The source of an SOP file (one leading outside the workspace through a link is refused)."""
        rel = f"sops/{_sop_name(name)}"
        return read_text_file(workspace_path(self.root, rel, "sops", file=rel))

    def check_sop(self, name: str, source: str) -> SopCheck:
        """Lint the workspace as if ``source`` were saved as ``sops/<name>`` (nothing is written)."""
        rel = f"sops/{_sop_name(name)}"
        with staged(self.root, ChangeSet("check").put(rel, source)) as stage:
            ws = load_workspace(stage, self.embedder, kb_index="lazy")
        mine = [p for p in ws.problems if p.file == rel or p.file == "sops"]
        others = {(p.file, p.message) for p in self.problems}
        mine += [p for p in errors(ws.problems) if p.file != rel and (p.file, p.message) not in others]
        return SopCheck(mine, next((s for s in ws.sops if s.file == rel), None))

    def save_sop(self, name: str, source: str, *, create: bool = False, tests: Tests = "check") -> CheckResult:
        """Save an SOP (backed up, undoable) when it adds no lint error and breaks no passing conversation
        test (see :meth:`_apply` for ``tests``); the next chat turn uses it."""
        name = _sop_name(name)
        if create and (self.root / "sops" / name).exists():
            raise UserInputError(f"sops/{name} already exists; pick another name")
        return self._apply(ChangeSet(f"{'create' if create else 'save'} sops/{name}").put(f"sops/{name}", source),
                           tests)

    def duplicate_sop(self, name: str, new_name: str, tests: Tests = "check") -> CheckResult:
        """Copy an SOP under a new file name and a new id (checked like a save, see :meth:`_apply`)."""
        new = _sop_name(new_name)
        source = self.read_sop(name)
        new_id = Path(new).stem
        old_id = next((s.id for s in self.workspace.sops if s.file == f"sops/{_sop_name(name)}"), "")
        if "." in old_id:
            new_id = f"{old_id.split('.', 1)[0]}.{new_id}"
        if new.endswith(".json"):
            try:
                data = json.loads(source)
            except json.JSONDecodeError as exc:
                raise UserInputError(f"sops/{name} is not valid JSON; fix it before duplicating") from exc
            if isinstance(data, dict):
                data["id"] = new_id
                if "name" in data:
                    data["name"] = f"{data['name']} (copy)"
            source = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        else:
            source = re.sub(r"^(id:\s*).*$", lambda m: m.group(1) + new_id, source, count=1, flags=re.M)
        return self.save_sop(new, source, create=True, tests=tests)

    def delete_sop(self, name: str, tests: Tests = "check") -> CheckResult:
        """Delete an SOP (backed up, undoable), unless that breaks a passing conversation test."""
        name = _sop_name(name)
        if not (self.root / "sops" / name).exists():
            raise UserInputError(f"sops/{name} does not exist")
        return self._apply(ChangeSet(f"delete sops/{name}").delete(f"sops/{name}"), tests)

    # ------------------------------------------------------------------ named versions
    def versions(self) -> list[Version]:
        """The workspace's published versions, oldest first."""
        return versions.versions(self.root)

    def current_version(self) -> str:
        """Which version the workspace's files are now ("v3", "v3 + edits", "unpublished")."""
        return versions.current(self.root)

    def publish_version(self, note: str) -> Version:
        """Publish the workspace as it is now as its next version, with a note; chats record it from then."""
        with self._lock:
            published = versions.publish(self.root, note)
            if self.orch is not None:
                self.orch.version = published.label
        return published

    def version_diff(self, old: int | None, new: int | None) -> list[tuple[str, str]]:
        """Each file changed from version ``old`` to ``new`` (None: the files as they are now), as a diff."""
        return versions.diff(self.root, old, new)

    def roll_back(self, number: int) -> CheckResult:
        """Make the workspace's files those of version ``number``, checked like every save and undoable."""
        return self._apply(versions.rollback_change(self.root, number))

    def backups(self) -> list[Backup]:
        """Saved changes that can be undone, newest first."""
        return backups(self.root)

    def change_diff(self, change: Backup) -> dict[str, str]:
        """What one saved change did, file by file, as unified diffs."""
        found = self.backups()
        newer = [b for b in found if b.stamp > change.stamp]  # newest first, as backups() lists them
        return change_diff(self.root, change, newer)

    def undo(self) -> Backup | None:
        """Undo the newest saved change (SOP, GAR, inventory or KB) and reload."""
        with self._lock:
            done = undo_last(self.root)
            if done is not None:
                self.reload()
        return done

    def gar_rows(self, *, draft: bool = False) -> list[dict[str, str]]:
        """gar.csv as rows of its five columns (for an editable table); ``draft``: the unsaved draft if any. A
        workspace of JSON SOPs alone may have no gar.csv: no rows (saving some creates it)."""
        path = self.root / "gar.csv"
        text = (self.drafts.get("gar.csv") if draft else None) or (read_text_file(path) if path.is_file() else "")
        return [{c: (rec.get(c) or "") for c in GAR_COLUMNS} for rec in csv.DictReader(io.StringIO(text))]

    @staticmethod
    def gar_text(rows: list[dict[str, Any]]) -> str:
        """GAR rows as the CSV text of gar.csv (empty rows left out)."""
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(GAR_COLUMNS), lineterminator="\n")
        writer.writeheader()
        written = []
        for row in rows:
            cells = {c: _cell(row.get(c)) for c in GAR_COLUMNS}
            if any(cells.values()):
                writer.writerow(cells)
                written.append(cells)
        text = buf.getvalue()
        back = [{c: v.strip() for c, v in r.items()} for r in csv.DictReader(io.StringIO(text))]
        if back != written:  # read back as the GAR loader reads it
            bad = next(i for i, (a, b) in enumerate(zip(written + [{}] * len(back), back + [{}] * len(written),
                                                        strict=False)) if a != b)
            raise UserInputError(f"gar.csv: row {bad + 1} would not read back as written; check its cells")
        return text

    def save_gar(self, rows: list[dict[str, Any]], tests: Tests = "check") -> CheckResult:
        """Write the GAR table when it (and every SOP against it) lints without new errors and it breaks
        no passing conversation test."""
        return self._apply(ChangeSet("save gar.csv").put("gar.csv", self.gar_text(rows)), tests)

    def suggest_gar_row(self, action: str) -> dict[str, str]:
        """A GAR row for a step no row matches yet, guessed from the workspace's own rows (no word list):
        the action type most rows starting with the same verb have, and for an ask worded like an existing
        one ("ask user for budget" → slot budget) the slot named by the words after the shared beginning."""
        rows = self.gar_rows()
        words = action.split()
        verb = words[0].lower() if words else ""
        same = [r for r in rows if r["action"].split()[:1] and r["action"].split()[0].lower() == verb]
        kinds = Counter(r["action_type"] for r in same if r["action_type"])
        kind = kinds.most_common(1)[0][0] if kinds else "message_to_user"
        params = ""
        if "ask_user_input" in kind:
            for r in same:
                slot = r["params"].split("|")[0].rstrip("?").strip()
                prefix = r["action"].lower()[: -len(slot)] if slot and r["action"].lower().endswith(
                    slot.replace("_", " ")) else ""
                rest = action[len(prefix):] if prefix and action.lower().startswith(prefix) else ""
                if rest.strip():
                    params = re.sub(r"\W+", "_", rest.strip().lower()).strip("_")
                    break
        return {"action": action.strip(), "action_type": kind, "user_interaction_metadata": "", "api": "",
                "params": params}

    def add_gar_row(self, row: dict[str, Any], tests: Tests = "check") -> CheckResult:
        """Append one row to the saved GAR; an unsaved GAR draft gets the row too and stays a draft."""
        if not str(row.get("action") or "").strip():
            raise UserInputError("the new GAR row needs an action")
        if any(r["action"].strip().lower() == str(row["action"]).strip().lower() for r in self.gar_rows()):
            raise UserInputError(f"gar.csv already has the action {row['action']!r}")
        draft = self.gar_rows(draft=True) if self.draft("gar.csv") is not None else None
        result = self._apply(ChangeSet(f"add {row['action']!r} to gar.csv").put(
            "gar.csv", self.gar_text([*self.gar_rows(), row])), tests)
        if result.saved and draft is not None:
            self.keep_gar_draft([*draft, row])
        return result

    # ------------------------------------------------------------------ drafts (unsaved edits)
    @property
    def drafts(self) -> Drafts:
        """The workspace's unsaved edits."""
        return Drafts(self.root)

    def draft(self, rel: str) -> str | None:
        """The unsaved draft of a workspace file, if any."""
        return self.drafts.get(rel)

    def keep_draft(self, rel: str, text: str) -> None:
        """Keep an edit of ``rel`` until it is saved or discarded (none when it matches the file)."""
        path = self.root / rel
        self.drafts.keep(rel, text, read_text_file(path) if path.is_file() else "")

    def keep_gar_draft(self, rows: list[dict[str, Any]]) -> None:
        """Keep edited GAR rows until saved or discarded (none when they are the saved table)."""
        self.drafts.keep("gar.csv", self.gar_text(rows), self.gar_text(self.gar_rows()))

    def discard_draft(self, rel: str) -> None:
        """Throw an unsaved edit away."""
        self.drafts.drop(rel)

    def import_star(self, task_dir: str | Path, api_file: str | Path | None = None) -> tuple[ImportResult, CheckResult]:
        """Import a STAR-format task (flowchart + API schema) as an SOP, GAR rows, a mock tool and agents.

        The files go through the same checked, backed-up save as an edit: nothing is written when the
        result would add a lint error.
        """
        from core.importers.star import import_star_task

        result = import_star_task(task_dir, self.root, api_file=api_file)
        change = ChangeSet(f"import STAR task {result.task}")
        for rel, content in result.files.items():
            change.put(rel, content)
        return result, self._apply(change)

    def import_star_upload(self, flowchart: tuple[str, bytes], api: tuple[str, bytes] | None
                           ) -> tuple[ImportResult, CheckResult]:
        """Import a STAR task from uploaded files: the flowchart ``<task>.json`` and its API schema."""
        name, data = flowchart
        task = Path(safe_filename(name)).stem
        if Path(name).suffix.lower() != ".json":
            raise UploadError(f"the flowchart must be the task's .json file, got {name!r}")
        if api is None:
            raise UploadError(f"{name}: upload the task's API schema (apis/{task}.json) with the flowchart")
        api_name = safe_filename(api[0])
        if Path(api_name).suffix.lower() != ".json":
            raise UploadError(f"the API schema must be a .json file, got {api[0]!r}")
        with tempfile.TemporaryDirectory(prefix="sop-star-") as tmp:
            root = Path(tmp) / "star"  # STAR's own layout, so nothing outside it is looked at
            folder = root / "tasks" / task
            folder.mkdir(parents=True)
            flow_path = folder / f"{task}.json"
            flow_path.write_bytes(data)
            api_path = root / "apis" / api_name  # named as uploaded: the API keeps its own name
            api_path.parent.mkdir()
            api_path.write_bytes(api[1])
            try:
                return self.import_star(folder, api_path)
            except UserInputError as exc:  # name the files as the user knows them, not the temporary copies
                raise UploadError(str(exc).replace(str(flow_path), name).replace(str(api_path), api[0])) from exc

    # ------------------------------------------------------------------ store
    def settings(self) -> dict[str, Any]:
        """The store's own settings as the Store page edits them."""
        cfg = self.workspace.files.config
        return {"name": cfg.name, "currency": cfg.currency, "region": cfg.region, "description": cfg.description,
                "greeting": cfg.greeting, "languages": list(cfg.languages), "polite_particle": cfg.polite_particle}

    @staticmethod
    def known_languages() -> dict[str, str]:
        """Language code -> its name in its own language, for every language the engine reads."""
        return {lx.language: lx.name for lx in lexicons()}

    def save_settings(self, name: str, currency: str = "", region: str = "", description: str = "",
                      greeting: str = "", languages: list[str] | None = None,
                      polite_particle: str | None = None) -> CheckResult:
        """Write the store's name, currency, region, description, greeting, languages and Thai polite particle
        (None: left as it is) into store.yaml (its other lines and comments kept), checked like every save.

        Raises:
            UploadError: naming the field that is wrong (an empty name, a currency that is not a three-letter
                ISO 4217 code, a region phone numbers are not known for, a language the engine cannot read,
                a greeting over 300 characters, a polite particle that is not a short Thai word).
        """
        checked = checked_settings(name, currency, region, description, greeting, languages, polite_particle)
        text = read_text_file(self.root / "store.yaml")
        values = tuple((k, v) for k, v in checked.items() if k != "polite_particle" or polite_particle is not None)
        for key, value in values:
            if value or re.search(rf"(?m)^{key}\s*:", text):
                text = replace_top_level_block(text, key, value)
        try:
            back = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            raise UploadError(f"store.yaml would not read back after this change: {exc}") from exc
        wrong = [key for key, value in values if (value or key in back) and (back.get(key) or "") != (value or "")]
        if wrong:
            raise UploadError(f"store.yaml: {', '.join(wrong)} would not read back as written")
        return self._apply(ChangeSet("save store settings").put("store.yaml", text))

    def inventory_frame(self) -> pd.DataFrame | None:
        """The mapped inventory (roles as columns), or None when the store has none."""
        cat = self.workspace.catalog
        return cat.frame if cat is not None else None

    def inventory_mapping(self) -> dict[str, str]:
        """The current role → column mapping from store.yaml."""
        inv = self.workspace.files.config.inventory
        return dict(inv.columns) if inv else {}

    def preview_inventory(self, name: str, data: bytes) -> pd.DataFrame:
        """Read an uploaded inventory for preview and mapping (raises UploadError with file:line)."""
        return read_inventory(name, data)

    def upload_inventory(self, name: str, data: bytes, mapping: dict[str, str],
                         attributes: list[str]) -> tuple[list[MappingProblem], CheckResult | None]:
        """Replace the inventory and its mapping; nothing is written when the mapping or the workspace has errors."""
        frame = read_inventory(name, data)
        found = check_mapping(name, frame, mapping, attributes)
        if any(p.severity == "error" for p in found):
            return found, None
        inv = self.workspace.files.config.inventory
        store_yaml = read_text_file(self.root / "store.yaml")
        change = inventory_change(store_yaml, inv.source if inv else None, name, data, mapping, attributes)
        return found, self._apply(change)

    def inventory_sheet(self) -> SheetStatus | None:
        """Where a Google Sheet inventory stands (its copy, the key in use or what to set, the last failure);
        None when the inventory is a file or there is none."""
        inv = self.workspace.files.config.inventory
        return SheetFeed.for_inventory(inv, self.root).status() if inv is not None and inv.google_sheet else None

    def refresh_inventory(self) -> list[Problem]:
        """Read the Google Sheet inventory now ("Refresh now") and load the workspace again with it.

        Returns:
            That read's problems: a warning naming the sheet and what failed when its last copy stays in
            use, an error when there is no copy at all; none when it was read.

        Raises:
            UserInputError: the inventory is not a Google Sheet.
        """
        inv = self.workspace.files.config.inventory
        if inv is None or not inv.google_sheet:
            raise UserInputError("this store's inventory is not a Google Sheet")
        try:
            _, found = read_sheet(self.root, inv, fresh=True)
        except UserInputError as exc:
            loc = exc.location
            found = [Problem(loc.file if loc else "inventory", loc.line if loc else 0, "error", exc.message)]
        self.reload()
        return found

    def preview_sheet(self, sheet: str, worksheet: str = "", *,
                      fresh: bool = False) -> tuple[pd.DataFrame, list[Problem]]:
        """A Google Sheet read for preview and mapping (``fresh``: from the API now, else its copy while that
        is fresh), with a warning when an older copy stands in for it.

        Raises:
            UserInputError: naming the sheet: not a sheet id or URL, no key, an HTTP error with no copy, no
                answer in time, an unusable header row.
        """
        return read_sheet(self.root, sheet_decl(sheet, worksheet), fresh=fresh)

    def connect_sheet(self, sheet: str, worksheet: str, refresh_minutes: float, mapping: dict[str, str],
                      attributes: list[str]) -> tuple[list[MappingProblem], CheckResult | None]:
        """Make a Google Sheet the inventory, with its mapping; nothing is written when the mapping or the
        workspace has errors (the sheet is read from the copy the preview kept)."""
        decl = sheet_decl(sheet, worksheet, refresh_minutes)
        frame, _ = read_sheet(self.root, decl)
        found = check_mapping(SheetRef(decl.google_sheet, decl.worksheet).label, frame, mapping, attributes)
        if any(p.severity == "error" for p in found):
            return found, None
        store_yaml = read_text_file(self.root / "store.yaml")
        return found, self._apply(sheet_change(store_yaml, decl, mapping, attributes))

    def kb_documents(self) -> list[dict[str, Any]]:
        """The KB files with their size and number of indexed chunks."""
        kb = self.workspace.kb
        out = []
        for path in self.workspace.files.kb_files():
            ref = str(path.relative_to(self.root))
            chunks = sum(1 for c in kb.chunks if c.ref.split("#")[0] == ref) if kb else 0
            out.append({"file": ref, "bytes": path.stat().st_size, "chunks": chunks})
        return out

    def upload_kb(self, files: list[tuple[str, bytes]]) -> CheckResult:
        """Add KB documents (.md, .txt, .pdf) in one change; an invalid file stops them all."""
        if not files:
            raise UploadError("choose at least one file")
        change = ChangeSet(f"upload KB {', '.join(n for n, _ in files)}")
        for name, data in files:
            change.files.update(kb_change(name, data).files)
        return self._apply(change)

    def delete_kb(self, rel: str) -> CheckResult:
        """Remove one KB document (backed up, undoable)."""
        if not rel.startswith("kb/") or not (self.root / rel).is_file():
            raise UserInputError(f"{rel} is not a knowledge-base file of this workspace")
        return self._apply(ChangeSet(f"delete {rel}").delete(rel))

    # ------------------------------------------------------------------ test runs
    def conversation_files(self) -> list[Path]:
        """The workspace's conversation test files (``conversations/`` or ``tests/conversations/``)."""
        found: list[Path] = []
        for folder in TEST_FOLDERS:
            d = self.root / folder
            if d.is_dir():
                found += sorted([*d.rglob("*.yaml"), *d.rglob("*.yml")])
        return [p for p in found if leads_outside(self.root, p) is None and self._targets_me(p)]

    def _targets_me(self, path: Path) -> bool:
        try:
            spec = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            return True  # listed, so the run reports why it cannot be read
        target = spec.get("workspace") if isinstance(spec, dict) else None
        return not target or (path.parent / str(target)).resolve() == self.root

    def run_tests(self, files: list[Path], progress: Progress | None = None) -> list[FileResult]:
        """Run conversation files on fresh temporary stores, with this workspace as loaded now."""
        if progress is not None and not self.wait_for_kb(0):
            progress(0.0, "waiting for the knowledge base to be indexed")
        cache = WorkspaceCache()
        cache.put(self.root, self._indexed_workspace())
        out = []
        for i, path in enumerate(files):
            if progress is not None:
                progress(i / max(len(files), 1), f"running {path.name}")
            out.append(run_file(path, self.root, cache))
        if progress is not None:
            progress(1.0, "done")
        return out

    def save_chat_as_test(self, session_id: str, name: str = "") -> tuple[str, CheckResult, FileResult]:
        """Save a chat as a conversation test of this workspace: its messages, the results of tools outside
        the workspace (HTTP, Python) as scripted outcomes, and what each turn did as its expectations.

        Returns:
            The file written (workspace-relative), the save's result, and a run of the new test.
        """
        traces = self.traces(session_id)
        if not traces:
            raise UserInputError("this chat has no turns yet: send a message first")
        state = self.state(session_id)
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
        if (self.root / rel).exists():
            raise UserInputError(f"{rel} already exists; pick another name")
        path = self.root / rel
        external = {n for n, t in (self.orch.gateway.tools.items() if self.orch else [])
                    if isinstance(t, HttpTool | PythonTool | McpTool)} | set(scripted)
        cache = WorkspaceCache()
        cache.put(self.root, self._indexed_workspace())
        spec, first = recorded_test(name, traces, external=external, customer_id=customer_id, path=path,
                                    root=self.root, cache=cache)
        result = self._apply(ChangeSet(f"save chat as {rel}").put(rel, dump(spec)))  # dump checks it reads back
        return rel, result, (run_file(path, self.root, cache) if result.saved else first)  # the file as written

    def replay(self, *, session_id: str = "", test: Path | None = None,
               progress: Progress | None = None) -> ReplayReport:
        """Replay a chat of this workspace (or a conversation test) against the unsaved drafts, beside the
        workspace as saved: the turns whose replies, steps, tools or decisions change (:mod:`core.evaluation.replay`).
        With no drafts, a chat is compared with what it did when it was recorded."""
        if session_id:
            traces = self.traces(session_id)
            if not traces:
                raise UserInputError(f"session {session_id!r} has no turns to replay")
            state = self.state(session_id)
            recording = Recording.from_traces(f"chat: {str(traces[0].get('user', ''))[:50]}", traces,
                                              state.customer_id if state else "")
        elif test is not None:
            recording = Recording.load(test)
        else:
            raise UserInputError("pick a chat or a conversation test to replay")
        drafts = {rel: text for rel in self.drafts.names() if (text := self.drafts.get(rel)) is not None}
        saved = (self.root, self._indexed_workspace())
        build: dict[str, Any] = {"brain": self.brain, "llm": self.llm}
        if not drafts:
            if not recording.has_replies:
                raise UserInputError("there are no unsaved drafts to compare with: edit an SOP or the GAR first")
            return replay(recording, saved, before_label="as recorded", after_label="as saved now",
                          progress=progress, **build)
        change = ChangeSet("replay")
        for rel, text in drafts.items():
            change.put(rel, text)
        with staged(self.root, change) as stage:
            edited = load_workspace(stage, self.embedder)
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
        return run_synthetic(self.root, sessions=sessions, seed=seed, brain=self.brain, progress=report_progress,
                             embedder=self.embedder, loaded=self._indexed_workspace())

    def simulate(self, sops: list[str] | None = None, manners: list[str] | None = None, k: int = 3, seed: int = 7,
                 progress: Progress | None = None) -> SimulationReport:
        """Simulated customers on this workspace's SOPs with the current brain (fresh temporary stores); the
        chat's language model, when one is set, plays the customers and judges the runs."""
        if not 1 <= k <= MAX_SIMULATION_K:
            raise UserInputError(f"k must be between 1 and {MAX_SIMULATION_K}, got {k}")
        report_progress = (lambda done, total: progress(done / total, f"run {done} of {total}")) \
            if progress is not None else None
        try:
            return simulate(self.root, sops=sops, manners=manners, k=k, seed=seed, brain=self.brain,
                            llm=self.llm or LLMSettings.from_env(), embedder=self.embedder,
                            loaded=self._indexed_workspace(), progress=report_progress)
        except ValueError as exc:
            raise UserInputError(str(exc)) from exc

    def close(self) -> None:
        """Stop indexing and close the stores."""
        if self.workspace.kb is not None:
            self.workspace.kb.stop()
        self.store.close()
        self.memory.close()


def checked_settings(name: str, currency: str = "", region: str = "", description: str = "", greeting: str = "",
                     languages: list[str] | None = None, polite_particle: str | None = None) -> dict[str, Any]:
    """A store's settings, tidied and checked, in store.yaml's order.

    Raises:
        UploadError: naming the field that is wrong (an empty name, a currency that is not a three-letter
            ISO 4217 code, a region phone numbers are not known for, a language the engine cannot read,
            a greeting over 300 characters, a polite particle that is not a short Thai word).
    """
    import phonenumbers

    name, currency, region = name.strip(), currency.strip().upper(), region.strip().upper()
    if not name or len(name) > 80:
        raise UploadError("store name: give a name of 1 to 80 characters")
    if currency and not re.fullmatch(r"[A-Z]{3}", currency):
        raise UploadError(f"currency: {currency!r} is not a three-letter ISO 4217 code such as USD, EUR or THB")
    if region and region not in phonenumbers.SUPPORTED_REGIONS:
        raise UploadError(f"region: {region!r} is not a two-letter country code such as US, GB or TH")
    greeting = " ".join(greeting.split())
    if len(greeting) > 300:
        raise UploadError(f"greeting: {len(greeting)} characters; keep it under 300")
    known = Playground.known_languages()
    langs = [c.strip().lower() for c in languages or [] if c.strip()]
    unknown = [c for c in langs if c not in known]
    if unknown:
        raise UploadError(f"languages: {', '.join(map(repr, unknown))} not known (known: {', '.join(known)})")
    particle = (polite_particle or "").strip()
    if particle and not re.fullmatch(r"[\u0E00-\u0E7F]{1,12}", particle):
        raise UploadError(f"polite particle: {particle!r} is not a short Thai word such as ครับ or ค่ะ")
    return {"name": name, "currency": currency, "region": region, "description": " ".join(description.split()),
            "greeting": greeting, "languages": langs, "polite_particle": particle}


def create_store(spec: NewStore) -> Path:
    """A new store from the wizard's answers (:mod:`core.playground.newstore`), its settings checked like the
    Store page's; the new workspace's folder."""
    settings = checked_settings(spec.name, spec.currency, spec.region, spec.description, spec.greeting,
                                spec.languages)
    return newstore.create_store(spec, settings)


def _sop_name(name: str) -> str:
    clean = safe_filename(name.strip())
    if Path(clean).suffix not in SOP_SUFFIXES:
        raise UserInputError(f"an SOP file name ends in .sop (text) or .json (node graph), got {name!r}")
    return clean


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    return str(value).strip()


def _short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["INVENTORY_TYPES", "Playground", "SopCheck", "SopFile", "TurnView"]


OUTCOMES = {"completed": "done", "cancelled": "cancelled by the customer", "left": "closed: the customer left",
            "failed": "could not be completed", "sop removed": "stopped: its SOP was removed"}
"""How a finished goal's outcome reads in the playground."""


def _words(slot: str) -> str:
    """A slot name as words ("order_id" -> "order id")."""
    return slot.replace("_", " ").replace(".", " ").strip()
