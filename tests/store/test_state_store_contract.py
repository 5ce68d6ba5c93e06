"""Contract tests every StateStore implementation must pass.

To add an implementation (e.g. Postgres), append a factory to STORE_FACTORIES:
a callable that, given a per-test directory, opens a store; called twice with the
same directory it must open the same underlying data (used by the reopen test).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from core.shared.errors import EngineError, StateConflictError, UserInputError
from core.shared.models import SCHEMA_VERSION, Goal, Message, SessionState, Trace
from core.state.sessions import SqliteStateStore, StateStore, open_state_store

StoreFactory = Callable[[Path], StateStore]


def sqlite_file_store(directory: Path) -> StateStore:
    """A SQLite store in a file (opened through the URL, as the app does)."""
    return open_state_store(f"sqlite:///{directory / 'nested' / 'state.db'}")


def postgres_store(directory: Path) -> StateStore:
    """A PostgreSQL store: a database of its own per test directory on a real local server."""
    from tests.pg import database_url

    return open_state_store(database_url(str(directory)))


STORE_FACTORIES: list[object] = [
    pytest.param(sqlite_file_store, id="sqlite"),
    pytest.param(postgres_store, id="postgres"),
]


@pytest.fixture(params=STORE_FACTORIES)
def store_factory(request: pytest.FixtureRequest) -> StoreFactory:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def state_store(store_factory: StoreFactory, tmp_path: Path) -> Iterator[StateStore]:
    store = store_factory(tmp_path)
    yield store
    store.close()


def make_state(session_id: str = "s1", version: int = 1, **fields: object) -> SessionState:
    fields.setdefault("customer_id", "c1")
    state = SessionState(session_id=session_id, version=version, **fields)
    state.goals["g1"] = Goal(id="g1", type="buy", slots={"budget": 35000})
    state.goal_stack.append("g1")
    state.active_goal_id = "g1"
    state.history.append(Message(role="user", text="hi", turn=1))
    return state


def bump(state: SessionState) -> SessionState:
    """The next version of a state, as the engine would produce it."""
    nxt = state.model_copy(deep=True)
    nxt.version += 1
    nxt.turn += 1
    return nxt


# -- basics ------------------------------------------------------------------------


def test_implements_protocol(state_store: StateStore) -> None:
    assert isinstance(state_store, StateStore)


def test_load_unknown_returns_none(state_store: StateStore) -> None:
    assert state_store.load("nope") is None


def test_save_new_then_load_is_equal(state_store: StateStore) -> None:
    state = make_state()
    state_store.save(state, expected_version=0)
    loaded = state_store.load("s1")
    assert loaded == state
    assert loaded is not state
    assert loaded.goals["g1"].slots == {"budget": 35000}
    assert loaded.active_goal is not None and loaded.active_goal.id == "g1"


def test_update_with_correct_version(state_store: StateStore) -> None:
    state_store.save(make_state(), expected_version=0)
    loaded = state_store.load("s1")
    assert loaded is not None
    nxt = bump(loaded)
    state_store.save(nxt, expected_version=1)
    again = state_store.load("s1")
    assert again is not None and again.version == 2 and again.turn == 1


def test_state_version_must_be_expected_plus_one(state_store: StateStore) -> None:
    with pytest.raises(EngineError, match="expected_version \\+ 1"):
        state_store.save(make_state(version=3), expected_version=0)
    assert state_store.load("s1") is None


def test_trace_of_another_session_is_rejected(state_store: StateStore) -> None:
    with pytest.raises(EngineError, match="trace belongs"):
        state_store.save(make_state(), 0, Trace(session_id="other", turn=1, user="hi"))
    assert state_store.load("s1") is None


# -- optimistic locking ------------------------------------------------------------


def test_stale_write_conflicts_and_first_write_wins(state_store: StateStore) -> None:
    state_store.save(make_state(), expected_version=0)
    first, second = state_store.load("s1"), state_store.load("s1")
    assert first is not None and second is not None
    first_next, second_next = bump(first), bump(second)
    first_next.goals["g1"].slots["brand"] = "Logitech"
    second_next.goals["g1"].slots["brand"] = "Razer"

    state_store.save(first_next, expected_version=1)
    with pytest.raises(StateConflictError) as info:
        state_store.save(second_next, expected_version=1)

    assert (info.value.session_id, info.value.expected, info.value.found) == ("s1", 1, 2)
    stored = state_store.load("s1")
    assert stored is not None and stored.version == 2
    assert stored.goals["g1"].slots["brand"] == "Logitech"


def test_creating_an_existing_session_conflicts(state_store: StateStore) -> None:
    state_store.save(make_state(), expected_version=0)
    with pytest.raises(StateConflictError) as info:
        state_store.save(make_state(customer_id="intruder"), expected_version=0)
    assert info.value.found == 1
    stored = state_store.load("s1")
    assert stored is not None and stored.customer_id == "c1"


def test_updating_a_missing_session_conflicts_with_found_none(state_store: StateStore) -> None:
    with pytest.raises(StateConflictError) as info:
        state_store.save(make_state(version=4), expected_version=3)
    assert (info.value.expected, info.value.found) == (3, None)
    assert state_store.load("s1") is None


# -- copies ------------------------------------------------------------------------


def test_save_does_not_mutate_the_state(state_store: StateStore) -> None:
    state = make_state()
    before = state.model_dump()
    state_store.save(state, 0, Trace(session_id="s1", turn=1, user="hi"))
    assert state.model_dump() == before


def test_load_returns_an_independent_copy(state_store: StateStore) -> None:
    state = make_state()
    state_store.save(state, expected_version=0)
    loaded = state_store.load("s1")
    assert loaded is not None
    loaded.goals["g1"].slots["budget"] = 1
    loaded.history.clear()
    state.goal_stack.clear()  # mutating the saved original must not matter either

    fresh = state_store.load("s1")
    assert fresh is not None and fresh is not loaded
    assert fresh.goals["g1"].slots["budget"] == 35000
    assert len(fresh.history) == 1
    assert fresh.goal_stack == ["g1"]


# -- traces ------------------------------------------------------------------------


def test_trace_is_stored_with_the_save(state_store: StateStore) -> None:
    assert state_store.traces("s1") == []
    assert state_store.last_trace("s1") is None
    state = make_state(turn=1)
    trace1 = Trace(session_id="s1", turn=1, user="hi", reply="hello", decisions=["greet"])
    state_store.save(state, 0, trace1)
    trace2 = Trace(session_id="s1", turn=2, user="mouse?", reply="sure")
    state_store.save(bump(state), 1, trace2)

    traces = state_store.traces("s1")
    assert traces == [trace1.model_dump(mode="json"), trace2.model_dump(mode="json")]
    assert state_store.last_trace("s1") == trace2.model_dump(mode="json")
    assert Trace.model_validate(traces[0]) == trace1
    assert state_store.traces("other") == []


def test_conflicting_save_does_not_store_its_trace(state_store: StateStore) -> None:
    state = make_state(turn=1)
    state_store.save(state, 0, Trace(session_id="s1", turn=1, user="hi"))
    winner = bump(state)
    state_store.save(winner, 1, Trace(session_id="s1", turn=2, user="winner"))
    loser = bump(state)
    with pytest.raises(StateConflictError):
        state_store.save(loser, 1, Trace(session_id="s1", turn=2, user="loser"))
    with pytest.raises(StateConflictError):  # a new turn number, still stale
        state_store.save(bump(state), 1, Trace(session_id="s1", turn=3, user="stale"))

    assert [t["user"] for t in state_store.traces("s1")] == ["hi", "winner"]
    last = state_store.last_trace("s1")
    assert last is not None and last["user"] == "winner"


def test_delete_session_removes_state_and_traces(state_store: StateStore) -> None:
    state_store.save(make_state(), 0, Trace(session_id="s1", turn=1, user="hi"))
    state_store.save(make_state("s2"), 0)
    state_store.delete_session("s1")
    state_store.delete_session("never-existed")
    assert state_store.load("s1") is None
    assert state_store.traces("s1") == []
    assert [row["session_id"] for row in state_store.list_sessions()] == ["s2"]
    state_store.save(make_state(), expected_version=0)  # the id can be reused


# -- listing -----------------------------------------------------------------------


def test_list_sessions_newest_first(state_store: StateStore) -> None:
    assert state_store.list_sessions() == []
    for sid in ("a", "b", "c"):
        state_store.save(make_state(sid), expected_version=0)
    loaded_a = state_store.load("a")
    assert loaded_a is not None
    state_store.save(bump(loaded_a), expected_version=1)  # "a" is now the newest

    rows = state_store.list_sessions()
    assert [row["session_id"] for row in rows] == ["a", "c", "b"]
    assert set(rows[0]) == {"session_id", "customer_id", "version", "updated_at", "handoff_turn"}
    assert rows[0]["handoff_turn"] is None
    handed = state_store.load("b")
    assert handed is not None
    handed.handoff_turn = 3  # the session went to a person at its third turn
    state_store.save(bump(handed), expected_version=1)
    assert next(r["handoff_turn"] for r in state_store.list_sessions() if r["session_id"] == "b") == 3
    assert rows[0]["customer_id"] == "c1" and rows[0]["version"] == 2
    assert isinstance(rows[0]["updated_at"], str)
    stamps = [row["updated_at"] for row in rows]
    assert stamps == sorted(stamps, reverse=True) and len(set(stamps)) == 3


# -- schema ------------------------------------------------------------------------


def test_schema_version_is_kept(state_store: StateStore) -> None:
    state_store.save(make_state(), expected_version=0)
    loaded = state_store.load("s1")
    assert loaded is not None and loaded.schema_version == SCHEMA_VERSION


def test_newer_schema_version_is_refused_on_load(state_store: StateStore) -> None:
    state_store.save(make_state(schema_version=SCHEMA_VERSION + 1), expected_version=0)
    with pytest.raises(EngineError, match=f"schema_version {SCHEMA_VERSION + 1}"):
        state_store.load("s1")


# -- concurrency and durability ----------------------------------------------------


def test_concurrent_increments_lose_no_update(state_store: StateStore) -> None:
    threads_n, increments = 4, 15
    state_store.save(make_state(), expected_version=0)
    barrier = threading.Barrier(threads_n)
    conflicts: list[int] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            barrier.wait()
            for _ in range(increments):
                while True:
                    current = state_store.load("s1")
                    assert current is not None
                    nxt = bump(current)
                    nxt.goals["g1"].slots["count"] = current.goals["g1"].slots.get("count", 0) + 1
                    try:
                        state_store.save(nxt, expected_version=current.version)
                        break
                    except StateConflictError:
                        conflicts.append(1)
        except BaseException as exc:  # surfaced in the main thread below
            errors.append(exc)

    workers = [threading.Thread(target=worker) for _ in range(threads_n)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join(timeout=60)
    assert not errors, errors
    final = state_store.load("s1")
    assert final is not None
    total = threads_n * increments
    assert final.version == 1 + total
    assert final.turn == total
    assert final.goals["g1"].slots["count"] == total


def test_file_store_survives_reopen(store_factory: StoreFactory, tmp_path: Path) -> None:
    store = store_factory(tmp_path)
    try:
        store.save(make_state(), 0, Trace(session_id="s1", turn=1, user="hi"))
    finally:
        store.close()
    reopened = store_factory(tmp_path)
    try:
        loaded = reopened.load("s1")
        assert loaded is not None and loaded.goals["g1"].slots == {"budget": 35000}
        assert [t["user"] for t in reopened.traces("s1")] == ["hi"]
        reopened.save(bump(loaded), expected_version=1)
    finally:
        reopened.close()


def test_close_is_idempotent(store_factory: StoreFactory, tmp_path: Path) -> None:
    store = store_factory(tmp_path)
    store.close()
    store.close()


# -- SQLite specifics (not part of the contract) -----------------------------------


def test_open_state_store_memory_and_parent_dirs(tmp_path: Path) -> None:
    store = open_state_store("sqlite:///:memory:")
    try:
        assert isinstance(store, SqliteStateStore)
        store.save(make_state(), expected_version=0)
        assert store.load("s1") is not None
    finally:
        store.close()
    target = tmp_path / "a" / "b" / "state.db"
    file_store = open_state_store(f"sqlite:///{target}")
    file_store.close()
    assert target.exists()


def test_open_state_store_relative_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = open_state_store("sqlite:///data/rel.db")
    store.close()
    assert (tmp_path / "data" / "rel.db").exists()


@pytest.mark.parametrize(
    "url", ["mysql://db/state", "state.db", "sqlite://state.db", "sqlite:///"]
)
def test_open_state_store_rejects_bad_urls(url: str) -> None:
    with pytest.raises(UserInputError, match="URL"):
        open_state_store(url)


def test_open_state_store_hides_passwords() -> None:
    with pytest.raises(UserInputError) as info:
        open_state_store("mysql://bob:s3cret@db:5432/state")
    assert "s3cret" not in str(info.value)
    assert "mysql://bob:***@db:5432/state" in str(info.value)


def test_an_unreachable_postgres_fails_at_once_naming_it_without_the_password() -> None:
    from core.state.sessions.pgserver import free_port

    url = f"postgresql://bob:s3cret@127.0.0.1:{free_port()}/state"  # nothing listens there
    with pytest.raises(EngineError) as info:
        open_state_store(url)
    assert "s3cret" not in str(info.value)
    assert f"postgresql://bob:***@127.0.0.1:{url.split(':')[3]}" in str(info.value)


def test_sqlite_uses_wal(tmp_path: Path) -> None:
    store = SqliteStateStore(tmp_path / "wal.db")
    try:
        mode = store._connection().execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"
    finally:
        store.close()


def test_closed_store_raises_engine_error(tmp_path: Path) -> None:
    store = SqliteStateStore(tmp_path / "closed.db")
    store.close()
    with pytest.raises(EngineError, match="closed"):
        store.load("s1")


# -- retired goals -------------------------------------------------------------------


def test_retired_goals_are_saved_beside_the_session_and_left_out_of_load(state_store: StateStore) -> None:
    from core.state.sessions.base import whole_session, with_retired

    state = make_state()
    state_store.save(state, expected_version=0)
    nxt = bump(state_store.load("s1"))  # type: ignore[arg-type]
    old = nxt.goals["g1"]
    nxt.goals["g2"] = Goal(id="g2", type="buy", slots={"budget": 9000})
    nxt.retired["g1"] = nxt.goals.pop("g1")
    nxt.goal_stack, nxt.active_goal_id = ["g2"], "g2"
    state_store.save(nxt, expected_version=1)
    hot = state_store.load("s1")
    assert hot is not None and list(hot.goals) == ["g2"] and hot.retired == {}
    assert [g.id for g in state_store.retired_goals("s1")] == ["g1"]
    assert state_store.retired_goals("s1")[0] == old
    whole = whole_session(state_store, "s1")
    assert whole is not None and list(whole.goals) == ["g1", "g2"] and whole.goals["g1"].slots == {"budget": 35000}
    assert with_retired(hot, []) is hot
    assert state_store.retired_goals("nope") == []


def test_a_conflicting_save_retires_nothing(state_store: StateStore) -> None:
    state_store.save(make_state(), expected_version=0)
    stale = bump(state_store.load("s1"))  # type: ignore[arg-type]
    state_store.save(bump(state_store.load("s1")), expected_version=1)  # type: ignore[arg-type]
    stale.retired["g1"] = stale.goals.pop("g1")
    with pytest.raises(StateConflictError):
        state_store.save(stale, expected_version=1)
    assert state_store.retired_goals("s1") == []


def test_deleting_a_session_deletes_its_retired_goals(state_store: StateStore) -> None:
    state_store.save(make_state(), expected_version=0)
    nxt = bump(state_store.load("s1"))  # type: ignore[arg-type]
    nxt.retired["g1"] = nxt.goals.pop("g1")
    nxt.goal_stack, nxt.active_goal_id = [], None
    state_store.save(nxt, expected_version=1)
    state_store.delete_session("s1")
    assert state_store.retired_goals("s1") == []


# -- side-effecting runs -------------------------------------------------------------


def test_runs_are_filed_by_turn_id_and_a_cut_off_turn_is_settled_under_its_own(state_store: StateStore) -> None:
    from core.shared.models import ToolCall

    state = make_state(turn=1)
    state_store.save(state, 0, Trace(session_id="s1", turn=1, user="hi", turn_id="t1"))
    # turn 2 runs two changes and is cut off (never commits): one returned, one never did
    state_store.note_side_effect("s1", 2, "k-done", "desk.open", {"issue": "a"}, turn_id="cut")
    state_store.side_effect_outcome("s1", "cut", "k-done", "done")
    state_store.note_side_effect("s1", 2, "k-open", "desk.open", {"issue": "b"}, turn_id="cut")
    assert [r["key"] for r in state_store.unconfirmed_side_effects("s1")] == ["k-done", "k-open"]
    assert state_store.unsettled_side_effect_sessions() == ["s1"]
    # the next turn (also number 2) opens the session, runs a change of its own and commits
    settled = state_store.settle_side_effects("s1", "next")
    assert [(r["key"], r["state"], r["turn_state"]) for r in settled] == \
        [("k-done", "done", "lost"), ("k-open", "unknown", "lost")]
    state_store.note_side_effect("s1", 2, "k-next", "desk.open", {"issue": "c"}, turn_id="next")
    call = ToolCall(tool="desk.open", args={"issue": "c"}, agent="desk", key="k-next", side_effects=True)
    state_store.save(bump(state), 1, Trace(session_id="s1", turn=2, user="c", turn_id="next", tool_calls=[call]))
    runs = state_store.side_effect_runs("s1")
    assert [(r["turn"], r["turn_id"], r["key"], r["state"], r["turn_state"]) for r in runs] == [
        (2, "cut", "k-done", "done", "lost"), (2, "cut", "k-open", "unknown", "lost"),
        (2, "next", "k-next", "done", "committed")]  # the cut-off runs are not the next turn's
    assert [r["key"] for r in state_store.side_effects_to_check("s1")] == ["k-done", "k-open"]
    assert state_store.unconfirmed_side_effects("s1") == [] and state_store.unsettled_side_effect_sessions() == []
    assert [r["key"] for r in state_store.side_effect_runs("s1", 2)] == ["k-done", "k-open", "k-next"]
    assert state_store.side_effect_runs("s1", 1) == []


def test_a_run_is_filed_under_the_turn_its_attempt_committed_as(state_store: StateStore) -> None:
    state = make_state(turn=1)
    state_store.save(state, 0, Trace(session_id="s1", turn=1, user="hi", turn_id="t1"))
    state_store.note_side_effect("s1", 2, "k", "desk.open", {"issue": "a"}, turn_id="t2")  # first attempt: turn 2
    state_store.side_effect_outcome("s1", "t2", "k", "done")
    later = bump(bump(state))  # another turn committed first; the re-run is turn 3
    state_store.save(bump(state), 1, Trace(session_id="s1", turn=2, user="x", turn_id="other"))
    state_store.save(later, 2, Trace(session_id="s1", turn=3, user="a", turn_id="t2"))
    assert [(r["turn"], r["turn_state"]) for r in state_store.side_effect_runs("s1")] == [(3, "committed")]


def test_a_sqlite_store_written_before_runs_had_turn_ids_keeps_them(tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE side_effects (key TEXT PRIMARY KEY, session_id TEXT NOT NULL, turn INTEGER NOT NULL, "
                     "tool TEXT NOT NULL, args TEXT NOT NULL, at TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'intended')")
        conn.executemany("INSERT INTO side_effects VALUES (?, 's1', ?, 'desk.open', '{}', ?, ?)",
                         [("a", 1, "2026-01-01T00:00:01", "done"), ("b", 2, "2026-01-01T00:00:02", "unconfirmed"),
                          ("c", 3, "2026-01-01T00:00:03", "intended")])
    store = SqliteStateStore(db)
    try:
        runs = store.side_effect_runs("s1")
        assert [(r["key"], r["turn"], r["state"], r["turn_state"]) for r in runs] == [
            ("a", 1, "done", "committed"), ("b", 2, "unknown", "lost"), ("c", 3, "started", "running")]
        assert [r["key"] for r in store.settle_side_effects("s1", "now")] == ["c"]
        assert [r["key"] for r in store.side_effects_to_check("s1")] == ["b", "c"]
    finally:
        store.close()
    reopened = SqliteStateStore(db)  # the move happens once
    assert len(reopened.side_effect_runs("s1")) == 3
    reopened.close()
