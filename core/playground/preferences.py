"""What the playground shows and edits of a customer's remembered preferences (the chat's side panel, the
Inspector's memory tab), with a warning or a clear error when the preference store is unreachable."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.shared.errors import UserInputError
from core.state.memory.base import MemoryUnavailableError, PreferenceEntry, PreferenceSummary

if TYPE_CHECKING:
    from core.playground.service import Playground


class Preferences:
    """A customer's remembered preferences in the preference memory of one
    :class:`~core.playground.service.Playground`."""

    def __init__(self, pg: Playground) -> None:
        self.pg = pg

    def remembered(self, customer_id: str) -> tuple[PreferenceSummary, str]:
        """A customer's preference summary and, when the store is unreachable, a warning (the last known one)."""
        try:
            return self.pg.memory.summary(customer_id), ""
        except MemoryUnavailableError as exc:
            return exc.fallback or PreferenceSummary(), f"{self.pg.memory.label} is unreachable ({exc.message}); " \
                                                            "showing the last known preferences"

    def preference_entries(self, customer_id: str) -> list[PreferenceEntry]:
        """What is remembered about a customer, with where it came from.

        Raises:
            UserInputError: when the preference store is unreachable.
        """
        try:
            return self.pg.memory.entries(customer_id)
        except MemoryUnavailableError as exc:
            raise UserInputError(f"{self.pg.memory.label} is unreachable: {exc.message}") from exc

    def entries_or_empty(self, customer_id: str) -> list[PreferenceEntry]:
        """What is remembered about a customer, or nothing (no customer, the store unreachable)."""
        try:
            return self.pg.memory.entries(customer_id) if customer_id else []
        except MemoryUnavailableError:
            return []

    def forget_preference(self, customer_id: str, entry_id: int) -> None:
        """Forget one remembered fact."""
        self.pg.memory.forget(customer_id, entry_id)

    def edit_preference(self, customer_id: str, entry_id: int, value: str) -> None:
        """Change one remembered fact (raises UserInputError when the value is invalid)."""
        self.pg.memory.set_entry(customer_id, entry_id, value)
