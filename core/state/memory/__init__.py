"""Customer preference memory: the contract, its data shapes, and the stores (local SQLite, Zep Cloud).

``ZepPreferenceMemory`` is imported lazily (``from core.state.memory import ZepPreferenceMemory`` works)
so that the Zep SDK is only loaded when Zep is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.state.memory.base import (
    MemoryUnavailableError,
    PreferenceEntry,
    PreferenceMemory,
    PreferenceSummary,
    PreferenceUpdate,
)
from core.state.memory.local import LocalPreferenceMemory
from core.state.memory.stores import open_preference_memory

if TYPE_CHECKING:
    from core.state.memory.zep import ZepPreferenceMemory

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
        from core.state.memory.zep import ZepPreferenceMemory

        return ZepPreferenceMemory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
