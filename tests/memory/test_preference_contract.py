"""Contract tests every PreferenceMemory implementation must pass: one suite, run on every store.

To add an implementation, add a builder to ``memory_factory``: it returns a callable that,
given a per-test directory, opens a memory; called twice with the same directory it must
open the same underlying data (used by the persistence test). The Zep store runs against
the local fake Zep server (``tests/memory/zep_fake.py``); each open gets a new, empty local
cache, so the persistence test proves that the facts live in Zep, not on this machine.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from core.shared.errors import UserInputError
from core.state.memory import (
    LocalPreferenceMemory,
    PreferenceEntry,
    PreferenceMemory,
    PreferenceSummary,
    PreferenceUpdate,
    ZepPreferenceMemory,
)
from tests.memory.zep_fake import FakeZep

MemoryFactory = Callable[[Path], PreferenceMemory]


def local_memory(directory: Path) -> PreferenceMemory:
    return LocalPreferenceMemory(directory / "mem" / "preferences.db")


def zep_memory(fake: FakeZep) -> MemoryFactory:
    opened = itertools.count()

    def open_zep(directory: Path) -> PreferenceMemory:  # a new app instance each time: same Zep, empty cache
        return ZepPreferenceMemory("test-key", base_url=fake.url,
                                   cache_path=directory / "zep" / f"cache-{next(opened)}.sqlite")

    return open_zep


def postgres_memory(directory: Path) -> PreferenceMemory:
    """The preferences table of a PostgreSQL state database (a real local server, a database per test)."""
    from core.state.memory.postgres import PostgresPreferenceMemory
    from tests.pg import database_url

    return PostgresPreferenceMemory(database_url(str(directory)))


@pytest.fixture(params=["local", "zep", "postgres"])
def memory_factory(request: pytest.FixtureRequest) -> MemoryFactory:
    if request.param == "zep":
        return zep_memory(request.getfixturevalue("fake_zep"))
    if request.param == "postgres":
        return postgres_memory
    return local_memory


@pytest.fixture
def memory(memory_factory: MemoryFactory, tmp_path: Path) -> Iterator[PreferenceMemory]:
    mem = memory_factory(tmp_path)
    yield mem
    mem.close()


def facts(mem: PreferenceMemory, customer: str = "c1") -> list[tuple[str, str]]:
    return [(e.field, e.value) for e in mem.entries(customer)]


def entry_for(mem: PreferenceMemory, field: str, customer: str = "c1") -> PreferenceEntry:
    return next(e for e in mem.entries(customer) if e.field == field)


# -- basics ------------------------------------------------------------------------


def test_implements_protocol(memory: PreferenceMemory) -> None:
    assert isinstance(memory, PreferenceMemory)
    assert memory.label  # says which store answered (shown in the playground)


def test_nothing_is_pending_when_the_store_is_up(memory: PreferenceMemory) -> None:
    assert memory.retry_pending("c1") == 0
    memory.write("c1", PreferenceUpdate(preferred_brands=["Logitech"]))
    assert memory.retry_pending("c1") == 0


def test_unknown_customer_has_empty_summary(memory: PreferenceMemory) -> None:
    summary = memory.summary("nobody")
    assert isinstance(summary, PreferenceSummary)
    assert summary.is_empty()
    assert summary.as_text() == ""
    assert memory.entries("nobody") == []


def test_empty_update_is_a_no_op(memory: PreferenceMemory) -> None:
    memory.write("c1", PreferenceUpdate(preferred_brands=["Logitech"]), turn=1)
    before = memory.entries("c1")
    memory.write("c1", PreferenceUpdate(), session_id="s9", turn=9, message="ok")
    memory.write("c1", PreferenceUpdate(preferred_brands=["  ", ""], communication_style=" "))
    assert memory.entries("c1") == before
    memory.write("c2", PreferenceUpdate())
    assert memory.entries("c2") == []


def test_a_turns_update_is_written_once(memory: PreferenceMemory) -> None:
    memory.write("c1", PreferenceUpdate(preferred_brands=["Logitech"]), session_id="s1", turn=3, message="a")
    before = memory.entries("c1")
    memory.write("c1", PreferenceUpdate(preferred_brands=["Logitech"]), session_id="s1", turn=3, message="a")
    assert memory.entries("c1") == before  # the same turn again: nothing new
    memory.write("c1", PreferenceUpdate(preferred_features=["quiet"]), session_id="s1", turn=4)
    assert memory.summary("c1").preferred_features == ["quiet"]  # the next turn is written


def test_write_and_summary(memory: PreferenceMemory) -> None:
    memory.write(
        "c1",
        PreferenceUpdate(
            budget_min=30000,
            budget_max=40000,
            preferred_brands=["Logitech"],
            disliked_brands=["Razer"],
            preferred_features=["wireless", "quiet"],
            communication_style="short",
        ),
    )
    summary = memory.summary("c1")
    assert summary == PreferenceSummary(
        budget_min=30000,
        budget_max=40000,
        preferred_brands=["Logitech"],
        disliked_brands=["Razer"],
        preferred_features=["wireless", "quiet"],
        communication_style="short",
    )
    assert not summary.is_empty()
    assert summary.as_text() == (
        "budget 30,000–40,000; likes Logitech; avoids Razer; wants wireless, quiet; "
        "prefers short answers"
    )
    assert memory.summary("other").is_empty()  # customers are isolated


# -- merge rules -------------------------------------------------------------------


def test_liking_a_disliked_brand_moves_it(memory: PreferenceMemory) -> None:
    memory.write("c1", PreferenceUpdate(disliked_brands=["Razer", "HyperX"]))
    memory.write("c1", PreferenceUpdate(preferred_brands=["razer"]))
    summary = memory.summary("c1")
    assert summary.preferred_brands == ["razer"]  # the given spelling is kept
    assert summary.disliked_brands == ["HyperX"]


def test_disliking_a_liked_brand_moves_it(memory: PreferenceMemory) -> None:
    memory.write("c1", PreferenceUpdate(preferred_brands=["Logitech", "Keychron"]))
    memory.write("c1", PreferenceUpdate(disliked_brands=["LOGITECH"]))
    summary = memory.summary("c1")
    assert summary.preferred_brands == ["Keychron"]
    assert summary.disliked_brands == ["LOGITECH"]
    assert [f for f, _ in facts(memory)].count("disliked_brands") == 1


def test_features_accumulate_without_duplicates(memory: PreferenceMemory) -> None:
    memory.write("c1", PreferenceUpdate(preferred_features=["wireless", "RGB"]))
    memory.write("c1", PreferenceUpdate(preferred_features=["Wireless", "quiet", "quiet"]))
    features = memory.summary("c1").preferred_features
    assert sorted(f.casefold() for f in features) == ["quiet", "rgb", "wireless"]
    assert len(memory.entries("c1")) == 3


def test_scalars_are_replaced(memory: PreferenceMemory) -> None:
    memory.write(
        "c1", PreferenceUpdate(budget_min=1000, budget_max=2000, communication_style="short")
    )
    memory.write("c1", PreferenceUpdate(budget_max=5000, communication_style="detailed"))
    summary = memory.summary("c1")
    assert (summary.budget_min, summary.budget_max) == (1000, 5000)
    assert summary.communication_style == "detailed"
    assert [f for f, _ in facts(memory)].count("budget_max") == 1
    assert [f for f, _ in facts(memory)].count("communication_style") == 1


def test_new_budget_bound_drops_a_contradicting_old_bound(memory: PreferenceMemory) -> None:
    memory.write("c1", PreferenceUpdate(budget_min=50000))
    memory.write("c1", PreferenceUpdate(budget_max=40000))  # "actually, at most 40k"
    summary = memory.summary("c1")
    assert (summary.budget_min, summary.budget_max) == (None, 40000)
    memory.write("c1", PreferenceUpdate(budget_min=10000))  # compatible: both kept
    summary = memory.summary("c1")
    assert (summary.budget_min, summary.budget_max) == (10000, 40000)


def test_update_validation() -> None:
    assert PreferenceUpdate(communication_style=" Short ").communication_style == "short"
    assert PreferenceUpdate(preferred_brands=[" Logi ", "logi", ""]).preferred_brands == ["Logi"]
    with pytest.raises(ValidationError, match="both preferred and disliked"):
        PreferenceUpdate(preferred_brands=["Razer"], disliked_brands=["razer"])
    with pytest.raises(ValidationError, match="greater than budget_max"):
        PreferenceUpdate(budget_min=5, budget_max=1)
    with pytest.raises(ValidationError, match="communication_style"):
        PreferenceUpdate(communication_style="rude")
    with pytest.raises(ValidationError, match="budget"):
        PreferenceUpdate(budget_max=-1)


# -- provenance ----------------------------------------------------------------------


def test_each_fact_keeps_its_provenance(memory: PreferenceMemory) -> None:
    memory.write(
        "c1",
        PreferenceUpdate(budget_max=40000, preferred_brands=["Logitech"]),
        session_id="s1",
        turn=2,
        message="under 40k, I like Logitech",
    )
    memory.write(
        "c1", PreferenceUpdate(preferred_features=["wireless"]), session_id="s2", turn=5,
        message="wireless please",
    )
    entries = memory.entries("c1")
    assert [(e.field, e.value, e.session_id, e.turn, e.message) for e in entries] == [
        ("budget_max", "40000", "s1", 2, "under 40k, I like Logitech"),
        ("preferred_brands", "Logitech", "s1", 2, "under 40k, I like Logitech"),
        ("preferred_features", "wireless", "s2", 5, "wireless please"),
    ]
    assert all(e.customer_id == "c1" and e.created_at for e in entries)
    assert len({e.id for e in entries}) == 3


def test_restating_a_fact_refreshes_its_provenance(memory: PreferenceMemory) -> None:
    memory.write("c1", PreferenceUpdate(preferred_brands=["logitech"]), session_id="s1", turn=1)
    memory.write("c1", PreferenceUpdate(preferred_brands=["Logitech"]), session_id="s2", turn=4)
    (entry,) = memory.entries("c1")
    assert (entry.value, entry.session_id, entry.turn) == ("Logitech", "s2", 4)


# -- editing -------------------------------------------------------------------------


def test_forget_removes_one_fact(memory: PreferenceMemory) -> None:
    memory.write("c1", PreferenceUpdate(preferred_brands=["Logitech"], budget_max=40000))
    memory.write("c2", PreferenceUpdate(preferred_brands=["Logitech"]))
    brand = entry_for(memory, "preferred_brands")
    memory.forget("c1", brand.id)
    assert memory.summary("c1") == PreferenceSummary(budget_max=40000)
    memory.forget("c1", brand.id)  # already gone: ignored
    other = entry_for(memory, "preferred_brands", "c2")
    memory.forget("c1", other.id)  # another customer's fact is untouched
    assert memory.summary("c2").preferred_brands == ["Logitech"]


def test_set_entry_changes_one_value(memory: PreferenceMemory) -> None:
    memory.write("c1", PreferenceUpdate(budget_max=40000, preferred_brands=["Logitech"]),
                 session_id="s1", turn=3, message="m")
    budget = entry_for(memory, "budget_max")
    memory.set_entry("c1", budget.id, "45,000")
    edited = entry_for(memory, "budget_max")
    assert (edited.id, edited.value) == (budget.id, "45000")
    assert (edited.session_id, edited.turn) == ("s1", 3)
    assert memory.summary("c1").budget_max == 45000
    assert memory.summary("c1").preferred_brands == ["Logitech"]


def test_set_entry_applies_merge_rules(memory: PreferenceMemory) -> None:
    memory.write("c1", PreferenceUpdate(preferred_brands=["Logitech"], disliked_brands=["Razer"]))
    liked = entry_for(memory, "preferred_brands")
    memory.set_entry("c1", liked.id, "RAZER")
    summary = memory.summary("c1")
    assert summary.preferred_brands == ["RAZER"] and summary.disliked_brands == []


def test_set_entry_rejects_bad_values_and_unknown_ids(memory: PreferenceMemory) -> None:
    memory.write("c1", PreferenceUpdate(budget_max=40000, communication_style="short"))
    budget = entry_for(memory, "budget_max")
    style = entry_for(memory, "communication_style")
    with pytest.raises(UserInputError, match="budget_max must be a number"):
        memory.set_entry("c1", budget.id, "cheap")
    with pytest.raises(UserInputError, match="communication_style"):
        memory.set_entry("c1", style.id, "rude")
    with pytest.raises(UserInputError, match="no preference entry"):
        memory.set_entry("c1", 999_999, "x")
    with pytest.raises(UserInputError, match="no preference entry"):
        memory.set_entry("c2", budget.id, "1")  # not c2's entry
    assert memory.summary("c1") == PreferenceSummary(budget_max=40000, communication_style="short")


# -- summary shape -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("summary", "text"),
    [
        (PreferenceSummary(), ""),
        (PreferenceSummary(budget_max=40000), "budget up to 40,000"),
        (PreferenceSummary(budget_min=1500.5), "budget from 1,500.50"),
        (PreferenceSummary(preferred_brands=["A", "B"]), "likes A, B"),
        (PreferenceSummary(disliked_brands=["Razer"], communication_style="detailed"),
         "avoids Razer; prefers detailed answers"),
    ],
)
def test_as_text(summary: PreferenceSummary, text: str) -> None:
    assert summary.as_text() == text
    assert summary.is_empty() == (text == "")


def test_summary_fields() -> None:
    assert set(PreferenceSummary.model_fields) == {
        "budget_min", "budget_max", "preferred_brands", "disliked_brands",
        "preferred_features", "communication_style",
    }
    assert set(PreferenceUpdate.model_fields) == set(PreferenceSummary.model_fields)


# -- persistence -----------------------------------------------------------------------


def test_persists_across_reopen(memory_factory: MemoryFactory, tmp_path: Path) -> None:
    mem = memory_factory(tmp_path)
    try:
        mem.write("c1", PreferenceUpdate(budget_max=40000, preferred_brands=["Logitech"]),
                  session_id="s1", turn=2, message="hi")
        before = mem.entries("c1")
    finally:
        mem.close()
    reopened = memory_factory(tmp_path)
    try:
        assert reopened.entries("c1") == before
        assert reopened.summary("c1").as_text() == "budget up to 40,000; likes Logitech"
        reopened.write("c1", PreferenceUpdate(preferred_features=["wireless"]))
        assert len(reopened.entries("c1")) == 3
    finally:
        reopened.close()


def test_in_memory_database_works() -> None:
    with LocalPreferenceMemory(":memory:") as mem:
        mem.write("c1", PreferenceUpdate(preferred_brands=["Logitech"]))
        assert mem.summary("c1").preferred_brands == ["Logitech"]
