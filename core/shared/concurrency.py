"""How many turns one server process computes at once.

A turn of the offline engine is CPU work (an embedding, matching, rendering), and a process that runs
many of them on many threads at once gains nothing: the threads take turns on the interpreter lock and
the cores, every turn finishes late, and several such processes on one machine get in each other's way.
A turn that waits on the network (a workspace tool, a language model, the memory service) is another
matter: it should not hold up the turns behind it while it waits.

:class:`TurnGate` runs turns on worker threads of an asyncio server, ``slots`` at a time, first come
first served; the others wait on the event loop, not on threads. :func:`waiting` gives the slot of the
calling thread's turn up while it waits on something outside the process and takes the next free one
back when the wait is over (ahead of the turns that came after it). Code that waits on the network
wraps the wait in :func:`waiting` (a lock such a turn may hold, in :func:`holding`); outside a gated
turn both are plain.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
_held = threading.local()


class TurnGate:
    """At most ``slots`` turns computing at once, in the order they came; one gate per event loop."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError(f"a turn gate needs at least one slot; got {slots}")
        self.slots = slots
        self._free = slots
        self._line: deque[asyncio.Future[None]] = deque()

    @property
    def computing(self) -> int:
        """Turns holding a slot now."""
        return self.slots - self._free

    @property
    def queued(self) -> int:
        """Turns waiting for a slot now (read from any thread)."""
        return len(self._line)

    async def acquire(self, returning: bool = False) -> None:
        """Wait for a slot behind every turn that asked before (on the event loop); a turn ``returning``
        from a wait goes first, as it came before every turn still in line."""
        if self._free and not self._line:
            self._free -= 1
            return
        ticket: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if returning:
            self._line.appendleft(ticket)
        else:
            self._line.append(ticket)
        try:
            await ticket
        except asyncio.CancelledError:
            if ticket in self._line:  # gave up waiting: out of the line
                self._line.remove(ticket)
            elif not ticket.cancelled():  # handed a slot just as it was cancelled: pass it on
                self.release()
            raise

    def release(self) -> None:
        """Hand the slot to the first turn in line, else free it (on the event loop)."""
        if self._line:
            self._line.popleft().set_result(None)
        else:
            self._free += 1

    async def run(self, work: Callable[..., T], *args: Any) -> T:
        """``work(*args)`` on a worker thread once a slot is free; :func:`waiting` inside it gives the slot
        up meanwhile."""
        import anyio.to_thread

        loop = asyncio.get_running_loop()
        await self.acquire()
        try:
            return await anyio.to_thread.run_sync(self._hold, loop, work, args)
        finally:
            self.release()

    def _hold(self, loop: asyncio.AbstractEventLoop, work: Callable[..., T], args: tuple[Any, ...]) -> T:
        _held.slot = (self, loop)
        try:
            return work(*args)
        finally:
            _held.slot = None


@contextmanager
def waiting() -> Iterator[None]:
    """Around a wait on something outside the process: the calling thread's turn gives its slot to the
    next turn in line and takes one back afterwards (a no-op outside a gated turn)."""
    held: tuple[TurnGate, asyncio.AbstractEventLoop] | None = getattr(_held, "slot", None)
    if held is None:
        yield
        return
    gate, loop = held
    _held.slot = None
    loop.call_soon_threadsafe(gate.release)
    try:
        yield
    finally:
        asyncio.run_coroutine_threadsafe(gate.acquire(returning=True), loop).result()
        _held.slot = held


class _Lock(Protocol):
    def acquire(self, blocking: bool = ..., timeout: float = ...) -> bool: ...

    def release(self) -> None: ...


def acquire(lock: _Lock, timeout: float = -1) -> bool:
    """Take a lock that turns keep while they wait on the network: when another turn holds it, this one
    waits for it (at most ``timeout`` seconds; -1 for as long as it takes) without its compute slot, as
    the holder may need the slot to finish. Whether it was taken."""
    if lock.acquire(blocking=False):
        return True
    with waiting():
        return lock.acquire(timeout=timeout)


@contextmanager
def holding(lock: _Lock) -> Iterator[None]:
    """Hold ``lock`` for the block, taken with :func:`acquire`."""
    acquire(lock)
    try:
        yield
    finally:
        lock.release()
