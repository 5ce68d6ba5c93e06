"""Accuracy and weighted F1 as scikit-learn defines them, checked against values worked out by hand."""

from __future__ import annotations

import pytest

from core.evaluation.metrics import accuracy, per_label, weighted_f1

GOLD = ["a", "a", "a", "b", "b", "c"]
PRED = ["a", "a", "b", "b", "c", "c"]


def test_accuracy_counts_exact_matches() -> None:
    assert accuracy(GOLD, PRED) == pytest.approx(4 / 6)
    assert accuracy([], []) == 0.0


def test_per_label_precision_recall_f1_support() -> None:
    stats = per_label(GOLD, PRED)
    # a: predicted 2, both right; 3 gold -> P 1, R 2/3, F1 0.8
    assert stats["a"] == pytest.approx({"precision": 1.0, "recall": 2 / 3, "f1": 0.8, "support": 3.0})
    # b: predicted 2 (one right); 2 gold (one found) -> P 0.5, R 0.5, F1 0.5
    assert stats["b"] == pytest.approx({"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2.0})
    # c: predicted 2 (one right); 1 gold found -> P 0.5, R 1, F1 2/3
    assert stats["c"] == pytest.approx({"precision": 0.5, "recall": 1.0, "f1": 2 / 3, "support": 1.0})


def test_weighted_f1_weights_each_label_by_its_gold_support() -> None:
    # (3 * 0.8 + 2 * 0.5 + 1 * 2/3) / 6, as f1_score(..., average="weighted") gives
    assert weighted_f1(GOLD, PRED) == pytest.approx((2.4 + 1.0 + 2 / 3) / 6)


def test_a_label_only_predicted_counts_as_zero_weight_but_hurts_precision() -> None:
    gold, pred = ["x", "x", "y"], ["x", "z", "y"]
    # x: P 1, R 0.5 -> F1 2/3 (support 2); y: F1 1 (support 1); z: support 0, weight 0
    assert weighted_f1(gold, pred) == pytest.approx((2 * 2 / 3 + 1) / 3)
    assert per_label(gold, pred)["z"]["support"] == 0.0


def test_perfect_and_hopeless_predictions() -> None:
    assert weighted_f1(GOLD, GOLD) == 1.0
    assert weighted_f1(["a", "b"], ["c", "c"]) == 0.0
    assert weighted_f1([], []) == 0.0


def test_sequences_of_different_length_are_refused() -> None:
    with pytest.raises(ValueError, match="gold has 2 labels but predicted has 1"):
        weighted_f1(["a", "b"], ["a"])
