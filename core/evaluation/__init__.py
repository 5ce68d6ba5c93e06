"""Evaluations of an agent on a workspace's SOPs (``python -m core eval ...``)."""

from core.evaluation.synthetic import SyntheticReport, run_synthetic

__all__ = ["SyntheticReport", "run_synthetic"]
