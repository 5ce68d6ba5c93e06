"""The canvas of an SOP: its steps and arrows, the result of an edit and a condition's check, and the
error an edit the SOP's format cannot express raises."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from core.shared.problems import Problem
from core.sop.graph import Sop
from core.sop.parse_text import GarResolver

Kind = Literal["ask", "tool", "message", "decision", "call", "handoff", "end"]
KINDS: tuple[Kind, ...] = ("ask", "tool", "message", "decision", "call", "handoff", "end")
Format = Literal["text", "json"]
TERMINATE_LINE = "terminate the flow"
OPERATORS = ("==", "!=", "<", "<=", ">", ">=")
JSON_FIELDS = {"description": "description", "message": "messageTemplate", "tool": "tool", "params": "toolParams",
               "result_key": "resultKey", "condition": "condition", "call": "call"}


class CanvasError(ValueError):
    """An edit the SOP's format cannot express, or fields it cannot take; the message says why."""


@dataclass
class CanvasNode:
    """One step on the canvas. ``fields`` are what the side form edits; ``details`` what it only shows."""

    id: str
    kind: Kind
    label: str
    line: int = 0
    fields: dict[str, Any] = field(default_factory=dict)
    details: dict[str, str] = field(default_factory=dict)
    implicit: bool = False  # a text SOP's end after its last step: no line of its own


@dataclass
class CanvasEdge:
    """An arrow; ``branch`` is a decision's outcome (its index), None for a step's one way on."""

    source: str
    target: str
    branch: int | None = None
    label: str = ""

    @property
    def id(self) -> str:
        """A stable name for the arrow."""
        return f"{self.source}->{self.target}" + ("" if self.branch is None else f"#{self.branch}")


@dataclass
class Canvas:
    """An SOP file as nodes and edges; ``source`` is the file as read (saving it unchanged is a no-op)."""

    format: Format
    file: str
    source: str
    start: str
    nodes: dict[str, CanvasNode]
    edges: list[CanvasEdge]
    problems: list[Problem]
    resolver: GarResolver | None = None
    sop: Sop | None = None

    def out(self, node_id: str) -> list[CanvasEdge]:
        """The arrows leaving a node, by branch."""
        return [e for e in self.edges if e.source == node_id]

    def target(self, node_id: str, branch: int | None = None) -> str | None:
        """Where a step goes (a decision: its branch ``branch``, default the first)."""
        for e in self.out(node_id):
            if e.branch == branch or (branch is None and e.branch in (None, 0)):
                return e.target
        return None

    def unreached(self) -> list[str]:
        """The steps no arrow from the start reaches (left so by a deleted step, say), in drawing order."""
        seen, todo = set(), [self.start]
        while todo:
            nid = todo.pop()
            if nid in seen or nid not in self.nodes:
                continue
            seen.add(nid)
            todo += [e.target for e in self.out(nid)]
        return [nid for nid in self.nodes if nid not in seen]

    def node_problems(self, found: list[Problem]) -> dict[str, list[Problem]]:
        """Lint problems of this file placed on the node written at their line."""
        by_line = {n.line: n.id for n in self.nodes.values() if n.line}
        out: dict[str, list[Problem]] = {}
        for p in found:
            if p.file == self.file and p.line in by_line:
                out.setdefault(by_line[p.line], []).append(p)
        return out


@dataclass
class Edit:
    """The SOP's source after an edit, and the step to select next (a new step, say)."""

    source: str
    selected: str | None = None


@dataclass
class ConditionCheck:
    """A condition as the compiler reads it: fine, or what is wrong and at which column (1-based)."""

    ok: bool
    message: str
    column: int = 0


def _node(canvas: Canvas, node_id: str) -> CanvasNode:
    node = canvas.nodes.get(node_id)
    if node is None:
        raise CanvasError(f"there is no step {node_id!r} in {canvas.file}")
    return node


def _text_of(fields: dict[str, Any], key: str, what: str) -> str:
    value = " ".join(str(fields.get(key) or "").split())
    if not value:
        raise CanvasError(f"choose {what}")
    if value.endswith(":"):
        raise CanvasError(f"{value!r} ends with ':', which makes it a condition; leave the ':' out")
    return value
