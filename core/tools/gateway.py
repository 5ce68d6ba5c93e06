"""The tool gateway: permission matrix, argument validation, timeouts, normalised outcomes."""

from __future__ import annotations

import concurrent.futures as cf
import time
from collections.abc import Mapping
from typing import Any

from core.errors import ToolError
from core.models import ToolCall
from core.tools.base import Tool, classify_error
from core.workspace import AgentDecl

DEFAULT_TIMEOUT_S = 5.0
MIN_TIMEOUT_S, MAX_TIMEOUT_S = 0.05, 60.0


class ToolScript:
    """Scripted tool outcomes for conversation tests: ``{result}``, ``{error}`` or ``{timeout}``.

    A list is consumed one entry per call (its last entry then repeats); a single
    outcome applies to every call. A turn-level script overrides the file-level one.
    """

    def __init__(self, spec: Mapping[str, Any] | None = None) -> None:
        self._spec: dict[str, list[dict[str, Any]] | dict[str, Any]] = dict(spec or {})
        self._used: dict[str, int] = {}

    def has(self, tool: str) -> bool:
        return tool in self._spec

    def next(self, tool: str) -> dict[str, Any]:
        entry = self._spec[tool]
        if isinstance(entry, list):
            i = self._used.get(tool, 0)
            self._used[tool] = i + 1
            return dict(entry[min(i, len(entry) - 1)]) if entry else {"result": None}
        return dict(entry)


class ToolGateway:
    """Every tool call passes here: permission, validation, timeout, and outcome normalisation."""

    def __init__(self, tools: Mapping[str, Tool], agents: Mapping[str, AgentDecl],
                 default_timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.tools = dict(tools)
        self.agents = dict(agents)
        self.default_timeout_s = default_timeout_s
        self._pool = cf.ThreadPoolExecutor(max_workers=4, thread_name_prefix="tool")

    def allowed(self, agent: str, tool: str) -> bool:
        """Whether the permission matrix lets an agent call a tool."""
        decl = self.agents.get(agent)
        return decl is not None and tool in decl.tools

    def call(self, agent: str, tool: str, args: dict[str, Any], *, script: ToolScript | None = None,
             system: bool = False) -> ToolCall:
        """Run one tool call and return its normalised outcome (never raises for tool failures).

        ``system`` marks the orchestrator's own knowledge-base answers to doubts, which no agent owns.
        """
        started = time.perf_counter()
        call = ToolCall(tool=tool, args=dict(args), agent=agent or "orchestrator")
        if not system and not self.allowed(agent, tool):
            return self._fail(call, f"agent {agent!r} may not call {tool!r}", "denied", started)
        impl = self.tools.get(tool)
        if impl is not None:
            call.args = impl.spec.bind(call.args)
        if script is not None and script.has(tool):
            return self._scripted(call, script.next(tool), started)
        if impl is None:
            return self._fail(call, f"unknown tool {tool!r}", "failure", started)
        try:
            clean = impl.spec.validate(call.args)
            call.args = clean
            call.result = self._run(impl, clean)
        except ToolError as exc:
            return self._fail(call, str(exc), classify_error(str(exc), exc.kind), started)
        except Exception as exc:  # noqa: BLE001 - a tool crash becomes an observation, never a crashed turn
            msg = f"{type(exc).__name__}: {exc}"
            return self._fail(call, msg, classify_error(msg), started)
        call.latency_ms = round((time.perf_counter() - started) * 1000, 2)
        return call

    def _run(self, impl: Tool, args: dict[str, Any]) -> Any:
        timeout = impl.spec.timeout_s or self.default_timeout_s
        timeout = max(MIN_TIMEOUT_S, min(MAX_TIMEOUT_S, float(timeout)))
        future = self._pool.submit(impl.run, args)
        try:
            return future.result(timeout=timeout)
        except cf.TimeoutError as exc:
            future.cancel()
            raise ToolError(f"timed out after {timeout:g}s", "timeout") from exc

    def _scripted(self, call: ToolCall, outcome: dict[str, Any], started: float) -> ToolCall:
        call.scripted = True
        if outcome.get("timeout"):
            return self._fail(call, "timed out (scripted)", "timeout", started)
        if "error" in outcome:
            msg = str(outcome["error"])
            return self._fail(call, msg, classify_error(msg, str(outcome.get("kind") or "failure")), started)
        call.result = outcome.get("result")
        call.latency_ms = round((time.perf_counter() - started) * 1000, 2)
        return call

    @staticmethod
    def _fail(call: ToolCall, message: str, kind: str, started: float) -> ToolCall:
        call.ok = False
        call.error = message
        call.error_kind = kind
        call.latency_ms = round((time.perf_counter() - started) * 1000, 2)
        return call

    def close(self) -> None:
        """Stop the worker threads (running calls finish on their own)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
