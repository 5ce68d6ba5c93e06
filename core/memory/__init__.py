"""Customer preference memory: the contract, its data shapes, and the local store."""

from __future__ import annotations

from core.memory.base import (
    PreferenceEntry,
    PreferenceMemory,
    PreferenceSummary,
    PreferenceUpdate,
)
from core.memory.local import LocalPreferenceMemory

__all__ = [
    "LocalPreferenceMemory",
    "PreferenceEntry",
    "PreferenceMemory",
    "PreferenceSummary",
    "PreferenceUpdate",
]
