"""Compile an indented-text SOP (the paper's style) into a graph."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol

import yaml

from core.shared.problems import Problem
from core.sop import expr
from core.sop.fields import text, text_list, text_map, whole_number
from core.sop.graph import SESSION_SLOTS, Branch, Node, Sop
from core.workspace.gar_file import GarRow, normalise_action

CALL = re.compile(r"^call\s+(?:the\s+)?(.+?)(?:\s+(?:procedure|sop|flow))?\.?$", re.I)  # "call verify identity"
TERMINATE = re.compile(r"^(terminate|end|stop|finish|close)\b(\s+(the\s+)?(flow|conversation|chat|sop|goal))?\.?$",
                       re.I)
# "hand off to a person", "hand over to billing", "escalate to a supervisor", "transfer the customer to a human
# agent": the conversation goes to people (the store's hand-off tool is called) and the procedure ends there
HANDOFF = re.compile(r"^(?:hand\s*-?\s*(?:off|over)|handoff|escalate)\b.*$|^(?:transfer|pass|route|connect|put)\b.*"
                     r"\bto\s+(?:a|an|the|our|one\s+of\s+our)?\s*(?:[\w-]+\s+){0,2}(?:human|person|people|agent|team|"
                     r"staff|colleague|supervisor|specialist|manager|representative|department|desk|tier\s*\d|"
                     r"expert|advis[eo]r|operator)s?\b.*$", re.I)
ELSE = re.compile(r"^(else|otherwise|in all other cases)\s*:?$", re.I)
META_KEYS = {"id", "title", "agent", "priority", "triggers", "description", "slots"}


@dataclass
class Line:
    """One non-blank SOP line."""

    no: int
    indent: int
    text: str
    children: list[Line] = field(default_factory=list)

    @property
    def is_condition(self) -> bool:
        return self.text.endswith(":")

    @property
    def condition(self) -> str:
        return self.text[:-1].strip()


class GarResolver(Protocol):
    """Matches an SOP line to a GAR row (exact name first, then similarity)."""

    def resolve(self, text: str) -> tuple[GarRow | None, str]:
        """The row and a hint (did-you-mean) when there is none."""
        ...


def split_front_matter(source: str, file: str) -> tuple[dict[str, Any], list[str], int, list[Problem]]:
    """Split YAML front matter from the workflow; returns meta, body lines, body offset, problems."""
    lines = source.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, lines, 0, []
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        return {}, lines, 0, [Problem(file, 1, "error", "front matter starts with '---' but has no closing '---'")]
    problems: list[Problem] = []
    try:
        meta = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = (mark.line + 2) if mark else 1
        return {}, lines[end + 1 :], end + 1, [Problem(file, line, "error", f"front matter YAML: {exc}")]
    if not isinstance(meta, dict):
        problems.append(Problem(file, 2, "error", "front matter must be key: value pairs"))
        meta = {}
    for key in meta:
        if key not in META_KEYS:
            problems.append(Problem(file, 2, "warning", f"unknown front matter key {key!r}"))
    return meta, lines[end + 1 :], end + 1, problems


MAX_DEPTH = 40  # nested conditions in a text SOP


def build_tree(body: list[str], offset: int, file: str) -> tuple[list[Line], list[Problem]]:
    """Turn indented lines into a tree, reporting indentation mistakes with line and column."""
    problems: list[Problem] = []
    root = Line(0, -1, "<root>")
    stack = [root]
    levels_used: dict[int, list[int]] = {}
    for i, raw in enumerate(body):
        no = offset + i + 1
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        lead = raw[: len(raw) - len(raw.lstrip())]
        if "\t" in lead and " " in lead:
            problems.append(Problem(file, no, "error", "indentation mixes tabs and spaces", 1))
        indent = len(lead.expandtabs(4))
        line = Line(no, indent, raw.strip())
        while stack[-1].indent >= indent:
            stack.pop()
        if len(stack) > MAX_DEPTH:  # the compiler walks the tree recursively: its depth is bounded here
            problems.append(Problem(file, no, "error", f"steps nest more than {MAX_DEPTH} levels deep", indent + 1))
            return [], problems
        parent = stack[-1]
        if parent.children and parent.children[-1].indent != indent and parent is not root:
            problems.append(Problem(file, no, "error",
                                    "unindent does not match any outer indentation level", indent + 1))
        elif parent is not root and not parent.is_condition:
            problems.append(Problem(file, no, "error",
                                    f"unexpected indentation: line {parent.no} ({parent.text!r}) is a step, "
                                    "not a condition ending with ':'", indent + 1))
        elif parent is root and root.children and root.children[0].indent != indent:
            problems.append(Problem(file, no, "error",
                                    "unindent does not match any outer indentation level", indent + 1))
        parent.children.append(line)
        levels_used.setdefault(id(parent), []).append(indent)
        stack.append(line)
    for node in _walk(root):
        if node is not root and node.is_condition and not node.children:
            problems.append(Problem(file, node.no, "error",
                                    f"condition {node.text!r} has no steps indented under it"))
    return root.children, problems


def _walk(line: Line) -> list[Line]:
    out = [line]
    for c in line.children:
        out.extend(_walk(c))
    return out


class TextCompiler:
    """Compiles the line tree into nodes."""

    def __init__(self, file: str, resolver: GarResolver) -> None:
        self.file = file
        self.resolver = resolver
        self.nodes: dict[str, Node] = {"end": Node("end", "end", "end of flow")}
        self.problems: list[Problem] = []

    def seq(self, lines: list[Line], cont: str) -> str:
        """Compile a block; return its first node id (``cont`` when empty)."""
        groups = self._group(lines)
        nxt = cont
        for group in reversed(groups):
            nxt = self._stmt(group, nxt)
        return nxt

    def _group(self, lines: list[Line]) -> list[list[Line]]:
        groups: list[list[Line]] = []
        for line in lines:
            if line.is_condition and groups and groups[-1][0].is_condition and not _is_else(groups[-1][-1]):
                groups[-1].append(line)  # consecutive conditions are branches of one decision
                continue
            if _is_else(line):
                self.problems.append(Problem(self.file, line.no, "error", "'else:' without an 'if ...:' before it"))
            groups.append([line])
        self._check_unreachable(groups)
        return groups

    def _check_unreachable(self, groups: list[list[Line]]) -> None:
        for i, group in enumerate(groups[:-1]):
            ends = TERMINATE.match(group[0].text) or self._hands_off(group[0].text)
            if not group[0].is_condition and ends:
                nxt = groups[i + 1][0]
                self.problems.append(Problem(self.file, nxt.no, "warning",
                                             f"unreachable: step {nxt.text!r} comes after {group[0].text!r} "
                                             "(the procedure ends there)"))
                break

    def _hands_off(self, text: str) -> bool:
        """A hand-off step: worded as one, and no GAR action of that exact name (a row wins)."""
        return bool(HANDOFF.match(text)) and normalise_action(text) not in getattr(self.resolver, "by_name", {})

    def _stmt(self, group: list[Line], nxt: str) -> str:
        first = group[0]
        if first.is_condition:
            node = Node(f"d{first.no}", "decision", " / ".join(g.condition for g in group), first.no)
            for line in group:
                target = self.seq(line.children, nxt)
                cond = None if _is_else(line) else _strip_if(line.condition)
                written = cond is not None and expr.is_expression(cond)
                if written:
                    try:
                        expr.parse(cond or "")
                    except expr.ExprError as exc:
                        col = line.indent + line.text.find(cond or "") + exc.column
                        self.problems.append(Problem(self.file, line.no, "error", f"condition {cond!r}: {exc}",
                                                     col))
                        written = False
                node.branches.append(Branch(cond, target, expr=written))
            if all(b.condition is not None for b in node.branches):
                node.branches.append(Branch(None, nxt))
            self.nodes[node.id] = node
            return node.id
        if TERMINATE.match(first.text):
            nid = f"end{first.no}"
            self.nodes[nid] = Node(nid, "end", first.text, first.no)
            return nid
        return self._action(first, nxt)

    def _action(self, line: Line, nxt: str) -> str:
        nid = f"s{line.no}"
        if self._hands_off(line.text):  # the team takes it from here: no next step
            self.nodes[nid] = Node(nid, "action", line.text, line.no, kinds=frozenset({"handoff"}))
            return nid
        called = CALL.match(line.text)
        if called and normalise_action(line.text) not in getattr(self.resolver, "by_name", {}):
            # "call verify identity": run that SOP, then come back here (resolved against the workspace's SOPs)
            self.nodes[nid] = Node(nid, "action", line.text, line.no, next=nxt, kinds=frozenset({"call"}),
                                   call=called.group(1).strip())
            return nid
        row, hint = self.resolver.resolve(line.text)
        if row is None:
            self.problems.append(Problem(self.file, line.no, "error",
                                         f"unknown action {line.text!r}: not in gar.csv{hint}",
                                         unknown_action=line.text))
            self.nodes[nid] = Node(nid, "action", line.text, line.no, next=nxt, kinds=frozenset({"message_to_user"}),
                                   message=line.text)
            return nid
        node = Node(nid, "action", line.text, line.no, next=nxt, kinds=row.types, tool=row.api, gar=row)
        if row.has("ask_user_input"):
            node.fills = list(row.params)  # a step that also calls an API is split in split_combined()
            node.expects = row.metadata
        elif row.has("api_call"):
            node.params = list(row.params)
        if row.has("message_to_user"):
            node.message = row.metadata
        self.nodes[nid] = node
        return nid


    def split_combined(self) -> None:
        """Split the params of steps that call an API and then ask (``api_call|ask_user_input``).

        Params that another step of the SOP asks for (or the session provides) are the API's
        inputs; the rest are what the customer's answer fills, e.g. ``old_email|old_email_otp``
        for "send otp and ask for otp received on old email".
        """
        asked = {p.name for n in self.nodes.values() if n.asks and "api_call" not in n.kinds for p in n.fills}
        asked |= SESSION_SLOTS
        for node in self.nodes.values():
            if not (node.asks and "api_call" in node.kinds and node.gar is not None):
                continue
            node.params = [p for p in node.gar.params if p.name in asked]
            node.fills = [p for p in node.gar.params if p.name not in asked]
            if not node.fills:
                self.problems.append(Problem(self.file, node.line, "error",
                                             f"step {node.text!r} asks the customer, but every param of its GAR "
                                             "row is asked by another step: add the slot the answer fills"))


def _is_else(line: Line) -> bool:
    return line.is_condition and ELSE.match(line.text) is not None


def _strip_if(cond: str) -> str:
    return re.sub(r"^(if|elif|else if|when|in case)\s+", "", cond.strip(), flags=re.I).strip()


def parse_text_sop(source: str, file: str, resolver: GarResolver, default_id: str) -> tuple[Sop | None, list[Problem]]:
    """Compile a text SOP; returns the SOP (None when it cannot be built) and problems."""
    meta, body, offset, problems = split_front_matter(source, file)
    tree, p2 = build_tree(body, offset, file)
    problems += p2
    if not tree:
        problems.append(Problem(file, offset + 1, "error", "the SOP has no steps"))
        return None, problems
    comp = TextCompiler(file, resolver)
    start = comp.seq(tree, "end")
    comp.split_combined()
    problems += comp.problems
    def line(key: str) -> int:
        return next((i + 1 for i, ln in enumerate(source.splitlines()[:offset]) if ln.startswith(f"{key}:")), 1)

    sop_id = text(meta.get("id"), "id", file, line("id"), problems) or default_id
    sop = Sop(id=sop_id, title=text(meta.get("title"), "title", file, line("title"), problems) or sop_id,
              agent=text(meta.get("agent"), "agent", file, line("agent"), problems),
              priority=whole_number(meta.get("priority"), 1, "priority", file, line("priority"), problems),
              triggers=text_list(meta.get("triggers"), "triggers", file, line("triggers"), problems),
              description=text(meta.get("description"), "description", file, line("description"), problems),
              file=file, format="text", start=start, nodes=comp.nodes, source=source,
              slots=text_map(meta.get("slots"), "slots", file, line("slots"), problems), slots_line=line("slots"))
    return sop, problems
