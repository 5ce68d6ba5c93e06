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

    ``retry``, when given, is asked at each call for the tool that now works (None while it still does not):
    a sheet that answers later serves a later call without a restart (looked for at most every
    ``RETRY_EVERY_S`` seconds)."""

    def __init__(self, spec: ToolSpec, reason: str, retry: Callable[[], Any | None] | None = None) -> None:
        self.spec = spec
        self.reason = reason
        self.retry = retry
        self._ready: Any | None = None
        self._tried = time.monotonic()  # built right after a failed try: the next one waits its turn
        self._lock = threading.Lock()

    def run(self, args: dict[str, Any]) -> Any:
        """The working tool's answer when ``retry`` found one, else the refusal.

        Raises:
            ToolError: kind ``unavailable``, nothing sent.
        """
        with self._lock:
            if self._ready is None and self.retry is not None and time.monotonic() - self._tried >= RETRY_EVERY_S:
                self._tried = time.monotonic()
                self._ready = self.retry()
        if self._ready is not None:
            return self._ready.run(args)
        raise ToolError(self.reason, UNAVAILABLE, public=False, sent=False)
