"""Classification metrics for next-action evaluations (no scikit-learn needed)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def accuracy(gold: Sequence[str], predicted: Sequence[str]) -> float:
    """The share of positions where the prediction equals the gold label (0 for no positions)."""
    _same_length(gold, predicted)
    return sum(g == p for g, p in zip(gold, predicted, strict=True)) / len(gold) if gold else 0.0


def per_label(gold: Sequence[str], predicted: Sequence[str]) -> dict[str, dict[str, float]]:
    """Precision, recall, F1 and support of every label that occurs in either sequence.

    An undefined precision or recall (no predictions, or no gold occurrences of a label) counts
    as 0, as scikit-learn does with ``zero_division=0``.
    """
    _same_length(gold, predicted)
    support = Counter(gold)
    guessed = Counter(predicted)
    hits = Counter(g for g, p in zip(gold, predicted, strict=True) if g == p)
    out: dict[str, dict[str, float]] = {}
    for label in sorted(set(support) | set(guessed)):
        precision = hits[label] / guessed[label] if guessed[label] else 0.0
        recall = hits[label] / support[label] if support[label] else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        out[label] = {"precision": precision, "recall": recall, "f1": f1, "support": float(support[label])}
    return out


def weighted_f1(gold: Sequence[str], predicted: Sequence[str]) -> float:
    """F1 averaged over labels weighted by their gold support: scikit-learn's
    ``f1_score(gold, predicted, average="weighted", zero_division=0)``."""
    stats = per_label(gold, predicted)
    total = sum(s["support"] for s in stats.values())
    return sum(s["f1"] * s["support"] for s in stats.values()) / total if total else 0.0


def _same_length(gold: Sequence[str], predicted: Sequence[str]) -> None:
    if len(gold) != len(predicted):
        raise ValueError(f"gold has {len(gold)} labels but predicted has {len(predicted)}")
