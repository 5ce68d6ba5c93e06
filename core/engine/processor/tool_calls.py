"""One tool call of a turn through the gateway: reused on a re-run after a conflict, and, when it changes the
world, given an idempotency key, recorded as started before it is sent and marked with its outcome after."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

from core.engine.processor.turn import Turn
from core.shared.models import ToolCall
from core.tools.gateway import MIN_TIMEOUT_S, ToolGateway


class ToolCaller:
    """Calls the tools a turn needs (its agents' steps, the knowledge base, the hand-off tool) through the gateway."""

    def __init__(self, gateway: ToolGateway) -> None:
        self.gateway = gateway
        # records a side-effecting run as started before it is sent, and then what its call returned (the
        # orchestrator's store)
        self.before_change: Callable[[Turn, str, dict[str, Any], str], None] | None = None
        self.after_change: Callable[[Turn, ToolCall], None] | None = None

    def off(self, t: Turn) -> frozenset[str]:
        """The tools that are off for this turn: declared but not run here (the workspace not trusted, a sheet not
        read yet: core/tools/held.py), unless the turn's script answers for them."""
        out: set[str] = set()
        for name, impl in self.gateway.tools.items():
            available = getattr(impl, "available", None)
            if available is not None and not (t.script is not None and t.script.has(name)) and not available():
                out.add(name)
        return frozenset(out)

    def call(self, t: Turn, agent: str, tool: str, args: dict[str, Any], system: bool = False) -> ToolCall:
        """One tool call through the gateway; on a re-run after a conflict, reuse this turn's result. A call
        that changes the world gets an idempotency key (the same for the same call of the same turn, also
        when the turn is sent again after a crash), is recorded as started before it is sent, and its outcome after."""
        key = f"{tool}|{json.dumps(args, sort_keys=True, default=str)}"
        used = t.requested.get(key, 0)
        t.requested[key] = used + 1
        earlier = t.cache.get(key, [])
        scripted = t.script is not None and t.script.has(tool)
        left = t.deadline - time.monotonic()
        if used < len(earlier):
            call = earlier[used].model_copy(update={"reused": True})
        elif not scripted and left < MIN_TIMEOUT_S:  # the turn's one deadline has passed: nothing is sent
            call = ToolCall(tool=tool, args=dict(args), agent=agent or "orchestrator", ok=False, sent=False,
                            error="not sent: the turn's deadline passed", error_kind="timeout")
            t.cache.setdefault(key, []).append(call)
        else:
            spec = getattr(self.gateway.tools.get(tool), "spec", None)
            once = ""
            if spec is not None and spec.side_effects and not scripted:
                # the n-th change of this call in the turn; a try refused before anything was sent is not one,
                # so the retry that follows it carries the same key
                nth = sum(1 for c in earlier[:used] if c.ok or c.sent)
                once = hashlib.sha256(f"{t.state.session_id}|{t.state.turn}|{key}|{nth}".encode()).hexdigest()[:32]
                if self.before_change is not None:
                    self.before_change(t, tool, args, once)
            call = self.gateway.call(agent, tool, args, script=t.script, system=system, key=once,
                                     session_id=t.state.session_id, customer_id=t.state.customer_id or None,
                                     within=left)
            t.cache.setdefault(key, []).append(call)
            if once and self.after_change is not None:
                self.after_change(t, call)
        if call.error_kind == "denied":
            t.trace.denied.append({"tool": tool, "agent": agent, "error": call.error})
        else:
            t.trace.tool_calls.append(call)
        return call
