"""A tool the workspace declares but that is not run here: its workspace is not trusted (a Python tool, an MCP
server's tool: core/workspace/trust.py), or what it needs cannot be reached (a Google Sheet inventory with no
copy read yet). Its calls are refused before anything is sent, with the kind ``unavailable``: the goal that
needs it ends with one sentence for the customer, and everything else in the workspace keeps working."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from core.shared.errors import ToolError
from core.tools.base import ToolSpec

UNAVAILABLE = "unavailable"
RETRY_EVERY_S = 30.0  # how often a held tool with a ``retry`` looks again for what it needs


class HeldTool:
    """A declared tool whose calls are refused, ``reason`` saying why (for the trace, never the customer).

    ``retry``, when given, looks for the tool that now works (None while it still does not): a sheet that
    answers later serves the next turn without a restart. It runs in the background, at most every
    ``RETRY_EVERY_S`` seconds, so a turn never waits on it."""

    def __init__(self, spec: ToolSpec, reason: str, retry: Callable[[], Any | None] | None = None) -> None:
        self.spec = spec
        self.reason = reason
        self.retry = retry
        self._ready: Any | None = None
        self._tried = time.monotonic()  # built right after a failed try: the next one waits its turn
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def available(self) -> bool:
        """Whether the tool works now; when it does not and a look is due, one starts in the background."""
        with self._lock:
            if self._ready is not None or self.retry is None:
                return self._ready is not None
            due = time.monotonic() - self._tried >= RETRY_EVERY_S
            if due and (self._thread is None or not self._thread.is_alive()):
                self._tried = time.monotonic()
                self._thread = threading.Thread(target=self._look, name=f"retry {self.spec.name}", daemon=True)
                self._thread.start()
            return False

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a look running in the background; whether the tool works now."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return self._ready is not None

    def _look(self) -> None:
        assert self.retry is not None
        found = self.retry()
        with self._lock:
            self._ready = found

    def run(self, args: dict[str, Any]) -> Any:
        """The working tool's answer once a look found it, else the refusal.

        Raises:
            ToolError: kind ``unavailable``, nothing sent.
        """
        ready = self._ready if self.available() else None
        if ready is not None:
            return ready.run(args)
        raise ToolError(self.reason, UNAVAILABLE, public=False, sent=False)
