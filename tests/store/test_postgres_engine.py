"""The engine on PostgreSQL (``SOP_STATE_URL=postgresql://…``): sessions, traces and preferences in the
database, shared by every engine on it; the turn lock held across engines; the schema migrated once."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from core import build_orchestrator
from core.engine.build import Workspace
from core.shared.errors import SessionBusyError
from core.state.sessions import open_state_store
from core.state.sessions.postgres import MIGRATIONS, PostgresStateStore, migrate
from tests.pg import database_url

ROOT = Path(__file__).resolve().parents[2]


def test_two_engines_on_one_database_share_sessions_and_preferences(demo_ws: Workspace,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    url = database_url("two-engines")
    monkeypatch.setenv("SOP_STATE_URL", url)
    first = build_orchestrator(ROOT, loaded=demo_ws)
    second = build_orchestrator(ROOT, loaded=demo_ws)
    try:
        assert isinstance(first.store, PostgresStateStore)
        assert "PostgreSQL" in first.memory.label
        first.handle_message("s1", "I like Logitech, no Razer please", customer_id="cust-pg")
        first.handle_message("s1", "Recommend a gaming mouse", customer_id="cust-pg")
        state = second.load_state("s1")  # the other engine (another worker, another machine) sees the turns
        assert state is not None and state.version == 2 and state.active_goal is not None
        second.handle_message("s1", "under 2000 baht", customer_id="cust-pg")
        assert [t["turn"] for t in first.store.traces("s1")] == [1, 2, 3]
        prefs = second.preferences("cust-pg")  # learned by the first engine
        assert prefs["preferred_brands"] == ["Logitech"] and prefs["disliked_brands"] == ["Razer"]
    finally:
        first.close()
        second.close()


def test_the_turn_lock_holds_across_connections_and_a_holder_that_dies_releases_it() -> None:
    url = database_url("locks")
    a, b = open_state_store(url), open_state_store(url)
    try:
        order: list[str] = []
        held = threading.Event()

        def first() -> None:
            with a.session_lock("s1", 1.0):
                held.set()
                time.sleep(0.3)
                order.append("first done")

        worker = threading.Thread(target=first)
        worker.start()
        held.wait(5)
        with b.session_lock("s1", 5.0) as waited:
            order.append("second runs")
        worker.join()
        assert order == ["first done", "second runs"] and waited > 0
        with a.session_lock("s1", 1.0):
            with pytest.raises(SessionBusyError):
                with b.session_lock("s1", 0.2):
                    pass
            with b.session_lock("another session", 0.0):
                pass
    finally:
        a.close()
        b.close()
    c = open_state_store(url)  # the pools are closed: their locks went with their connections
    try:
        with c.session_lock("s1", 0.5) as waited:
            assert waited < 0.5
    finally:
        c.close()


def test_the_schema_is_migrated_once_by_engines_starting_together() -> None:
    import psycopg

    url = database_url("migrations")
    opened: list[PostgresStateStore] = []
    errors: list[BaseException] = []

    def start() -> None:
        try:
            opened.append(PostgresStateStore(url))
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in opened:
        s.close()
    assert not errors and len(opened) == 6
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()
        assert [r[0] for r in rows] == [v for v, _ in MIGRATIONS]
        assert migrate(conn) == []  # nothing left to apply


def test_a_playground_on_postgres_keeps_sessions_and_preferences_beside_the_api_engines(
        ws_copy: Path, embedder: object) -> None:
    """A playground process given the database (not through the environment) and an engine of another
    process on it: one truth for sessions and for the customer's preferences."""
    from core.playground.service import Playground

    url = database_url("playground-and-api")
    play = Playground(ws_copy, embedder=embedder, state_url=url)  # type: ignore[arg-type]
    other = build_orchestrator(ws_copy, store=open_state_store(url), loaded=play.workspace)
    try:
        assert "PostgreSQL" in play.memory.label
        play.chat.send("desk-1", "I like Logitech, no Razer please", customer_id="cust-play")
        play.chat.send("desk-1", "Recommend a gaming mouse", customer_id="cust-play")
        state = other.load_state("desk-1")
        assert state is not None and state.version == 2 and state.active_goal is not None
        assert other.preferences("cust-play")["preferred_brands"] == ["Logitech"]
    finally:
        other.close()
        other.store.close()
        other.memory.close()
        play.close()
