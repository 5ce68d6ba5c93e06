"""Preference changes as an append-only log of events, and the fold that turns them into facts.

A store that cannot update rows in place (Zep keeps *episodes*, which are immutable)
records every change as one :class:`PreferenceEvent`:

* ``remember``: what one turn learned, each fact with a new id and the turn's provenance;
* ``edit``: a new value for one fact (from the playground's inspector);
* ``forget``: facts removed (from the inspector).

:func:`fold` replays the events in order with the same merge rules as every other
store (:mod:`core.state.memory.base`), so the Zep store and the local SQLite store give the
same facts, ids and provenance for the same calls. An event seen twice (a retried
delivery) is applied once; an event of an unknown op or a newer schema is skipped, and
so is a fact whose field or value is not valid, so a foreign or hand-edited episode can
never break a turn.
"""

from __future__ import annotations

import secrets
import threading
import time
import uuid
from collections.abc import Iterable
from typing import Final, Literal

from pydantic import BaseModel, Field, ValidationError

from core.shared.models import utcnow
from core.state.memory.base import (
    Fact,
    PreferenceEntry,
    PreferenceUpdate,
    normalize_fact,
    superseded,
    update_facts,
)

EVENT_KIND: Final = "sop_agent.preference_event"
"""The ``kind`` of every event; also the episode metadata value the Zep store filters on."""
EVENT_SCHEMA = 1

Op = Literal["remember", "edit", "forget"]


class FactRecord(BaseModel):
    """One fact inside an event: its id, field and value (stored text)."""

    id: int
    field: str
    value: str


class PreferenceEvent(BaseModel):
    """One change to a customer's remembered facts, with where it came from."""

    kind: Literal["sop_agent.preference_event"] = EVENT_KIND
    schema_version: int = EVENT_SCHEMA
    event_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    op: Op
    customer_id: str
    facts: list[FactRecord]
    session_id: str = ""
    turn: int = 0
    message: str = ""
    at: str = Field(default_factory=lambda: utcnow().isoformat())


class FactIds:
    """New fact ids: unique across processes without coordination, increasing within one.

    An id is the current time in milliseconds times 1000 plus a random offset, bumped past
    the last id handed out here; it stays below 2**53, so it survives JSON in any language.
    """

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def next(self) -> int:
        """Return a fresh id."""
        with self._lock:
            candidate = time.time_ns() // 1_000_000 * 1000 + secrets.randbelow(1000)
            self._last = max(candidate, self._last + 1)
            return self._last


def remember_event(customer_id: str, update: PreferenceUpdate, ids: FactIds, *, session_id: str = "",
                   turn: int = 0, message: str = "") -> PreferenceEvent:
    """The event that stores what one turn learned (the update must not be empty)."""
    facts = [FactRecord(id=ids.next(), field=f, value=v) for f, v in update_facts(update)]
    return PreferenceEvent(op="remember", customer_id=customer_id, facts=facts, session_id=session_id,
                           turn=turn, message=message)


def edit_event(entry: PreferenceEntry, value: str) -> PreferenceEvent:
    """The event that changes one fact's value (``value`` already normalised)."""
    return PreferenceEvent(op="edit", customer_id=entry.customer_id,
                           facts=[FactRecord(id=entry.id, field=entry.field, value=value)])


def forget_event(entry: PreferenceEntry) -> PreferenceEvent:
    """The event that removes one fact (its field and value are kept for a human reader)."""
    return PreferenceEvent(op="forget", customer_id=entry.customer_id,
                           facts=[FactRecord(id=entry.id, field=entry.field, value=entry.value)])


def parse_event(text: str) -> PreferenceEvent | None:
    """An event from its JSON text; None when the text is not an event this version understands."""
    try:
        event = PreferenceEvent.model_validate_json(text)
    except ValidationError:
        return None
    return event if event.schema_version <= EVENT_SCHEMA else None


def fold(customer_id: str, events: Iterable[PreferenceEvent]) -> list[PreferenceEntry]:
    """Replay events, oldest first, into the customer's facts (oldest first).

    Args:
        customer_id: Whose facts these are; events of other customers are ignored.
        events: The customer's events in the order they were recorded.

    Returns:
        The facts, exactly as the local store would hold them after the same calls.
    """
    entries: list[PreferenceEntry] = []
    seen: set[str] = set()
    for event in events:
        if event.customer_id != customer_id or event.event_id in seen:
            continue
        seen.add(event.event_id)
        facts = _valid(event.facts)
        if event.op == "remember":
            entries = _remember(entries, event, facts)
        elif event.op == "edit":
            for fact in facts:
                entries = _edit(entries, fact)
        else:
            gone = {f.id for f in event.facts}
            entries = [e for e in entries if e.id not in gone]
    return entries


def _valid(facts: list[FactRecord]) -> list[FactRecord]:
    """The facts whose field and value a store may hold, values normalised."""
    kept = []
    for fact in facts:
        try:
            kept.append(fact.model_copy(update={"value": normalize_fact(fact.field, fact.value)}))
        except ValueError:
            continue
    return kept


def _remember(entries: list[PreferenceEntry], event: PreferenceEvent,
              facts: list[FactRecord]) -> list[PreferenceEntry]:
    pairs: list[Fact] = [(f.field, f.value) for f in facts]
    doomed = set(superseded(entries, pairs))
    kept = [e for e in entries if e.id not in doomed]
    return kept + [PreferenceEntry(id=f.id, customer_id=event.customer_id, field=f.field, value=f.value,
                                   session_id=event.session_id, turn=event.turn, message=event.message,
                                   created_at=event.at) for f in facts]


def _edit(entries: list[PreferenceEntry], fact: FactRecord) -> list[PreferenceEntry]:
    target = next((e for e in entries if e.id == fact.id), None)
    if target is None or target.field != fact.field:
        return entries
    others = [e for e in entries if e.id != fact.id]
    doomed = set(superseded(others, [(fact.field, fact.value)]))
    return [e.model_copy(update={"value": fact.value}) if e.id == fact.id else e
            for e in entries if e.id not in doomed]
