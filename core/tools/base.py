"""The tool protocol and argument validation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from core.shared.errors import ToolError
from core.workspace.params import Param, bind_params


@dataclass
class ToolSpec:
    """What a tool is called, what it takes, how long it may run."""

    name: str
    description: str
    params: list[Param] = field(default_factory=list)
    accepts_extra: bool = False
    timeout_s: float | None = None
    side_effects: bool = False

    def bind(self, args: dict[str, Any]) -> dict[str, Any]:
        """Arguments keyed by slot names, renamed to this tool's params (see ``bind_params``).

        Arguments already named like params are kept; a tool that accepts extra arguments
        takes them as they are.
        """
        known = {p.name for p in self.params}
        if self.accepts_extra or all(k in known for k in args):
            return dict(args)
        present = [k for k, v in args.items() if v not in (None, "")]
        mapping = bind_params(self.params, present)
        out = {param: args[slot] for param, slot in mapping.items()}
        out.update({k: v for k, v in args.items() if k not in mapping.values() and k not in out})
        return out

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        """Check arguments: required present, no unknown names (unless extras are accepted).

        Raises:
            ToolError: kind ``bad_args`` naming the problem.
        """
        known = {p.name for p in self.params}
        unknown = [k for k in args if k not in known]
        if unknown and not self.accepts_extra:
            raise ToolError(f"{self.name}: unknown argument(s) {', '.join(sorted(unknown))}", "bad_args")
        missing = [p.name for p in self.params if not p.optional and args.get(p.name) in (None, "")]
        if missing:
            raise ToolError(f"{self.name}: missing required argument(s) {', '.join(missing)}", "bad_args")
        return {k: v for k, v in args.items() if v is not None}


CONVERSATION_PARAMS = ("session_id", "customer_id")
"""What a tool may be told of the conversation a call serves, besides its arguments (never slots)."""


class Tool(Protocol):
    """Anything the gateway can call.

    A tool with ``takes_key`` set also takes ``key=`` (a side-effecting call's idempotency key); one with
    ``takes_conversation`` set also takes ``session_id=`` and ``customer_id=`` (``None`` without a customer);
    one with ``takes_deadline`` set also takes ``timeout_s=`` (the call's deadline, to stop its own work then).
    """

    spec: ToolSpec

    def run(self, args: dict[str, Any]) -> Any:
        """Run with validated arguments; raise ToolError on failure."""
        ...


def classify_error(message: str, kind: str = "failure") -> str:
    """The failure kind of an error text: ``invalid_input`` when it says the input is wrong."""
    if kind not in ("failure", ""):
        return kind
    return "invalid_input" if "invalid" in message.lower() else "failure"
