"""The compiled SOP: a graph of action, decision and end nodes."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Literal

from core.shared.problems import Problem
from core.workspace.gar_file import GarRow
from core.workspace.params import Param

NodeKind = Literal["action", "decision", "end"]
SESSION_SLOTS = frozenset({"customer_id"})  # filled from the session (the signed-in customer), never asked


@dataclass
class Branch:
    """One way out of a decision: a condition (None = else) and its target."""

    condition: str | None
    target: str
    expr: bool = False  # True for JSON expressions over context, False for SOP text


@dataclass
class Node:
    """One step of an SOP.

    For text SOPs an action node carries its GAR row; JSON nodes carry their own
    tool, params and message. ``kinds`` is the set of action types it performs.
    """

    id: str
    kind: NodeKind
    text: str
    line: int = 0
    next: str | None = None
    branches: list[Branch] = field(default_factory=list)
    kinds: frozenset[str] = frozenset()
    tool: str = ""
    params: list[Param] = field(default_factory=list)
    arg_map: dict[str, str] = field(default_factory=dict)
    fills: list[Param] = field(default_factory=list)
    message: str = ""
    expects: str = ""
    result_key: str = ""
    gar: GarRow | None = None
    call: str = ""  # a step that runs another SOP: its id (as written until the workspace resolves it)

    @property
    def label(self) -> str:
        """The name used in traces and test expectations: GAR action or node id."""
        return self.gar.action if self.gar else self.id

    @property
    def hands_off(self) -> bool:
        """Whether this step hands the conversation to a person (``hand off to a person``; JSON ``"type":
        "handoff"``): the store's hand-off tool is called and the goal ends there."""
        return "handoff" in self.kinds

    @property
    def asks(self) -> bool:
        """Whether this step waits for the customer."""
        return "ask_user_input" in self.kinds

    def result_names(self) -> set[str]:
        """The names a text SOP's conditions and templates use for this step's tool result: the
        words of its step and of its tool ("look up the loan" / ``loans.lookup`` -> ``loan``)."""
        from core.language import text as T

        names: set[str] = set()
        if not self.tool:
            return names
        for word in T.words(self.label) + T.words(self.tool.replace(".", " ").replace("_", " ")):
            if word not in T.GENERAL_WORDS and len(word) > 2:
                names |= {word, T.singular(word)}
        return names

    def targets(self) -> list[str]:
        """Every node this one can go to."""
        if self.kind == "decision":
            return [b.target for b in self.branches]
        return [self.next] if self.next else []


def reachable(nodes: dict[str, Node], starts: list[str]) -> set[str]:
    """Ids of the nodes reachable from ``starts`` (included), following each node's targets."""
    seen: set[str] = set()
    todo = list(starts)
    while todo:
        nid = todo.pop()
        if nid in seen or nid not in nodes:
            continue
        seen.add(nid)
        todo.extend(nodes[nid].targets())
    return seen


@dataclass
class Sop:
    """A compiled SOP with its metadata."""

    id: str
    title: str
    agent: str
    priority: int
    triggers: list[str]
    description: str
    file: str
    format: Literal["text", "json"]
    start: str
    nodes: dict[str, Node]
    source: str = ""
    slots: dict[str, str] = field(default_factory=dict)  # slot types its author declared (``slots:``)
    slots_line: int = 0  # where ``slots:`` is written
    # references a JSON node makes after a tool step to keys nothing sets: (key, the problem if the key is not
    # a field of an earlier tool's result); the workspace, which knows the tools, decides (build.py)
    field_refs: list[tuple[str, Problem]] = field(default_factory=list)

    @property
    def version(self) -> str:
        """A short fingerprint of the SOP's source: a goal started on another version restarts its walk."""
        return hashlib.sha256(self.source.encode("utf-8")).hexdigest()[:12]

    def node(self, node_id: str | None) -> Node | None:
        """A node by id."""
        return self.nodes.get(node_id) if node_id else None

    def walk(self, *, depth_first: bool = True) -> list[str]:
        """Ids of the nodes reachable from the start, in a stable reading order of the flow: each branch followed
        to its end before the next (``depth_first``), or level by level."""
        order: list[str] = []
        todo = [self.start]
        while todo:
            nid = todo.pop(0)
            if nid in order or nid not in self.nodes:
                continue
            order.append(nid)
            todo = self.nodes[nid].targets() + todo if depth_first else todo + self.nodes[nid].targets()
        return order

    def reachable(self, start: str | None = None) -> set[str]:
        """Ids of the nodes reachable from a node (default: the start), that node included."""
        return reachable(self.nodes, [start or self.start])

    def slot_names(self) -> list[str]:
        """Every slot the SOP asks for or passes to a tool, in order of first use."""
        names: list[str] = []
        for node in self.nodes.values():
            for p in node.fills + node.params:
                if p.name not in names:
                    names.append(p.name)
        return names

    def to_dot(self, *, visited: Collection[str] = (), taken: Collection[tuple[str, str]] = (),
               current: str | None = None, paint: Mapping[str, str] | None = None,
               notes: Mapping[str, str] | None = None) -> str:
        """Graphviz DOT of the compiled graph.

        ``visited`` nodes and ``taken`` edges (a conversation's path) are drawn heavy,
        the ``current`` step outlined; with a path given, the rest is faded. ``paint``: further DOT
        attributes per node id (they win over the defaults, e.g. a fill colour); ``notes``: a second
        label line per node id.
        """
        out = [f'digraph "{self.id}" {{', "  rankdir=TB; nodesep=0.3; ranksep=0.35;",
               '  node [fontname="Helvetica", fontsize=11, style="rounded,filled", color="#8a94a6"];',
               '  edge [fontname="Helvetica", fontsize=9, color="#8a94a6"];']
        shown = self.reachable()
        lit, edges = set(visited), set(taken)
        fade = bool(lit or current)
        for n in self.nodes.values():
            if n.id not in shown:
                continue
            label = n.label.replace('"', "'")
            if n.kind == "decision":
                first = next((b.condition for b in n.branches if b.condition), "")
                label = f"{first}?".replace('"', "'") if first and label == n.id else label
                look = 'shape=diamond, style=filled, fillcolor="#fff4cc"'
            elif n.kind == "end":
                look, label = 'shape=oval, fillcolor="#e8e8e8"', "end"
            elif "ask_user_input" in n.kinds:
                look = 'shape=box, fillcolor="#dcebff"'
            elif "api_call" in n.kinds or n.tool:
                look = 'shape=box, fillcolor="#ffe5cc"'
            else:
                look = 'shape=box, fillcolor="#dff5e3"'
            if n.id == current:
                look += ', color="#d1242f", penwidth=3.5, fontcolor="#000000", fontname="Helvetica-Bold"'
                label = f"▶ {label}"
            elif n.id in lit:
                look += ', color="#1f6feb", penwidth=2.2'
            elif fade:
                look += ', fontcolor="#8a94a6"'
            if paint and n.id in paint:
                look += f", {paint[n.id]}"
            if notes and n.id in notes:
                label += "\\n" + notes[n.id].replace('"', "'")
            out.append(f'  "{n.id}" [{look}, label="{label}"];')
            for target, cond in self._exits(n):
                style = ', color="#1f6feb", penwidth=2.4' if (n.id, target) in edges else ""
                text = f'label="{cond}"' if cond is not None else ""
                attrs = ", ".join(a for a in (text, style.lstrip(", ")) if a)
                out.append(f'  "{n.id}" -> "{target}"' + (f" [{attrs}]" if attrs else "") + ";")
        out.append("}")
        return "\n".join(out)

    @staticmethod
    def _exits(node: Node) -> list[tuple[str, str | None]]:
        """Each way out of a node with its label (a decision's condition, else None)."""
        if node.kind == "decision":
            return [(b.target, (b.condition or "else").replace('"', "'")) for b in node.branches]
        return [(node.next, None)] if node.next else []

    def walked(self, path: list[str]) -> set[tuple[str, str]]:
        """The edges a sequence of visited node ids went along (consecutive pairs joined by an edge)."""
        return {(a, b) for a, b in zip(path, path[1:], strict=False)
                if a in self.nodes and b in self.nodes[a].targets()}
