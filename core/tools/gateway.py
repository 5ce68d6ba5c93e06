"""The tool gateway: permission matrix, argument validation, timeouts, normalised outcomes.

Each call runs in a thread of its own under one deadline: a call that hangs is reported as timed out
when the deadline passes, and a stuck call never holds up another (there is no pool for it to fill).
An answer too large to keep in a session (MAX_RESULT_CHARS as JSON) is an error, not a result.
"""

from __future__ import annotations

import contextvars
import json
import threading
import time
from collections.abc import Mapping
from typing import Any

from core.shared.concurrency import waiting
from core.shared.errors import ToolError
from core.shared.models import ToolCall
from core.shared.redaction import redact
from core.tools.base import Tool, classify_error
from core.workspace.config import AgentDecl

DEFAULT_TIMEOUT_S = 5.0
MIN_TIMEOUT_S, MAX_TIMEOUT_S = 0.05, 60.0
MAX_RESULT_CHARS = 200_000


class ToolScript:
    """Scripted tool outcomes for conversation tests: ``{result}``, ``{error}`` or ``{timeout}``.

    A list is consumed one entry per call (its last entry then repeats); a single
    outcome applies to every call. A turn-level script overrides the file-level one.
    """

    def __init__(self, spec: Mapping[str, Any] | None = None) -> None:
        self._spec: dict[str, list[dict[str, Any]] | dict[str, Any]] = dict(spec or {})
        self._used: dict[str, int] = {}

    def has(self, tool: str, args: Mapping[str, Any] | None = None) -> bool:
        """Whether the script gives this call's outcome (``args``: the call's arguments, for scripts that
        answer by them, such as a replay's recorded calls)."""
        return tool in self._spec

    def next(self, tool: str, args: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The outcome of this call: ``{result}``, ``{error, kind?}`` or ``{timeout: true}``."""
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

    def allowed(self, agent: str, tool: str) -> bool:
        """Whether the permission matrix lets an agent call a tool."""
        decl = self.agents.get(agent)
        return decl is not None and tool in decl.tools

    def call(self, agent: str, tool: str, args: dict[str, Any], *, script: ToolScript | None = None,
             system: bool = False, key: str = "", session_id: str = "",
             customer_id: str | None = None, within: float | None = None) -> ToolCall:
        """Run one tool call and return its normalised outcome (never raises for tool failures).

        ``system`` marks the orchestrator's own knowledge-base answers to doubts, which no agent owns.
        ``key``: the idempotency key of a side-effecting call (passed to tools that take one).
        ``session_id``, ``customer_id``: the conversation the call serves, passed to tools that take them
        (a Python function declaring them, an HTTP endpoint as headers); never part of ``args``, so the
        trace, recordings and replays see the same arguments whichever session makes the call.
        ``within``: the seconds left of the turn's deadline; the call's own deadline never goes past it.
        """
        started = time.perf_counter()
        call = ToolCall(tool=tool, args=dict(args), agent=agent or "orchestrator")
        if not system and not self.allowed(agent, tool):
            return self._fail(call, f"agent {agent!r} may not call {tool!r}", "denied", started, sent=False)
        impl = self.tools.get(tool)
        if impl is not None:
            call.args = impl.spec.bind(call.args)
            call.side_effects = impl.spec.side_effects
            call.key = key if impl.spec.side_effects else ""
        if script is not None and script.has(tool, call.args):
            return self._scripted(call, script.next(tool, call.args), started)
        if impl is None:
            return self._fail(call, f"unknown tool {tool!r}", "failure", started, sent=False)
        try:
            clean = impl.spec.validate(call.args)
        except ToolError as exc:  # refused before anything was sent
            return self._fail(call, str(exc), classify_error(str(exc), exc.kind), started,
                              public=str(exc) if exc.public else "", sent=False)
        call.args = clean
        try:
            call.result = _bounded(self._run(impl, clean, call.key, session_id, customer_id or None, within))
        except ToolError as exc:
            return self._fail(call, str(exc), classify_error(str(exc), exc.kind), started,
                              public=str(exc) if exc.public and exc.kind != "timeout" else "", sent=exc.sent,
                              answered=exc.answered and exc.kind != "timeout")
        except Exception as exc:  # noqa: BLE001 - a tool crash becomes an observation, never a crashed turn
            msg = f"{type(exc).__name__}: {exc}"
            return self._fail(call, msg, classify_error(msg), started)
        call.latency_ms = round((time.perf_counter() - started) * 1000, 2)
        return call

    def timeout_of(self, tool: str) -> float:
        """The deadline of one call of ``tool``, in seconds."""
        impl = self.tools.get(tool)
        timeout = (impl.spec.timeout_s if impl is not None else None) or self.default_timeout_s
        return max(MIN_TIMEOUT_S, min(MAX_TIMEOUT_S, float(timeout)))

    def _run(self, impl: Tool, args: dict[str, Any], key: str, session_id: str = "",
             customer_id: str | None = None, within: float | None = None) -> Any:
        own = self.timeout_of(impl.spec.name)
        timeout = own if within is None else max(MIN_TIMEOUT_S, min(own, within))
        outcome: dict[str, Any] = {}
        done = threading.Event()
        extra: dict[str, Any] = {}  # only what the tool takes: any other is called exactly as before
        if key and getattr(impl, "takes_key", False):
            extra["key"] = key
        if getattr(impl, "takes_conversation", False):
            extra.update(session_id=session_id, customer_id=customer_id)
        if getattr(impl, "takes_deadline", False):  # a tool that can stop its own work when the call's time is up
            extra["timeout_s"] = timeout

        def work() -> None:
            try:
                outcome["result"] = impl.run(args, **extra)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                outcome["error"] = exc
            finally:
                done.set()

        # the call's thread sees the turn's context (the vectors of its words, see core.retrieval.embedding)
        context = contextvars.copy_context()
        threading.Thread(target=context.run, args=(work,), name=f"tool {impl.spec.name}", daemon=True).start()
        with waiting():  # other turns compute while this one waits on its tool
            finished = done.wait(timeout)
        if not finished:
            cut = " (what was left of the turn's deadline)" if timeout < own else ""
            raise ToolError(f"timed out after {timeout:g}s{cut}", "timeout")
        if "error" in outcome:
            raise outcome["error"]
        return outcome.get("result")

    def _scripted(self, call: ToolCall, outcome: dict[str, Any], started: float) -> ToolCall:
        call.scripted = True
        if outcome.get("timeout"):
            return self._fail(call, "timed out (scripted)", "timeout", started)
        if "error" in outcome:
            msg = str(outcome["error"])  # a scripted error stands for a workspace tool's own message
            return self._fail(call, msg, classify_error(msg, str(outcome.get("kind") or "failure")), started,
                              public=msg, answered=True)  # the tool's own answer: its outcome is known
        call.result = outcome.get("result")
        call.latency_ms = round((time.perf_counter() - started) * 1000, 2)
        return call

    @staticmethod
    def _fail(call: ToolCall, message: str, kind: str, started: float, public: str = "",
              sent: bool = True, answered: bool = False) -> ToolCall:
        """A failed call. ``sent``: whether its request may have reached the tool; ``answered``: the tool itself
        answered that it failed (a workspace function's ToolError, a scripted error), so nothing is in doubt. A
        call that changes the world, failed after it may have been sent without such an answer (a timeout, a
        crash, a server error, an answer too large) and was not refused as wrong input has an unknown outcome."""
        call.ok = False
        call.error = redact(message)  # a backend's text may echo a credential: stored and shown masked
        call.error_kind = kind
        call.public_error = public
        call.sent = sent
        call.outcome_unknown = call.side_effects and sent and not answered \
            and kind not in ("invalid_input", "denied", "bad_args")
        call.latency_ms = round((time.perf_counter() - started) * 1000, 2)
        return call

    def close(self) -> None:
        """Nothing to release: each call's thread ends with it (a stuck one is a daemon)."""


def _bounded(result: Any) -> Any:
    """A tool's answer, if it is small enough to keep in the session."""
    try:
        size = len(json.dumps(result, default=str))
    except (TypeError, ValueError) as exc:
        raise ToolError(f"the answer cannot be stored: {exc}", "failure", public=False) from exc
    if size > MAX_RESULT_CHARS:
        raise ToolError(f"the answer is {size:,} characters of JSON, more than the {MAX_RESULT_CHARS:,} a "
                        "session keeps", "failure", public=False)
    return result
