"""The event log the Zep store keeps: replayed with the same merge rules, robust to odd episodes."""

from __future__ import annotations

from core.state.memory import PreferenceUpdate
from core.state.memory.events import (
    FactIds,
    FactRecord,
    PreferenceEvent,
    edit_event,
    fold,
    forget_event,
    parse_event,
    remember_event,
)


def test_fold_applies_the_merge_rules_in_order() -> None:
    ids = FactIds()
    liked = remember_event("c1", PreferenceUpdate(preferred_brands=["Logitech"], budget_max=40000), ids,
                           session_id="s1", turn=2, message="m")
    moved = remember_event("c1", PreferenceUpdate(disliked_brands=["logitech"]), ids, session_id="s2", turn=1)
    entries = fold("c1", [liked, moved])
    assert [(e.field, e.value, e.session_id, e.turn) for e in entries] == [
        ("budget_max", "40000", "s1", 2), ("disliked_brands", "logitech", "s2", 1)]
    budget = entries[0]
    entries = fold("c1", [liked, moved, edit_event(budget, "45000"), forget_event(entries[1])])
    assert [(e.id, e.value, e.session_id) for e in entries] == [(budget.id, "45000", "s1")]


def test_a_redelivered_or_foreign_event_is_applied_once_or_not_at_all() -> None:
    ids = FactIds()
    event = remember_event("c1", PreferenceUpdate(preferred_features=["quiet"]), ids)
    other = remember_event("c2", PreferenceUpdate(preferred_features=["rgb"]), ids)
    assert [e.value for e in fold("c1", [event, event, other])] == ["quiet"]


def test_invalid_facts_and_unknown_events_are_skipped() -> None:
    bad = PreferenceEvent(op="remember", customer_id="c1", facts=[
        FactRecord(id=1, field="shoe_size", value="42"), FactRecord(id=2, field="budget_max", value="cheap"),
        FactRecord(id=3, field="communication_style", value=" Short ")])
    assert [(e.field, e.value) for e in fold("c1", [bad])] == [("communication_style", "short")]
    assert parse_event("not json") is None
    assert parse_event('{"kind": "something else"}') is None
    newer = bad.model_copy(update={"schema_version": 99}).model_dump_json()
    assert parse_event(newer) is None
    assert parse_event(bad.model_dump_json()) == bad


def test_fact_ids_are_unique_increasing_and_json_safe() -> None:
    ids = FactIds()
    drawn = [ids.next() for _ in range(1000)]
    assert drawn == sorted(set(drawn)) and max(drawn) < 2**53
