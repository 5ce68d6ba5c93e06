"""One turn at a time per session, across threads and processes (core.state.sessions.locks), and what a
customer sees when their message cannot be taken: a polite sentence, never an exception."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from core import build_orchestrator
from core.bench.processes import run_processes, write_workspace
from core.language.replies import say
from core.shared.errors import SessionBusyError
from core.state.sessions import open_state_store
from core.state.sessions.locks import FileSessionLocks, LocalSessionLocks

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("make", [lambda tmp: FileSessionLocks(tmp / "locks"), lambda tmp: LocalSessionLocks()])
def test_a_second_turn_waits_for_the_first_and_gives_up_after_its_wait(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    locks = make(tmp_path)
    order: list[str] = []
    held = threading.Event()

    def first() -> None:
        with locks.hold("s1", 1.0):
            held.set()
            time.sleep(0.3)
            order.append("first done")

    worker = threading.Thread(target=first)
    worker.start()
    held.wait(2)
    with locks.hold("s1", 5.0) as waited:
        order.append("second runs")
    worker.join()
    assert order == ["first done", "second runs"] and waited > 0  # it ran only once the first was done
    with locks.hold("other session", 0.0):  # another session is never held up
        pass
    with locks.hold("s1", 1.0):
        with pytest.raises(SessionBusyError, match="'s1' is busy"):
            with locks.hold("s1", 0.2):
                pass


def test_a_killed_holder_never_leaves_the_session_locked(tmp_path: Path) -> None:
    locks = FileSessionLocks(tmp_path / "locks")
    code = ("import sys, time; sys.path.insert(0, sys.argv[1]);"
            " from core.state.sessions.locks import FileSessionLocks\n"
            "with FileSessionLocks(sys.argv[2]).hold('s1', 5):\n    print('held', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(ROOT), str(tmp_path / "locks")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(SessionBusyError):
            with locks.hold("s1", 0.2):
                pass
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(10)
        with locks.hold("s1", 2.0) as waited:
            assert waited < 2.0
    finally:
        holder.kill()
        holder.wait(10)
        if holder.stdout is not None:
            holder.stdout.close()


def test_a_deleted_sessions_lock_file_goes_and_a_turn_waiting_on_it_still_excludes_the_next(tmp_path: Path) -> None:
    store = open_state_store(f"sqlite:///{tmp_path / 'sessions.sqlite'}")
    locks = FileSessionLocks(tmp_path / "sessions.sqlite.locks")
    with store.session_lock("gone", 1.0):
        pass
    assert locks.path("gone").exists()
    store.delete_session("gone")
    assert not locks.path("gone").exists()  # deleting sessions leaves no lock files behind

    inside: list[str] = []
    overlaps: list[list[str]] = []
    first_in = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with locks.hold("s1", 5.0):
            inside.append("holder")
            first_in.set()
            release.wait(5)
            inside.remove("holder")

    def waiter() -> None:  # opened the file before it was removed, and locks it after
        with locks.hold("s1", 5.0):
            inside.append("waiter")
            if inside != ["waiter"]:
                overlaps.append(list(inside))
            time.sleep(0.1)
            inside.remove("waiter")

    threads = [threading.Thread(target=holder)]
    threads[0].start()
    first_in.wait(2)
    threads.append(threading.Thread(target=waiter))
    threads[1].start()
    time.sleep(0.05)
    remover = threading.Thread(target=lambda: locks.remove("s1"))
    remover.start()
    release.set()
    for t in [*threads, remover]:
        t.join(10)
    with locks.hold("s1", 1.0):  # a newcomer gets a fresh file and is alone
        assert inside == []
    assert overlaps == [] and not any(t.is_alive() for t in threads)
    store.close()


def test_a_message_that_cannot_wait_gets_a_polite_sentence_and_an_incident(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    store = open_state_store(f"sqlite:///{tmp_path}/s.sqlite")
    orch = build_orchestrator(ws, store=store)
    orch.settings.turn_wait_s = 0.2
    orch.handle_message("s1", "I need to open a ticket")
    with store.session_lock("s1", 1.0):  # another turn of the session is still running
        reply = orch.handle_message("s1", "the printer is jammed")
    assert reply == say("busy", "en")
    state = orch.load_state("s1")
    assert state is not None and state.turn == 1  # nothing changed
    incidents = store.incidents("s1")
    assert [i["kind"] for i in incidents] == ["busy"] and incidents[0]["detail"]["message"] == "the printer is jammed"
    assert "Ticket" in orch.handle_message("s1", "the printer is jammed")  # sent again, it is taken
    store.close()


def test_four_processes_on_one_session_lose_nothing_and_run_each_side_effect_once() -> None:
    result = run_processes(4, conversations=6, same_session=True)
    assert result["errors"] == 0, result["error_text"]
    assert result["lost"] == 0 and result["resend"] == 0
    assert result["taken"] == result["sent"] == 48
    # the four conversations interleave on one session, so how many tickets they open depends on the order the
    # messages arrive in; every ticket a customer was told of ran once, with a committed record, and no other ran
    assert result["tool_runs"] == result["tickets_told"] > 0 and result["orphans"] == 0
