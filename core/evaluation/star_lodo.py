"""Leave one domain out (``python -m core eval star --leave-one-domain-out``): the engine's settings tuned
on four of STAR's domains, the fifth scored, for each domain."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.evaluation.metrics import weighted_f1
from core.evaluation.star import Progress, evaluate_star
from core.evaluation.star_report import StarReport, pct

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
        lines.append(f"  {held:<12} held out: {pct(f['held_out_weighted_f1']):>6}   (tuned on the others: "
                     f"{pct(f['tuned_on_weighted_f1'])}, chose {f['chosen']}; tasks {', '.join(f['tasks'])})")
    lines.append(f"\nmean over the {len(result['folds'])} held-out domains: {pct(result['mean_held_out_weighted_f1'])}"
                 f"   ({result['seconds']} s of replay)")
    return "\n".join(lines)
