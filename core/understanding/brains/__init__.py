"""Brains interpret language; the engine decides."""

from core.understanding.brains.base import Brain, Perception
from core.understanding.brains.rule import RuleBrain

__all__ = ["Brain", "Perception", "RuleBrain"]
