"""``python -m core eval star``: the engine measured on STAR's real human conversations.

Every task of the STAR folder is imported with ``python -m core import star`` (no task-specific
code anywhere), one workspace per set of tasks a dialogue's wizard could do; every complete
dialogue is replayed with teacher forcing (see :mod:`core.evaluation.star_replay`) and each
wizard step is scored as in STAR's next-action protocol: accuracy and weighted F1 (scikit-learn's
``average="weighted"``), overall and per task, on the happy single-task dialogues (the set earlier
work reports) and on all complete ones, plus the API name and slot values of queries and, for
multi-task dialogues, how often the engine was on the task the wizard selected.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.engine.build import build_orchestrator, load_workspace
from core.evaluation.metrics import accuracy, per_label, weighted_f1
from core.evaluation.star_replay import (
    CLOSING,
    GOODBYE,
    GREETING,
    OUT_OF_SCOPE,
    DialogueResult,
    Replay,
    Scored,
    TaskPick,
    TaskSpace,
)
from core.evaluation.star_store import ReplayStore
from core.importers.star import ImportResult, import_star_task, write_import
from core.importers.star_format import Dialogue, StarApi, iter_dialogues, load_task
from core.language import text as T
from core.retrieval.embedding import CachedEmbedder, one_thread_each, shared_model
from core.shared.errors import Location, UserInputError
from core.state.memory import LocalPreferenceMemory
from core.workspace.config import raise_on_errors

Progress = Callable[[int, int], None]
REFERENCES = {
    "SAM (Mehri & Eskenazi 2021), zero-shot": {"weighted_f1": 0.558, "accuracy": 0.580},
    "BERT+S (Mosig et al. 2020), zero-shot": {"weighted_f1": 0.288, "accuracy": 0.318},
}
"""Published next-action figures on STAR's original labels, averaged over held-out domains."""
SETS = {"happy_single_task": "happy single-task dialogues", "all": "all complete dialogues",
        "multi_task": "multi-task dialogues"}
MULTI = "(multi-task)"
SHARED_LABELS = frozenset({GREETING, CLOSING, GOODBYE, OUT_OF_SCOPE})
"""STAR's labels every task shares: a task selected only to use one of them is not being worked on."""


@dataclass
class StarReport:
    """The outcome of a STAR replay; ``to_dict()`` is JSON-safe."""

    folder: str
    brain: str
    results: list[DialogueResult] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def _turns(self, which: str) -> list[tuple[Dialogue, Scored]]:
        return [(r.dialogue, t) for r in self.results if _in_set(r.dialogue, which) for t in r.turns]

    @property
    def accuracy(self) -> float:
        turns = self._turns("all")
        return accuracy([t.gold for _, t in turns], [t.predicted for _, t in turns])

    @property
    def weighted_f1(self) -> float:
        turns = self._turns("all")
        return weighted_f1([t.gold for _, t in turns], [t.predicted for _, t in turns])

    def summary(self, which: str) -> dict[str, Any]:
        """Accuracy, weighted F1, per task and query scores of one set of dialogues."""
        results = [r for r in self.results if _in_set(r.dialogue, which)]
        turns = [(r.dialogue, t) for r in results for t in r.turns]
        groups: dict[str, list[Scored]] = {}
        for d, t in turns:
            groups.setdefault(d.tasks[0] if not d.multi_task and d.tasks else MULTI, []).append(t)
        return {"dialogues": len(results), "turns": len(turns), **_scores([t for _, t in turns]),
                "per_task": {k: {"turns": len(v), **_scores(v)} for k, v in sorted(groups.items())},
                "queries": _query_scores(results)}

    def active_task(self) -> dict[str, Any]:
        """How often, when the wizard selected a task, the engine was on that task too. Also counted over
        the selections that follow a message asking for something (not a bare greeting, thanks or
        goodbye, after which wizards often clicked a task before the customer said anything about it),
        and over the selections followed by a step of the task itself (not one of the labels every task
        shares: a wizard saying goodbye picks any task to reach the goodbye button)."""
        picks = [p for r in self.results if r.dialogue.multi_task for p in r.task_picks]
        asked = [p for p in picks if not _small_talk(p.user)]
        worked = [p for p in picks if p.gold not in SHARED_LABELS]
        misses = Counter((p.selected, p.engine or "(none)") for p in picks if not p.identified)
        return {"selections": len(picks), "identified": sum(p.identified for p in picks),
                "accuracy": _share(sum(p.identified for p in picks), len(picks)),
                "after_requests": _picks(asked), "before_task_steps": _picks(worked),
                "misses": [{"selected": s, "engine": e, "count": n} for (s, e), n in misses.most_common(10)]}

    def confusions(self, which: str = "all", top: int = 15) -> list[dict[str, Any]]:
        pairs = Counter((t.gold, t.predicted) for _, t in self._turns(which) if t.gold != t.predicted)
        return [{"gold": g, "predicted": p, "count": n} for (g, p), n in pairs.most_common(top)]

    def labels(self, which: str = "happy_single_task") -> dict[str, dict[str, float]]:
        turns = self._turns(which)
        stats = per_label([t.gold for _, t in turns], [t.predicted for _, t in turns])
        return {k: {m: round(v, 4) for m, v in s.items()} for k, s in stats.items() if s["support"]}

    def to_dict(self) -> dict[str, Any]:
        return {"folder": self.folder, "brain": self.brain, "dialogues": len(self.results),
                "turns": len(self._turns("all")), "accuracy": round(self.accuracy, 4),
                "weighted_f1": round(self.weighted_f1, 4),
                "sets": {k: self.summary(k) for k in SETS}, "active_task": self.active_task(),
                "confusions": {k: self.confusions(k) for k in ("all", "happy_single_task")},
                "labels_happy_single_task": self.labels(), "references": REFERENCES,
                "errors": [{"dialogue": r.dialogue.id, "error": r.error} for r in self.results if r.error],
                "skipped": dict(self.skipped), "notes": self.notes, "seconds": round(self.seconds, 1)}


def _picks(picks: list[TaskPick]) -> dict[str, Any]:
    hits = sum(p.identified for p in picks)
    return {"selections": len(picks), "identified": hits, "accuracy": _share(hits, len(picks))}


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _small_talk(text: str) -> bool:
    """A message that asks for nothing: a greeting, thanks or goodbye on its own (or no message)."""
    return not T.tokens(text) or T.is_greeting(text) or T.is_farewell(text) or T.declines_more(text) or (
        T.is_thanks(text) and not T.is_request(text) and not T.is_question(text))


def _in_set(d: Dialogue, which: str) -> bool:
    if which == "happy_single_task":
        return d.happy and not d.multi_task
    if which == "multi_task":
        return d.multi_task
    return True


def _scores(turns: list[Scored]) -> dict[str, Any]:
    gold, pred = [t.gold for t in turns], [t.predicted for t in turns]
    return {"accuracy": round(accuracy(gold, pred), 4) if turns else None,
            "weighted_f1": round(weighted_f1(gold, pred), 4) if turns else None}


def _query_scores(results: list[DialogueResult]) -> dict[str, Any]:
    queries = [q for r in results for q in r.queries]
    predicted = [q for q in queries if q.api_match is not None]
    values = [ok for q in queries for _, ok in q.values]
    exact = [all(ok for _, ok in q.values) for q in queries if q.values]
    return {"queries": len(queries), "predicted_as_query": len(predicted),
            "api_name_accuracy": round(sum(bool(q.api_match) for q in predicted) / len(predicted), 4)
            if predicted else None,
            "slot_values": len(values), "slot_value_accuracy": round(sum(values) / len(values), 4) if values else None,
            "all_values_right": round(sum(exact) / len(exact), 4) if exact else None}


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
        todo = [d for d in todo if _in_set(d, "happy_single_task")]
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


# ---------------------------------------------------------------------------- leave one domain out

GRID = {"intent_threshold": (0.4, 0.5, 0.6)}
"""The engine settings a STAR replay may tune: each fold picks the value that scores best on the other
domains (the rule brain has no other trained parameters)."""


def domain_of(task: str) -> str:
    """STAR's domain of a task: the name's first part (``hotel_book`` -> ``hotel``)."""
    return task.split("_")[0]


def leave_one_domain_out(folder: str | Path, brain: str = "rule", jobs: int = 0,
                         progress: Progress | None = None, cache: Path | None = None) -> dict[str, Any]:
    """Happy single-task weighted F1 per domain when the settings are chosen on the other domains.

    Every setting of :data:`GRID` is replayed once over the happy single-task dialogues; for each domain
    the setting with the best weighted F1 on the other domains' steps is taken and the domain is scored
    with it. The mean over the domains is the estimate for a flow the engine was never tuned on.
    """
    runs: dict[float, StarReport] = {}
    name, values = next(iter(GRID.items()))
    for value in values:
        runs[value] = evaluate_star(folder, brain, progress, jobs=jobs, settings={name: value}, happy_only=True,
                                    cache=cache)
    folds: dict[str, Any] = {}
    domains = sorted({domain_of(r.dialogue.tasks[0]) for run in runs.values() for r in run.results})
    for held in domains:
        def score(report: StarReport, inside: bool, held: str = held) -> float:
            turns = [t for r in report.results if (domain_of(r.dialogue.tasks[0]) == held) == inside for t in r.turns]
            return weighted_f1([t.gold for t in turns], [t.predicted for t in turns]) if turns else 0.0

        chosen = max(values, key=lambda v: (score(runs[v], False), -abs(v - 0.5)))
        folds[held] = {"chosen": {name: chosen}, "tuned_on_weighted_f1": round(score(runs[chosen], False), 4),
                       "held_out_weighted_f1": round(score(runs[chosen], True), 4),
                       "tasks": sorted({r.dialogue.tasks[0] for r in runs[chosen].results
                                        if domain_of(r.dialogue.tasks[0]) == held})}
    mean = sum(f["held_out_weighted_f1"] for f in folds.values()) / len(folds) if folds else 0.0
    return {"folder": str(folder), "brain": brain, "grid": {name: list(values)}, "folds": folds,
            "mean_held_out_weighted_f1": round(mean, 4),
            "per_setting": {str(v): round(run.summary("happy_single_task")["weighted_f1"] or 0.0, 4)
                            for v, run in runs.items()},
            "seconds": round(sum(run.seconds for run in runs.values()), 1)}


def format_lodo(result: dict[str, Any]) -> str:
    """The leave-one-domain-out figures as text."""
    lines = [f"leave-one-domain-out on {result['folder']} (brain: {result['brain']}), happy single-task weighted F1; "
             f"settings grid {result['grid']}", ""]
    for held, f in result["folds"].items():
        lines.append(f"  {held:<12} held out: {_pct(f['held_out_weighted_f1']):>6}   (tuned on the others: "
                     f"{_pct(f['tuned_on_weighted_f1'])}, chose {f['chosen']}; tasks {', '.join(f['tasks'])})")
    lines.append(f"\nmean over the {len(result['folds'])} held-out domains: {_pct(result['mean_held_out_weighted_f1'])}"
                 f"   ({result['seconds']} s of replay)")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- text report


def format_report(report: StarReport, confusions: int = 12) -> str:
    """A plain-text summary (the CLI's output without ``--json``)."""
    d = report.to_dict()
    lines = [f"STAR replay of {d['folder']} (brain: {d['brain']}): {d['dialogues']} dialogues, {d['turns']} scored "
             f"wizard steps, {d['seconds']} s", ""]
    head = f"{'':<34}{'dialogues':>10}{'steps':>8}{'accuracy':>10}{'weighted F1':>13}"
    lines.append(head)
    for key, title in SETS.items():
        s = d["sets"][key]
        lines.append(f"{title:<34}{s['dialogues']:>10}{s['turns']:>8}{_pct(s['accuracy']):>10}"
                     f"{_pct(s['weighted_f1']):>13}")
        for task, t in s["per_task"].items():
            if key != "multi_task":
                lines.append(f"  {task:<42}{t['turns']:>8}{_pct(t['accuracy']):>10}{_pct(t['weighted_f1']):>13}")
    for name, ref in REFERENCES.items():
        lines.append(f"{'ref: ' + name:<52}{_pct(ref['accuracy']):>10}{_pct(ref['weighted_f1']):>13}")
    for key in ("happy_single_task", "all"):
        q = d["sets"][key]["queries"]
        lines.append(f"\nqueries ({SETS[key]}): {q['queries']}; predicted as a query {q['predicted_as_query']}, "
                     f"API name right {_pct(q['api_name_accuracy'])}; "
                     f"slot values right {_pct(q['slot_value_accuracy'])}"
                     f" of {q['slot_values']}, all values right {_pct(q['all_values_right'])}")
    a, r, w = d["active_task"], d["active_task"]["after_requests"], d["active_task"]["before_task_steps"]
    lines.append(f"active task identified in multi-task dialogues: {a['identified']}/{a['selections']} "
                 f"({_pct(a['accuracy'])}); after a message asking for something: {r['identified']}/"
                 f"{r['selections']} ({_pct(r['accuracy'])}); when the wizard's next step is the task's own "
                 f"(not a shared greeting/closing label): {w['identified']}/{w['selections']} ({_pct(w['accuracy'])})")
    lines += ["", "most frequent errors (gold -> predicted), all dialogues:"]
    lines += [f"  {c['count']:5d}  {c['gold']} -> {c['predicted']}" for c in d["confusions"]["all"][:confusions]]
    if d["errors"]:
        lines += ["", f"{len(d['errors'])} dialogue(s) failed to replay, e.g. {d['errors'][0]}"]
    if d["skipped"]:
        lines.append("skipped: " + ", ".join(f"{k} {v}" for k, v in d["skipped"].items()))
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"
