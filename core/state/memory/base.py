"""Customer preference memory: the shapes agents see and the store contract.

A store keeps *facts* (one field, one value, with provenance). Agents only ever
receive a :class:`PreferenceSummary` derived from those facts, whatever store
answered. The merge rules live here as pure functions so every implementation
applies them identically:

* liking a brand removes it from the disliked brands and vice versa
  (case-insensitive; the newly given spelling is kept);
* features accumulate (deduplicated case-insensitively);
* a new ``budget_min`` / ``budget_max`` / ``communication_style`` replaces the old
  one, and a new budget bound drops an old opposite bound it contradicts;
* writing a fact again replaces its earlier equal fact (fresh spelling and provenance).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, Self, runtime_checkable

from pydantic import BaseModel, Field, field_validator, model_validator

from core.shared.errors import SopError

BUDGET_FIELDS = ("budget_min", "budget_max")
SCALAR_FIELDS = (*BUDGET_FIELDS, "communication_style")
BRAND_FIELDS = ("preferred_brands", "disliked_brands")
LIST_FIELDS = (*BRAND_FIELDS, "preferred_features")
PREFERENCE_FIELDS = (*SCALAR_FIELDS, *LIST_FIELDS)
COMMUNICATION_STYLES = ("", "short", "detailed")

Fact = tuple[str, str]
"""One remembered fact before it is stored: (field, value as text)."""


class _Preferences(BaseModel):
    """Fields and normalisation shared by summaries and updates."""

    budget_min: float | None = None
    budget_max: float | None = None
    preferred_brands: list[str] = Field(default_factory=list)
    disliked_brands: list[str] = Field(default_factory=list)
    preferred_features: list[str] = Field(default_factory=list)
    communication_style: str = ""

    @field_validator("budget_min", "budget_max")
    @classmethod
    def _check_budget(cls, value: float | None) -> float | None:
        return None if value is None else check_budget(value)

    @field_validator(*LIST_FIELDS)
    @classmethod
    def _clean_list(cls, values: list[str]) -> list[str]:
        return dedupe(v.strip() for v in values)

    @field_validator("communication_style")
    @classmethod
    def _check_style(cls, value: str) -> str:
        return check_style(value)

    def is_empty(self) -> bool:
        """True when nothing at all is known / learned."""
        return (
            self.budget_min is None
            and self.budget_max is None
            and not any(getattr(self, name) for name in LIST_FIELDS)
            and not self.communication_style
        )


class PreferenceSummary(_Preferences):
    """What is known about a customer's preferences: the one shape agents receive."""

    def as_text(self) -> str:
        """One short human line, e.g. ``budget 30,000–40,000; likes Logitech; wants wireless``.

        Returns:
            The line, or ``""`` when nothing is known.
        """
        parts = [
            _budget_text(self.budget_min, self.budget_max),
            _list_text("likes", self.preferred_brands),
            _list_text("avoids", self.disliked_brands),
            _list_text("wants", self.preferred_features),
            f"prefers {self.communication_style} answers" if self.communication_style else "",
        ]
        return "; ".join(part for part in parts if part)


class PreferenceUpdate(_Preferences):
    """What one turn learned about a customer's preferences; every field is optional."""

    @model_validator(mode="after")
    def _check_consistent(self) -> Self:
        if (
            self.budget_min is not None
            and self.budget_max is not None
            and self.budget_min > self.budget_max
        ):
            raise ValueError(
                f"budget_min {self.budget_min} is greater than budget_max {self.budget_max}"
            )
        both = {b.casefold() for b in self.preferred_brands} & {
            b.casefold() for b in self.disliked_brands
        }
        if both:
            raise ValueError(f"brands both preferred and disliked: {sorted(both)}")
        return self


class PreferenceEntry(BaseModel):
    """One remembered fact with its provenance (shown and edited in the playground)."""

    id: int
    customer_id: str
    field: str
    value: str
    session_id: str = ""
    turn: int = 0
    message: str = ""
    created_at: str = ""


class MemoryUnavailableError(SopError):
    """The preference store could not be reached (timeout, 5xx, 429, refused connection).

    It never breaks a turn: the orchestrator records it in the trace and carries on.

    Attributes:
        fallback: The best summary still known without the store (the last one read,
            plus updates waiting to be delivered), or None when nothing is known.
        pending: How many updates are queued for delivery on a later call.
    """

    def __init__(self, message: str, *, fallback: PreferenceSummary | None = None, pending: int = 0) -> None:
        self.message = message
        self.fallback = fallback
        self.pending = pending
        super().__init__(message)


@runtime_checkable
class PreferenceMemory(Protocol):
    """Long-lived memory of what each customer likes, across sessions.

    Every method may raise :class:`MemoryUnavailableError` when a remote store is down.
    """

    @property
    def label(self) -> str:
        """Which store this is, for people: e.g. ``local SQLite (.state/preferences.sqlite)``."""
        ...

    def summary(self, customer_id: str) -> PreferenceSummary:
        """Return everything known about the customer (empty summary if nothing)."""
        ...

    def write(
        self,
        customer_id: str,
        update: PreferenceUpdate,
        *,
        session_id: str = "",
        turn: int = 0,
        message: str = "",
    ) -> None:
        """Merge what a turn learned into the customer's facts; an empty update is a no-op. A turn's
        update is written once: another write with the same ``session_id`` and ``turn`` (a turn re-run,
        a message sent again after a crash) changes nothing.

        Raises:
            MemoryUnavailableError: A remote store is down; the update is kept and
                delivered by a later ``retry_pending`` or ``write``.
        """
        ...

    def entries(self, customer_id: str) -> list[PreferenceEntry]:
        """Return the customer's stored facts, oldest first."""
        ...

    def forget(self, customer_id: str, entry_id: int) -> None:
        """Remove one fact; an unknown id is ignored."""
        ...

    def set_entry(self, customer_id: str, entry_id: int, value: str) -> None:
        """Change one fact's value (merge rules apply; raises UserInputError if invalid)."""
        ...

    def retry_pending(self, customer_id: str) -> int:
        """Deliver the customer's updates that an earlier call could not write.

        Returns:
            How many queued updates were delivered (0 when nothing was queued).

        Raises:
            MemoryUnavailableError: The store is still down; the updates stay queued.
        """
        ...

    def close(self) -> None:
        """Release resources; calling it twice is harmless."""
        ...


# -- pure helpers shared by implementations ------------------------------------------


def dedupe(values: Iterable[str]) -> list[str]:
    """Drop empty strings and case-insensitive duplicates, keeping the first spelling."""
    seen: set[str] = set()
    kept: list[str] = []
    for value in values:
        key = value.casefold()
        if value and key not in seen:
            seen.add(key)
            kept.append(value)
    return kept


def check_budget(value: float) -> float:
    """Return a budget unchanged; raise ValueError unless it is finite and >= 0."""
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"a budget must be a finite number >= 0, got {value}")
    return value


def check_style(value: str) -> str:
    """Normalise a communication style; raise ValueError if it is not a known one."""
    style = value.strip().lower()
    if style not in COMMUNICATION_STYLES:
        raise ValueError(
            f"communication_style must be one of {COMMUNICATION_STYLES}, got {value!r}"
        )
    return style


def number_text(value: float) -> str:
    """A budget as stored text: ``30000`` for whole numbers, else the float's repr."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def normalize_fact(field: str, value: str) -> str:
    """Validate one fact's value for its field and return its stored text.

    Raises:
        ValueError: Unknown field, or a value the field cannot hold.
    """
    if field not in PREFERENCE_FIELDS:
        raise ValueError(f"unknown preference field {field!r}")
    text = value.strip()
    if field in BUDGET_FIELDS:
        try:
            number = float(text.replace(",", ""))
        except ValueError:
            raise ValueError(f"{field} must be a number, got {value!r}") from None
        return number_text(check_budget(number))
    if field == "communication_style":
        style = check_style(text)
        if not style:
            raise ValueError("communication_style cannot be empty; forget the entry instead")
        return style
    if not text:
        raise ValueError(f"{field} value cannot be empty; forget the entry instead")
    return text


def update_facts(update: PreferenceUpdate) -> list[Fact]:
    """Split an update into the facts to store, in a stable field order."""
    facts: list[Fact] = []
    for field in BUDGET_FIELDS:
        number = getattr(update, field)
        if number is not None:
            facts.append((field, number_text(number)))
    if update.communication_style:
        facts.append(("communication_style", update.communication_style))
    for field in LIST_FIELDS:
        facts.extend((field, value) for value in getattr(update, field))
    return facts


def superseded(existing: Sequence[PreferenceEntry], facts: Sequence[Fact]) -> list[int]:
    """Ids of stored entries that the new facts replace or contradict.

    Args:
        existing: The customer's stored entries.
        facts: The facts about to be stored.

    Returns:
        Entry ids to delete before storing ``facts``, in ascending order.
    """
    doomed: set[int] = set()
    for field, value in facts:
        doomed.update(e.id for e in existing if _replaces(field, value, e))
    return sorted(doomed)


def summary_from_entries(entries: Iterable[PreferenceEntry]) -> PreferenceSummary:
    """Derive the summary from stored entries (oldest first; later scalars win)."""
    scalars: dict[str, str] = {}
    lists: dict[str, list[str]] = {field: [] for field in LIST_FIELDS}
    for entry in entries:
        if entry.field in SCALAR_FIELDS:
            scalars[entry.field] = entry.value
        elif entry.field in LIST_FIELDS:
            lists[entry.field].append(entry.value)
    fields: dict[str, Any] = {f: float(scalars[f]) for f in BUDGET_FIELDS if f in scalars}
    fields.update(lists, communication_style=scalars.get("communication_style", ""))
    return PreferenceSummary(**fields)


def _replaces(field: str, value: str, entry: PreferenceEntry) -> bool:
    """Whether storing (field, value) makes ``entry`` obsolete."""
    if field in SCALAR_FIELDS and entry.field == field:
        return True
    if field == "budget_max" and entry.field == "budget_min":
        return float(entry.value) > float(value)
    if field == "budget_min" and entry.field == "budget_max":
        return float(entry.value) < float(value)
    if field in LIST_FIELDS and entry.value.casefold() == value.casefold():
        return entry.field == field or (field in BRAND_FIELDS and entry.field in BRAND_FIELDS)
    return False


def _money(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def _budget_text(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"budget {_money(low)}–{_money(high)}"
    if low is not None:
        return f"budget from {_money(low)}"
    if high is not None:
        return f"budget up to {_money(high)}"
    return ""


def _list_text(verb: str, values: list[str]) -> str:
    return f"{verb} {', '.join(values)}" if values else ""


def apply_update(summary: PreferenceSummary, update: PreferenceUpdate) -> PreferenceSummary:
    """The summary after an update, by the same merge rules every store applies."""

    def entries(facts: Sequence[Fact], start: int) -> list[PreferenceEntry]:
        return [PreferenceEntry(id=start + i, customer_id="", field=f, value=v, session_id="", turn=0,
                                message="", created_at="") for i, (f, v) in enumerate(facts)]

    old = entries(update_facts(PreferenceUpdate(**summary.model_dump())), 0)
    facts = update_facts(update)
    doomed = set(superseded(old, facts))
    kept = [e for e in old if e.id not in doomed]
    return summary_from_entries(kept + entries(facts, len(old)))
