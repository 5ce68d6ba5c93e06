"""``python -m core eval star``: the engine measured on STAR's real human conversations.

Every task of the STAR folder is imported with ``python -m core import star`` (no task-specific
code anywhere), one workspace per set of tasks a dialogue's wizard could do; every complete
dialogue is replayed with teacher forcing (see :mod:`core.evaluation.star_replay`) and each
wizard step is scored as in STAR's next-action protocol: accuracy and weighted F1 (scikit-learn's
``average="weighted"``), overall and per task, on the happy single-task dialogues (the set earlier
work reports) and on all complete ones, plus the API name and slot values of queries and, for
multi-task dialogues, how often the engine was on the task the wizard selected. The figures are
:mod:`core.evaluation.star_report`'s; tuning on some domains and scoring the others is
:mod:`core.evaluation.star_lodo`'s.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.engine.build import build_orchestrator, load_workspace
from core.evaluation.replay_store import ReplayStore
from core.evaluation.star_replay import (
    DialogueResult,
    Replay,
    TaskSpace,
)
from core.evaluation.star_report import StarReport, in_set
from core.importers.star import ImportResult, import_star_task, write_import
from core.importers.star_format import Dialogue, StarApi, iter_dialogues, load_task
from core.retrieval.embedding import CachedEmbedder, one_thread_each, shared_model
from core.shared.errors import Location, UserInputError
from core.state.memory import LocalPreferenceMemory
from core.workspace.files import raise_on_errors

Progress = Callable[[int, int], None]


# ---------------------------------------------------------------------------- running


def evaluate_star(folder: str | Path, brain: str = "rule", progress: Progress | None = None, *,
                  embedder: CachedEmbedder | None = None, limit: int | None = None,
                  dialogues: list[str] | None = None, jobs: int = 1,
                  settings: dict[str, Any] | None = None, happy_only: bool = False,
                  cache: Path | None = None) -> StarReport:
    """Replay STAR's complete dialogues through the engine and score every wizard step.

    Args:
        folder: a STAR folder (``tasks/``, ``apis/``, ``dialogues/``).
        brain: the brain that runs the agent ("rule" offline).
        progress: called as ``progress(done, total)`` as dialogues finish.
        embedder: an embedder to share (tests; one process only); default: the packaged model, in memory.
        limit: replay at most this many dialogues (in file order), for a quick look.
        dialogues: replay only these dialogue ids.
        jobs: worker processes (0: one per core); each replays its share with its own engine.
        settings: engine settings to use instead of the imported workspace's (``intent_threshold``, ...).
        happy_only: replay only the happy single-task dialogues.
        cache: an SQLite file of sentence embeddings the workers share across runs (see
            :func:`default_cache`); default: none (each worker embeds in memory).

    Raises:
        UserInputError: when the folder is not a STAR folder or a task cannot be imported.
    """
    started = time.perf_counter()
    root = Path(folder)
    if not (root / "dialogues").is_dir() or not (root / "tasks").is_dir():
        raise UserInputError("not a STAR folder (it needs tasks/ and dialogues/)", Location(str(root)))
    report = StarReport(folder=str(root), brain=brain)
    todo = _select(root, report, limit, dialogues)
    if happy_only:
        todo = [d for d in todo if in_set(d, "happy_single_task")]
    jobs = jobs or os.cpu_count() or 1
    if jobs > 1 and embedder is None and len(todo) >= 2 * jobs:
        report.results = _replay_parallel(root, brain, todo, jobs, settings or {}, progress, cache)
    else:
        emb = embedder or (CachedEmbedder(shared_model(), cache) if cache is not None else None)
        try:
            report.results = _replay_all(root, brain, todo, emb, settings or {}, progress)
        finally:
            if emb is not None and embedder is None:
                emb.close()
    report.seconds = time.perf_counter() - started
    return report


def _replay_all(root: Path, brain: str, todo: list[Dialogue], embedder: CachedEmbedder | None,
                settings: dict[str, Any], progress: Progress | None) -> list[DialogueResult]:
    emb = embedder or CachedEmbedder(shared_model(), None)
    out: list[DialogueResult] = []
    with tempfile.TemporaryDirectory(prefix="sop-star-") as tmp:
        spaces: dict[tuple[str, ...], TaskSpace] = {}
        apis: dict[str, StarApi] = {}
        try:
            for done, d in enumerate(todo, start=1):
                key = tuple(sorted(set(d.tasks)))
                if key not in spaces:
                    spaces[key] = _space(root, key, Path(tmp) / f"ws{len(spaces)}", brain, emb, apis)
                    for name, value in settings.items():
                        setattr(spaces[key].orch.settings, name, value)
                out.append(_replay(spaces[key], d))
                if progress is not None:
                    progress(done, len(todo))
        finally:
            for space in spaces.values():
                space.orch.store.close()
                space.orch.memory.close()
    return out


def _worker_init() -> None:
    """One worker process: one compute thread, so N workers use N cores without oversubscribing them."""
    one_thread_each()


def _worker(job: tuple[str, str, list[Dialogue], dict[str, Any], str]) -> list[DialogueResult]:
    root, brain, todo, settings, cache = job
    if not cache:
        return _replay_all(Path(root), brain, todo, None, settings, None)
    emb = CachedEmbedder(shared_model(), Path(cache))
    try:
        return _replay_all(Path(root), brain, todo, emb, settings, None)
    finally:
        emb.close()


def default_cache() -> Path:
    """The user's cache of sentence embeddings for replays (``$XDG_CACHE_HOME`` or ``~/.cache``): a
    second replay of the same dialogues embeds nothing again."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "sop-agent-playground" / "embeddings.sqlite"


def _replay_parallel(root: Path, brain: str, todo: list[Dialogue], jobs: int, settings: dict[str, Any],
                     progress: Progress | None, cache: Path | None = None) -> list[DialogueResult]:
    """The dialogues shared among worker processes, grouped by task set (a worker imports each set it
    meets once), the results back in file order."""
    groups: dict[tuple[str, ...], list[Dialogue]] = {}
    for d in todo:
        groups.setdefault(tuple(sorted(set(d.tasks))), []).append(d)
    shares: list[list[Dialogue]] = [[] for _ in range(jobs)]
    for group in sorted(groups.values(), key=len, reverse=True):  # largest first, each to the lightest share
        for i in range(0, len(group), 40):
            min(shares, key=len).extend(group[i:i + 40])
    chunks = [share[i:i + 40] for share in shares for i in range(0, len(share), 40)]
    order = {d.id: i for i, d in enumerate(todo)}
    results: list[DialogueResult] = []
    ctx = multiprocessing.get_context("spawn")
    work = [(str(root), brain, c, settings, str(cache or "")) for c in chunks if c]
    with ctx.Pool(jobs, initializer=_worker_init) as pool:
        for part in pool.imap_unordered(_worker, work):
            results += part
            if progress is not None:
                progress(len(results), len(todo))
    return sorted(results, key=lambda r: order[r.dialogue.id])


def _select(root: Path, report: StarReport, limit: int | None, ids: list[str] | None) -> list[Dialogue]:
    tasks = {p.name for p in (root / "tasks").iterdir() if p.is_dir()}
    out = []
    for d in iter_dialogues(root / "dialogues"):
        if ids is not None and d.id not in ids:
            continue
        if not d.complete:
            report.skipped["incomplete"] += 1
        elif not d.tasks or any(t not in tasks for t in d.tasks):
            report.skipped["task folder missing"] += 1
        else:
            out.append(d)
    return out[:limit] if limit is not None else out


def _space(root: Path, tasks: tuple[str, ...], ws: Path, brain: str, embedder: CachedEmbedder,
           apis: dict[str, StarApi]) -> TaskSpace:
    """Import a set of tasks into a fresh workspace and build an engine on it."""
    ws.mkdir(parents=True)
    imports: dict[str, ImportResult] = {}
    replies: dict[str, str] = {}
    for name in tasks:
        task = load_task(root / "tasks" / name)
        replies.update(task.replies)
        result = import_star_task(task.folder, ws, task=task)
        write_import(result, ws)
        imports[name] = result
        if task.api is not None:
            apis[task.api.name] = task.api
    loaded = load_workspace(ws, embedder)
    raise_on_errors(loaded.problems)
    orch = build_orchestrator(ws, brain=brain, store=ReplayStore(), memory=LocalPreferenceMemory(":memory:"),
                              loaded=loaded)
    return TaskSpace(orch, imports, {name: api for name, api in apis.items()
                                     if any(i.api == name for i in imports.values())}, replies)


def _replay(space: TaskSpace, d: Dialogue) -> DialogueResult:
    long_text = {f.name for api in space.apis.values() for f in api.inputs if f.type.lower() == "longstring"}
    replay = Replay(space, d, long_text)
    try:
        return replay.run()
    except Exception as exc:  # noqa: BLE001 - one broken dialogue is reported, never stops the evaluation
        replay.result.error = f"{type(exc).__name__}: {exc}"
        return replay.result
    finally:
        space.orch.store.delete_session(replay.session)
