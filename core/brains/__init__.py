"""Brains interpret language; the engine decides."""

from core.brains.base import Brain, Perception
from core.brains.rule import RuleBrain

__all__ = ["Brain", "Perception", "RuleBrain"]
