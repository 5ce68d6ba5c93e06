"""Customer preference memory: the contract, its data shapes, and the stores (local SQLite, Zep Cloud).

``ZepPreferenceMemory`` is imported lazily (``from core.memory import ZepPreferenceMemory`` works)
so that the Zep SDK is only loaded when Zep is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.memory.base import (
    MemoryUnavailableError,
    PreferenceEntry,
    PreferenceMemory,
    PreferenceSummary,
    PreferenceUpdate,
)
from core.memory.local import LocalPreferenceMemory
from core.memory.stores import open_preference_memory

if TYPE_CHECKING:
    from core.memory.zep import ZepPreferenceMemory

__all__ = [
    "LocalPreferenceMemory",
    "MemoryUnavailableError",
    "PreferenceEntry",
    "PreferenceMemory",
    "PreferenceSummary",
    "PreferenceUpdate",
    "ZepPreferenceMemory",
    "open_preference_memory",
]


def __getattr__(name: str) -> Any:
    if name == "ZepPreferenceMemory":
        from core.memory.zep import ZepPreferenceMemory

        return ZepPreferenceMemory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
