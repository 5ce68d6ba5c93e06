"""What a STAR replay (:mod:`core.evaluation.star`) reports: accuracy and weighted F1 overall, per set of
dialogues and per task, query scores, the active task in multi-task dialogues, and the plain-text summary."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from core.evaluation.metrics import accuracy, per_label, weighted_f1
from core.evaluation.star_replay import CLOSING, GOODBYE, GREETING, OUT_OF_SCOPE, DialogueResult, Scored, TaskPick
from core.importers.star_format import Dialogue
from core.language import text as T

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
        return [(r.dialogue, t) for r in self.results if in_set(r.dialogue, which) for t in r.turns]

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
        results = [r for r in self.results if in_set(r.dialogue, which)]
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


def in_set(d: Dialogue, which: str) -> bool:
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
        lines.append(f"{title:<34}{s['dialogues']:>10}{s['turns']:>8}{pct(s['accuracy']):>10}"
                     f"{pct(s['weighted_f1']):>13}")
        for task, t in s["per_task"].items():
            if key != "multi_task":
                lines.append(f"  {task:<42}{t['turns']:>8}{pct(t['accuracy']):>10}{pct(t['weighted_f1']):>13}")
    for name, ref in REFERENCES.items():
        lines.append(f"{'ref: ' + name:<52}{pct(ref['accuracy']):>10}{pct(ref['weighted_f1']):>13}")
    for key in ("happy_single_task", "all"):
        q = d["sets"][key]["queries"]
        lines.append(f"\nqueries ({SETS[key]}): {q['queries']}; predicted as a query {q['predicted_as_query']}, "
                     f"API name right {pct(q['api_name_accuracy'])}; "
                     f"slot values right {pct(q['slot_value_accuracy'])}"
                     f" of {q['slot_values']}, all values right {pct(q['all_values_right'])}")
    a, r, w = d["active_task"], d["active_task"]["after_requests"], d["active_task"]["before_task_steps"]
    lines.append(f"active task identified in multi-task dialogues: {a['identified']}/{a['selections']} "
                 f"({pct(a['accuracy'])}); after a message asking for something: {r['identified']}/"
                 f"{r['selections']} ({pct(r['accuracy'])}); when the wizard's next step is the task's own "
                 f"(not a shared greeting/closing label): {w['identified']}/{w['selections']} ({pct(w['accuracy'])})")
    lines += ["", "most frequent errors (gold -> predicted), all dialogues:"]
    lines += [f"  {c['count']:5d}  {c['gold']} -> {c['predicted']}" for c in d["confusions"]["all"][:confusions]]
    if d["errors"]:
        lines += ["", f"{len(d['errors'])} dialogue(s) failed to replay, e.g. {d['errors'][0]}"]
    if d["skipped"]:
        lines.append("skipped: " + ", ".join(f"{k} {v}" for k, v in d["skipped"].items()))
    return "\n".join(lines)


def pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"
