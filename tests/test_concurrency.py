"""The turn gate: turns compute a few at a time, first come first served, and a turn waiting on a tool
(or another service) lets the next one compute meanwhile."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from core.shared.concurrency import TurnGate, holding, waiting
from core.tools.base import ToolSpec
from core.tools.gateway import ToolGateway
from core.workspace.config import AgentDecl
from core.workspace.params import Param


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


async def _run_all(gate: TurnGate, jobs: list[Any], stagger_s: float = 0.005) -> list[Any]:
    tasks = []
    for job in jobs:
        tasks.append(asyncio.ensure_future(gate.run(job)))
        await asyncio.sleep(stagger_s)  # they arrive in this order
    return list(await asyncio.gather(*tasks))


def test_one_slot_runs_turns_one_at_a_time_in_arrival_order() -> None:
    events: list[tuple[str, int]] = []
    lock = threading.Lock()

    def turn(i: int) -> Any:
        def work() -> int:
            with lock:
                events.append(("start", i))
            _spin(0.02)
            with lock:
                events.append(("end", i))
            return i
        return work

    gate = TurnGate(1)
    assert asyncio.run(_run_all(gate, [turn(i) for i in range(6)])) == list(range(6))
    assert events == [e for i in range(6) for e in (("start", i), ("end", i))]  # never two at once, in order
    assert gate.computing == 0 and gate.queued == 0


def test_two_slots_let_two_turns_compute_together() -> None:
    running, peak = [0], [0]
    lock = threading.Lock()

    def work() -> None:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1

    asyncio.run(_run_all(TurnGate(2), [work] * 6))
    assert peak[0] == 2


def test_a_turn_waiting_gives_its_slot_to_the_next_and_queues_again_after() -> None:
    order: list[str] = []
    released = threading.Event()

    def waits() -> None:
        order.append("A computes")
        with waiting():
            order.append("A waits")
            assert released.wait(5)
        order.append("A computes again")

    def other() -> None:
        order.append("B computes")
        released.set()

    asyncio.run(_run_all(TurnGate(1), [waits, other]))
    assert order == ["A computes", "A waits", "B computes", "A computes again"]


def test_a_turn_back_from_its_wait_goes_ahead_of_turns_that_came_after_it() -> None:
    order: list[str] = []
    b_started = threading.Event()

    def a() -> None:
        order.append("A computes")
        with waiting():
            assert b_started.wait(5)
            time.sleep(0.03)  # back while B still computes and C waits in line
        order.append("A finishes")

    def b() -> None:
        b_started.set()
        _spin(0.15)
        order.append("B finishes")

    def c() -> None:
        order.append("C computes")

    asyncio.run(_run_all(TurnGate(1), [a, b, c]))
    assert order == ["A computes", "B finishes", "A finishes", "C computes"]


def test_waiting_outside_a_gated_turn_does_nothing() -> None:
    with waiting():
        pass  # no gate, no loop: nothing to give up


def test_a_failing_turn_frees_its_slot() -> None:
    def boom() -> None:
        raise RuntimeError("tool crashed")

    async def main() -> tuple[str, int]:
        gate = TurnGate(1)
        with pytest.raises(RuntimeError, match="tool crashed"):
            await gate.run(boom)
        return await gate.run(lambda: "next"), gate.computing

    assert asyncio.run(main()) == ("next", 0)


def test_a_slow_workspace_tool_does_not_hold_up_other_sessions() -> None:
    """With one slot, a turn whose tool takes a while lets the other sessions' turns through."""
    class SlowLookup:
        spec = ToolSpec("desk.lookup", "waits on a remote system", [Param("q")], timeout_s=5)

        def run(self, args: dict[str, Any]) -> Any:
            time.sleep(0.6)
            return {"found": args["q"]}

    gateway = ToolGateway({"desk.lookup": SlowLookup()}, {"desk": AgentDecl("desk", ["desk.*"], ["desk.lookup"])})
    finished: dict[str, float] = {}
    t0 = time.perf_counter()

    def slow_turn() -> Any:
        call = gateway.call("desk", "desk.lookup", {"q": "order 7"})
        finished["slow"] = time.perf_counter() - t0
        return call.result

    def quick_turn(name: str) -> Any:
        def work() -> str:
            _spin(0.01)
            finished[name] = time.perf_counter() - t0
            return name
        return work

    results = asyncio.run(_run_all(TurnGate(1), [slow_turn, quick_turn("b"), quick_turn("c")]))
    assert results == [{"found": "order 7"}, "b", "c"]
    assert finished["b"] < finished["slow"] and finished["c"] < finished["slow"]  # not behind the slow tool


def test_a_gate_needs_a_slot() -> None:
    with pytest.raises(ValueError, match="at least one slot"):
        TurnGate(0)


@pytest.mark.parametrize("kind", ["local", "file"])
def test_a_turn_waiting_for_its_session_lets_the_holder_finish(kind: str, tmp_path: Any) -> None:
    """Two messages to one session in one worker with one slot: the first holds the session while its
    tool runs (slot given up), the second takes the slot and waits for the session, giving the slot up
    again, so the first can finish; nothing waits out the lock's deadline."""
    from core.state.sessions.locks import FileSessionLocks, LocalSessionLocks

    locks: Any = LocalSessionLocks() if kind == "local" else FileSessionLocks(tmp_path)
    tool_running = threading.Event()
    order: list[str] = []

    def first() -> str:
        with locks.hold("s1", 5.0):
            order.append("first holds the session")
            with waiting():  # its tool
                tool_running.set()
                time.sleep(0.05)
            order.append("first finishes")
        return "first"

    def second() -> str:
        assert tool_running.wait(5)
        with locks.hold("s1", 5.0) as waited:
            order.append("second holds the session")
        return f"second waited {waited < 5}"

    assert asyncio.run(_run_all(TurnGate(1), [first, second])) == ["first", "second waited True"]
    assert order == ["first holds the session", "first finishes", "second holds the session"]


def test_a_lock_kept_across_a_wait_is_waited_for_without_the_slot() -> None:
    """A customer's lock held by a turn that waits on a remote service: another turn wanting the same lock
    waits without its slot, so the holder gets the slot back and finishes."""
    customer = threading.RLock()
    waiting_remote = threading.Event()
    order: list[str] = []

    def first() -> None:
        with holding(customer):
            with waiting():  # the remote call
                waiting_remote.set()
                time.sleep(0.05)
            order.append("first done")

    def second() -> None:
        assert waiting_remote.wait(5)
        with holding(customer):
            with holding(customer):  # re-entrant for its holder
                order.append("second done")

    asyncio.run(asyncio.wait_for(_run_all(TurnGate(1), [first, second]), 10))
    assert order == ["first done", "second done"]


def test_a_turn_cancelled_while_in_line_leaves_it_and_the_slot_goes_on() -> None:
    """A request given up while it waits for a slot (its client went away) leaves the line."""
    async def main() -> tuple[list[str], int, int]:
        gate = TurnGate(1)
        order: list[str] = []
        first = asyncio.ensure_future(gate.run(lambda: (_spin(0.1), order.append("first"))))
        await asyncio.sleep(0.01)
        gone = asyncio.ensure_future(gate.run(lambda: order.append("gone")))
        after = asyncio.ensure_future(gate.run(lambda: order.append("after")))
        await asyncio.sleep(0.01)
        in_line = gate.queued
        gone.cancel()
        await asyncio.gather(first, after)
        with pytest.raises(asyncio.CancelledError):
            await gone
        return order, in_line, gate.queued + gate.computing

    order, in_line, left = asyncio.run(main())
    assert order == ["first", "after"] and in_line == 2 and left == 0
