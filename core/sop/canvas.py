"""An SOP as a canvas of steps and arrows, and canvas edits written back into the SOP's own source.

The canvas is read from the source (a text SOP or a JSON node file) through the same compiler the engine
uses, so a step looks on the canvas as the engine runs it. Every edit is a small change of the source
text itself (a line inserted, a value replaced, a member removed): a file opened and saved without an edit
is the same file byte for byte, and an edit keeps the author's comments, front matter, key order and
indentation everywhere else.

Text SOPs go from a step to the one written under it, so on their canvas an arrow can be led to an end
(a ``terminate the flow`` line is written) or back onto the step below when a ``terminate`` stood in
between; other arrows are a JSON SOP's freedom and are refused with a sentence saying so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from core.shared.problems import Problem, errors
from core.sop import expr, jsonspan
from core.sop.graph import Node, Sop
from core.sop.load import compile_sop
from core.sop.parse_json import ASK_WORDS
from core.sop.parse_text import ELSE, HANDOFF, TERMINATE, GarResolver, Line, build_tree, split_front_matter

Kind = Literal["ask", "tool", "message", "decision", "call", "handoff", "end"]
KINDS: tuple[Kind, ...] = ("ask", "tool", "message", "decision", "call", "handoff", "end")
Format = Literal["text", "json"]
TERMINATE_LINE = "terminate the flow"
OPERATORS = ("==", "!=", "<", "<=", ">", ">=")
JSON_FIELDS = {"description": "description", "message": "messageTemplate", "tool": "tool", "params": "toolParams",
               "result_key": "resultKey", "condition": "condition", "call": "call"}
GAP_X, GAP_Y = 270.0, 120.0


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
    x: float = 0.0
    y: float = 0.0
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


# ---------------------------------------------------------------------------------------------- reading
def open_canvas(source: str, fmt: Format, file: str, resolver: GarResolver | None = None) -> Canvas:
    """The canvas of an SOP's source. A text SOP needs the workspace's GAR (``resolver``) to tell an ask
    from a tool call; a source that does not compile gives an empty canvas with its problems."""
    sop, problems = compile_sop(source, file, fmt, resolver or _NoGar())
    canvas = Canvas(fmt, file, source, sop.start if sop else "", {}, [], problems, resolver, sop)
    if sop is None:
        return canvas
    if fmt == "json":
        try:
            doc = jsonspan.parse(source)
        except jsonspan.JsonSpanError:
            return canvas
        raw = doc.get("nodes")
        for node in sop.nodes.values():
            obj = raw.get(node.id) if raw is not None else None
            canvas.nodes[node.id] = _json_node(node, sop, obj.plain() if obj is not None else {})
    else:
        index = _TextIndex(source, file)
        targeted = {t for n in sop.nodes.values() for t in n.targets()}
        for node in sop.nodes.values():
            if node.id == "end" and "end" not in targeted:
                continue
            canvas.nodes[node.id] = _text_node(node, sop, index)
    for node in sop.nodes.values():
        if node.id not in canvas.nodes:
            continue
        if node.kind == "decision":
            for i, b in enumerate(node.branches):
                label = b.condition or ("otherwise" if fmt == "text" and i >= _written_branches(canvas, node)
                                        else "else")
                canvas.edges.append(CanvasEdge(node.id, b.target, i, label))
        elif node.next:
            canvas.edges.append(CanvasEdge(node.id, node.next))
    _layout(canvas)
    return canvas


class _NoGar:
    """A GAR that knows no action (JSON SOPs need none)."""

    def resolve(self, text: str) -> tuple[None, str]:
        return None, ""


def _written_branches(canvas: Canvas, node: Node) -> int:
    return len(canvas.nodes[node.id].fields.get("branches", [])) if canvas.format == "text" else 2


def kind_of(node: Node, sop: Sop) -> Kind:
    """What a compiled step is on the canvas."""
    if node.kind == "end":
        return "end"
    if node.kind == "decision":
        return "decision"
    if node.call:
        return "call"
    if node.hands_off:
        return "handoff"
    if node.asks:
        return "ask"
    if node.tool or "api_call" in node.kinds or "external_knowledge" in node.kinds:
        return "tool"
    nxt = sop.node(node.next)
    words = node.text if sop.format == "text" else f"{node.text} {node.id}".replace("_", " ")
    if HANDOFF.match(words) and nxt is not None and nxt.kind == "end":
        return "handoff"
    return "message"


def _details(node: Node) -> dict[str, str]:
    out: dict[str, str] = {}
    if node.fills:
        out["fills"] = ", ".join(p.name for p in node.fills)
    if node.tool:
        out["tool"] = node.tool
    if node.params:
        out["inputs"] = ", ".join(p.name + ("?" if p.optional else "") for p in node.params)
    if node.message:
        out["says"] = node.message
    if node.expects:
        out["expects"] = node.expects
    if node.call:
        out["runs"] = node.call
    return out


def _text_node(node: Node, sop: Sop, index: _TextIndex) -> CanvasNode:
    kind = kind_of(node, sop)
    if node.id == "end":
        return CanvasNode("end", "end", "End", 0, {}, {}, implicit=True)
    if kind == "decision":
        group = index.group(node.line)
        branches = [{"condition": None if _is_else(ln) else _strip_if(ln.condition), "line": ln.no} for ln in group]
        first = next((b["condition"] for b in branches if b["condition"]), "")
        return CanvasNode(node.id, kind, f"{first}?", node.line, {"branches": branches})
    if kind == "end":
        return CanvasNode(node.id, kind, node.text, node.line, {})
    if kind == "call":
        return CanvasNode(node.id, kind, node.text, node.line, {"call": node.call}, _details(node))
    return CanvasNode(node.id, kind, node.text, node.line, {"action": node.text}, _details(node))


def _json_node(node: Node, sop: Sop, raw: dict[str, Any]) -> CanvasNode:
    kind = kind_of(node, sop)
    fields: dict[str, Any] = {}
    for name, key in JSON_FIELDS.items():
        value = raw.get(key)
        if value is not None:
            fields[name] = value if isinstance(value, dict) else str(value)
    label = str(raw.get("description") or node.id)
    if kind == "decision":
        label = f"{raw.get('condition') or label}?"
    elif kind == "end":
        label = str(raw.get("description") or "End")
    return CanvasNode(node.id, kind, label, node.line, fields, _details(node))


def _layout(canvas: Canvas) -> None:
    """Layers by the longest path from the start (arrows going back up do not count), side by side in the
    order the flow meets them; steps the start does not reach come last."""
    out: dict[str, list[str]] = {nid: [] for nid in canvas.nodes}
    for e in canvas.edges:
        if e.source in out and e.target in canvas.nodes and e.target not in out[e.source]:
            out[e.source].append(e.target)
    state: dict[str, int] = {}
    post: list[str] = []
    back: set[tuple[str, str]] = set()
    seen_order: list[str] = []
    for root in [canvas.start, *canvas.nodes]:
        if root not in out or root in state:
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        state[root] = 1
        seen_order.append(root)
        while stack:
            nid, i = stack.pop()
            if i < len(out[nid]):
                stack.append((nid, i + 1))
                t = out[nid][i]
                if state.get(t) == 1:
                    back.add((nid, t))
                elif t not in state:
                    state[t] = 1
                    seen_order.append(t)
                    stack.append((t, 0))
            else:
                state[nid] = 2
                post.append(nid)
    layer = {nid: 0 for nid in out}
    for nid in reversed(post):
        for t in out[nid]:
            if (nid, t) not in back:
                layer[t] = max(layer[t], layer[nid] + 1)
    rows: dict[int, list[str]] = {}
    for nid in seen_order:
        rows.setdefault(layer[nid], []).append(nid)
    for depth, ids in rows.items():
        for i, nid in enumerate(ids):
            canvas.nodes[nid].x = (i - (len(ids) - 1) / 2) * GAP_X
            canvas.nodes[nid].y = depth * GAP_Y


# ---------------------------------------------------------------------------------------------- conditions
def build_condition(left: str, op: str, value: str, fmt: Format) -> str:
    """A condition from the expression builder: a value, an operator, a value to compare with
    (``order.status``, ``==``, ``delivered`` -> ``context.order.status == 'delivered'`` in JSON)."""
    if op not in OPERATORS:
        raise CanvasError(f"the operator must be one of {', '.join(OPERATORS)}, got {op!r}")
    path = left.strip()
    if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", path):
        raise CanvasError(f"{left!r} is not a value name (letters, digits and _, parts joined by '.')")
    if fmt == "json" and not path.startswith("context."):
        path = f"context.{path}"
    raw = value.strip()
    if re.fullmatch(r"-?\d+(\.\d+)?%?|true|false|null|today|\d{4}-\d{2}-\d{2}", raw, re.I) or (
            raw[:1] in "'\"" and raw[-1:] == raw[:1] and len(raw) > 1):
        shown = raw.lower() if raw.lower() in ("true", "false", "null", "today") else raw
    else:
        shown = f'"{raw}"' if "'" in raw else f"'{raw}'"
    return f"{path} {op} {shown}"


def check_condition(text: str, fmt: Format) -> ConditionCheck:
    """Whether a condition compiles. A text SOP may word a condition (``if the order is delivered``):
    decided from what the step before returned; an expression must parse (errors with their column)."""
    cond = _strip_if(text.strip().rstrip(":").strip())
    if not cond:
        return ConditionCheck(False, "write a condition", 1)
    if fmt == "text" and not expr.is_expression(cond):
        return ConditionCheck(True, "in words: decided from what the step before returned")
    try:
        expr.parse(cond)
    except expr.ExprError as exc:
        return ConditionCheck(False, str(exc), exc.column)
    return ConditionCheck(True, "the expression parses")


# ---------------------------------------------------------------------------------------------- edits
def add_step(canvas: Canvas, after: str, kind: Kind, fields: dict[str, Any], branch: int | None = None) -> Edit:
    """A new step of ``kind`` after step ``after`` (after a decision: first on its branch ``branch``; with
    no branch, where its branches meet again)."""
    if kind not in KINDS:
        raise CanvasError(f"unknown kind of step {kind!r}")
    node = _node(canvas, after)
    if node.kind == "end":
        raise CanvasError("nothing runs after an end: add the step before it")
    if kind == "decision":
        _require_condition(fields, canvas.format)
    if canvas.format == "json":
        return _pinned(canvas, _json_add(canvas, node, kind, fields, branch))
    return _text_add(canvas, node, kind, fields, branch)


def connect(canvas: Canvas, source_id: str, target_id: str, branch: int | None = None) -> Edit:
    """Lead step ``source_id`` (a decision: its branch ``branch``, default the first) to ``target_id``."""
    node = _node(canvas, source_id)
    target = _node(canvas, target_id)
    if node.kind == "end":
        raise CanvasError("an end has no way on to connect")
    if node.kind == "decision" and branch is None:
        branch = 0
    if canvas.target(source_id, branch) == target_id:
        return Edit(canvas.source, source_id)
    if canvas.format == "json":
        return _pinned(canvas, Edit(_json_connect(canvas.source, source_id, target_id, branch), source_id))
    return _text_connect(canvas, node, target, branch)


def update_step(canvas: Canvas, node_id: str, fields: dict[str, Any], branch: int | None = None) -> Edit:
    """Change a step's fields (a text decision: the condition of its branch ``branch``, default the first)."""
    node = _node(canvas, node_id)
    if canvas.format == "json":
        return _pinned(canvas, Edit(_json_update(canvas, node, fields), node_id),
                       keep={node_id} if "result_key" in fields else set())
    return Edit(_text_update(canvas, node, fields, branch), node_id)


def delete_step(canvas: Canvas, node_id: str) -> Edit:
    """Remove a step; what led to it goes on to where it went (a decision: to its first branch)."""
    node = _node(canvas, node_id)
    if canvas.format == "json":
        return _pinned(canvas, _json_delete(canvas, node))
    return _text_delete(canvas, node)


def declare_slot(canvas: Canvas, name: str, spec: str) -> Edit:
    """Declare what a slot holds in the SOP itself (its ``slots``), e.g. ``confirmed: yes_no``; a slot declared
    so already is left as it is."""
    from core.workspace.slots import type_problem

    name, spec = name.strip(), spec.strip()
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise CanvasError(f"{name!r} is not a slot name (letters, digits and _)")
    wrong = type_problem(spec, None)
    if wrong:
        raise CanvasError(wrong)
    if canvas.sop is not None and canvas.sop.slots.get(name) == spec:
        return Edit(canvas.source)
    if canvas.format == "json":
        doc, _nodes = _doc(canvas.source)
        slots = doc.get("slots")
        if slots is not None and slots.kind == "object":
            return Edit(jsonspan.set_member(canvas.source, slots, name, jsonspan.dump(spec)))
        keys = [m.key for m in doc.members]
        anchor = next((k for k in ("triggers", "priority", "agent", "version", "description", "name", "id")
                       if k in keys), None)
        return Edit(jsonspan.set_member(canvas.source, doc, "slots", jsonspan.dump({name: spec}), after=anchor))
    return Edit(_front_matter_slot(canvas.source, name, spec))


def declare_after(canvas: Canvas, edit: Edit, name: str, spec: str) -> Edit:
    """``edit`` followed by :func:`declare_slot` on its result (the step it selects kept)."""
    again = open_canvas(edit.source, canvas.format, canvas.file, canvas.resolver)
    return Edit(declare_slot(again, name, spec).source, edit.selected)


def _front_matter_slot(source: str, name: str, spec: str) -> str:
    """A text SOP's front matter with ``name: spec`` under ``slots:`` (the key written when it is missing)."""
    raw = source.splitlines(keepends=True)
    nl = "\r\n" if "\r\n" in source else "\n"
    if not raw or raw[0].strip() != "---":
        return f"---{nl}slots: {{{name}: {spec}}}{nl}---{nl}" + source
    close = next((i for i in range(1, len(raw)) if raw[i].strip() == "---"), None)
    if close is None:
        raise CanvasError("the front matter has no closing '---'")
    at = next((i for i in range(1, close) if re.match(r"slots\s*:", raw[i])), None)
    if at is None:
        return "".join(raw[:close] + [f"slots: {{{name}: {spec}}}{nl}"] + raw[close:])
    line = raw[at].rstrip("\r\n")
    ending = raw[at][len(line):]
    inline = re.match(r"(slots\s*:\s*\{)(.*)\}\s*$", line)
    if inline:
        items = [x for x in (i.strip() for i in inline.group(2).split(",")) if x and not x.startswith(f"{name}:")]
        raw[at] = f"{inline.group(1)}{', '.join([*items, f'{name}: {spec}'])}}}{ending}"
        return "".join(raw)
    block = [i for i in range(at + 1, close) if raw[i][:1] in (" ", "\t")]
    lead = re.match(r"[ \t]*", raw[block[0]]).group(0) if block else "  "  # type: ignore[union-attr]
    for i in block:
        if re.match(rf"[ \t]*{re.escape(name)}\s*:", raw[i]):
            raw[i] = f"{lead}{name}: {spec}{raw[i][len(raw[i].rstrip(chr(13) + chr(10))):]}"
            return "".join(raw)
    end = block[-1] + 1 if block else at + 1
    return "".join(raw[:end] + [f"{lead}{name}: {spec}{nl}"] + raw[end:])


def _node(canvas: Canvas, node_id: str) -> CanvasNode:
    node = canvas.nodes.get(node_id)
    if node is None:
        raise CanvasError(f"there is no step {node_id!r} in {canvas.file}")
    return node


def _require_condition(fields: dict[str, Any], fmt: Format) -> str:
    cond = str(fields.get("condition") or "").strip()
    check = check_condition(cond, fmt)
    if not check.ok:
        raise CanvasError(f"condition {cond!r}: {check.message}")
    return _strip_if(cond.rstrip(":").strip())


def _text_of(fields: dict[str, Any], key: str, what: str) -> str:
    value = " ".join(str(fields.get(key) or "").split())
    if not value:
        raise CanvasError(f"choose {what}")
    if value.endswith(":"):
        raise CanvasError(f"{value!r} ends with ':', which makes it a condition; leave the ':' out")
    return value


# ---------------------------------------------------------------------------------------------- text SOPs
class _TextIndex:
    """The indented lines of a text SOP: each line's place in the tree, by line number."""

    def __init__(self, source: str, file: str) -> None:
        self.raw = source.splitlines(keepends=True)
        self.newline = "\r\n" if "\r\n" in source else "\n"
        _meta, body, offset, _p = split_front_matter(source, file)
        self.tree, _p2 = build_tree(body, offset, file)
        self.root = Line(0, -1, "<root>", self.tree)
        self.parent: dict[int, Line] = {}
        self.line: dict[int, Line] = {}
        todo = [self.root]
        while todo:
            ln = todo.pop()
            for child in ln.children:
                self.parent[child.no] = ln
                self.line[child.no] = child
                todo.append(child)
        self.unit = self._unit()

    def _unit(self) -> str:
        for no, ln in sorted(self.line.items()):
            if ln.children:
                outer, inner = self.lead(no), self.lead(ln.children[0].no)
                if inner.startswith(outer) and len(inner) > len(outer):
                    return inner[len(outer):]
        return "    "

    def lead(self, no: int) -> str:
        text = self.raw[no - 1].rstrip("\r\n")
        return text[: len(text) - len(text.lstrip())]

    def siblings(self, no: int) -> list[Line]:
        return self.parent[no].children

    def group(self, no: int) -> list[Line]:
        """The condition lines of the decision written at line ``no`` (``if``, more ``if``s, ``else``)."""
        sibs = self.siblings(no)
        i = next(i for i, s in enumerate(sibs) if s.no == no)
        group = [sibs[i]]
        for s in sibs[i + 1 :]:
            if not s.is_condition or _is_else(group[-1]):
                break
            group.append(s)
        return group

    def end_of(self, line: Line) -> int:
        """The last line number of a line's block (the line itself for a step)."""
        while line.children:
            line = line.children[-1]
        return line.no

    def child_lead(self, line: Line) -> str:
        return self.lead(line.children[0].no) if line.children else self.lead(line.no) + self.unit

    def insert(self, after: int, lines: list[str]) -> str:
        """The source with ``lines`` (leads included) inserted after line ``after`` (0: before the body)."""
        raw = list(self.raw)
        nl = self.newline
        ends_open = bool(raw) and not raw[-1].endswith(("\n", "\r"))
        if after == len(raw) and ends_open:
            raw[-1] += nl
            new = [ln + nl for ln in lines]
            new[-1] = new[-1][: -len(nl)]
        else:
            new = [ln + nl for ln in lines]
        return "".join(raw[:after] + new + raw[after:])

    def without(self, numbers: set[int], replace: dict[int, str] | None = None) -> str:
        """The source without the lines ``numbers`` and with the lines of ``replace`` rewritten (ending kept)."""
        out: list[str] = []
        for no, text in enumerate(self.raw, start=1):
            if no in numbers:
                continue
            if replace and no in replace:
                ending = text[len(text.rstrip("\r\n")):]
                text = replace[no] + ending
            out.append(text)
        if out and self.raw and not self.raw[-1].endswith(("\n", "\r")) and len(self.raw) in numbers:
            out[-1] = out[-1].rstrip("\r\n")  # the file ended without a line break: so it still does
        return "".join(out)


def _is_else(line: Line) -> bool:
    return line.is_condition and ELSE.match(line.text) is not None


def _strip_if(cond: str) -> str:
    return re.sub(r"^(if|elif|else if|when|in case)\s+", "", cond.strip(), flags=re.I).strip()


def _text_lines(kind: Kind, fields: dict[str, Any], fmt_unit: str) -> list[str]:
    """The lines (leads relative to the step's own) a new step of ``kind`` writes."""
    if kind == "end":
        return [TERMINATE_LINE]
    if kind == "call":
        return [f"call {_text_of(fields, 'call', 'the SOP to run')}"]
    if kind == "decision":
        cond = _require_condition(fields, "text")
        return [f"if {cond}:", fmt_unit + TERMINATE_LINE]
    if kind == "handoff":  # a step of its own: the procedure ends with it, no GAR row needed
        return [_handoff_words(fields)]
    return [_text_of(fields, "action", "an action from the GAR")]


def _handoff_words(fields: dict[str, Any]) -> str:
    words = " ".join(str(fields.get("action") or "").split()) or "hand off to a person"
    if not HANDOFF.match(words):
        raise CanvasError(f"{words!r} is not worded as a hand-off: start it with 'hand off' or 'escalate', or "
                          "write 'transfer … to a person' (or to a team, an agent, a supervisor)")
    return words


def _text_add(canvas: Canvas, node: CanvasNode, kind: Kind, fields: dict[str, Any], branch: int | None) -> Edit:
    idx = _TextIndex(canvas.source, canvas.file)
    lines = _text_lines(kind, fields, idx.unit)
    if node.kind != "decision":
        if node.implicit or node.line not in idx.line:
            raise CanvasError("nothing runs after an end: add the step before it")
        at, lead = node.line, idx.lead(node.line)
        new: list[str] = [lead + ln for ln in lines]
    else:
        group = idx.group(node.line)
        if branch is not None and branch < len(group):
            cond_line = group[branch]
            at, lead = cond_line.no, idx.child_lead(cond_line)
            new = [lead + ln for ln in lines]
        elif branch is not None:  # the unwritten "otherwise": an else of its own
            at, lead = idx.end_of(group[-1]), idx.lead(node.line)
            new = [lead + "else:"] + [lead + idx.unit + ln for ln in lines]
        else:
            at, lead = idx.end_of(group[-1]), idx.lead(node.line)
            new = [lead + ln for ln in lines]
    if kind == "decision":
        _refuse_merge(*_neighbours(idx, node, branch), new_cond=Line(0, 0, new[0].strip()))
    first_new = at + 1 + (1 if new[0].strip() == "else:" else 0)
    prefix = {"decision": "d", "end": "end"}.get(kind, "s")
    return Edit(idx.insert(at, new), f"{prefix}{first_new}")


def _exit_lines(idx: _TextIndex, node: CanvasNode, branch: int | None) -> tuple[int, str, Line | None]:
    """Where a step's way on is written: the line after which a line leading elsewhere goes, its lead, and the
    condition line whose block it starts (None after a step or after a whole decision)."""
    if node.kind != "decision":
        return node.line, idx.lead(node.line), None
    group = idx.group(node.line)
    if branch is not None and branch < len(group):
        return group[branch].no, idx.child_lead(group[branch]), group[branch]
    return idx.end_of(group[-1]), idx.lead(node.line), None


def _text_connect(canvas: Canvas, node: CanvasNode, target: CanvasNode, branch: int | None) -> Edit:
    idx = _TextIndex(canvas.source, canvas.file)
    now = canvas.nodes.get(canvas.target(node.id, branch) or "")
    if target.kind == "end":
        if now is not None and now.kind == "end":
            return Edit(canvas.source, node.id)
        at, lead, _cond = _exit_lines(idx, node, branch)
        if node.kind == "decision" and branch is not None and branch >= len(idx.group(node.line)):
            return Edit(idx.insert(at, [lead + "else:", lead + idx.unit + TERMINATE_LINE]), node.id)
        return Edit(idx.insert(at, [lead + TERMINATE_LINE]), node.id)
    if now is not None and now.kind == "end" and not now.implicit:
        # a terminate line written right at this way on: without it the flow goes on below
        tried = _try_delete_line(canvas, idx, now)
        if tried is not None:
            moved = _shifted(target, now.line)
            again = open_canvas(tried, "text", canvas.file, canvas.resolver)
            new_id = _shifted(node, now.line)
            if again.target(new_id, branch) == moved:
                return Edit(tried, new_id)
    raise CanvasError("a text SOP goes from a step to the step written under it, so this arrow cannot be "
                      "written in text: lead it to an end, move the steps in the text view, or use a JSON SOP "
                      "for free arrows")


def _shifted(node: CanvasNode, removed: int) -> str:
    """A text step's id once line ``removed`` is gone (ids carry their line number)."""
    if node.implicit or node.line < removed:
        return node.id
    return re.sub(r"\d+$", str(node.line - 1), node.id)


def _try_delete_line(canvas: Canvas, idx: _TextIndex, node: CanvasNode) -> str | None:
    try:
        return _text_delete(canvas, node, idx).source
    except CanvasError:
        return None


def _text_update(canvas: Canvas, node: CanvasNode, fields: dict[str, Any], branch: int | None) -> str:
    idx = _TextIndex(canvas.source, canvas.file)
    if node.implicit or node.kind == "end":
        raise CanvasError("an end has nothing to edit")
    if node.kind == "decision":
        group = idx.group(node.line)
        line = group[branch or 0] if (branch or 0) < len(group) else None
        if line is None or _is_else(line):
            raise CanvasError("'else' has no condition to edit")
        cond = _require_condition(fields, "text")
        old = _strip_if(line.condition)
        if cond == old:
            return canvas.source
        raw = idx.raw[line.no - 1].rstrip("\r\n")
        at = raw.rfind(old)
        return idx.without(set(), {line.no: raw[:at] + cond + raw[at + len(old):]})
    text = f"call {_text_of(fields, 'call', 'the SOP to run')}" if node.kind == "call" and "call" in fields \
        else _handoff_words(fields) if node.kind == "handoff" else _text_of(fields, "action", "an action from the GAR")
    if text == idx.line[node.line].text:
        return canvas.source
    return idx.without(set(), {node.line: idx.lead(node.line) + text})


def _text_delete(canvas: Canvas, node: CanvasNode, idx: _TextIndex | None = None) -> Edit:
    idx = idx or _TextIndex(canvas.source, canvas.file)
    if node.implicit:
        raise CanvasError("the end after the last step is where every SOP stops; it cannot be removed")
    line = idx.line[node.line]
    parent = idx.parent[node.line]
    sibs = idx.siblings(line.no)
    at = sibs.index(line)
    if node.kind != "decision":
        gone = [line]
        if node.kind == "handoff" and at + 1 < len(sibs) and TERMINATE.match(sibs[at + 1].text):
            gone.append(sibs[at + 1])  # its own "terminate the flow" goes with it
        numbers = {g.no for g in gone}
        if parent is not idx.root and all(c.no in numbers for c in parent.children):
            if not _is_else(parent):
                raise CanvasError(f"{line.text!r} is the only step under {parent.text!r}: add another step there "
                                  "first, or remove the decision")
            numbers.add(parent.no)
        else:
            _refuse_merge(sibs[at - 1] if at > 0 else None, sibs[at + len(gone)] if at + len(gone) < len(sibs)
                          else None)
        return Edit(idx.without(numbers), None)
    group = idx.group(node.line)
    first = group[0]
    keep_lead, inner = idx.lead(first.no), idx.child_lead(first)
    replace: dict[int, str] = {}
    for no in range(first.no + 1, idx.end_of(first) + 1):
        text = idx.raw[no - 1].rstrip("\r\n")
        if text.startswith(inner):
            replace[no] = keep_lead + text[len(inner):]
    dropped = {first.no} | {no for g in group[1:] for no in range(g.no, idx.end_of(g) + 1)}
    at = sibs.index(first)
    prev = sibs[at - 1] if at > 0 else None
    nxt = sibs[at + len(group)] if at + len(group) < len(sibs) else None
    kept = first.children
    if kept:
        _refuse_merge(prev, kept[0])
        _refuse_merge(kept[-1], nxt)
    else:
        _refuse_merge(prev, nxt)
    return Edit(idx.without(dropped, replace), None)


def _neighbours(idx: _TextIndex, node: CanvasNode, branch: int | None) -> tuple[Line | None, Line | None]:
    """The lines written just before and after a step added after ``node`` (on its branch ``branch``)."""
    if node.kind != "decision":
        sibs = idx.siblings(node.line)
        at = sibs.index(idx.line[node.line])
        return sibs[at], sibs[at + 1] if at + 1 < len(sibs) else None
    group = idx.group(node.line)
    if branch is not None and branch < len(group):
        return None, group[branch].children[0] if group[branch].children else None
    if branch is not None:
        return None, None
    sibs = idx.siblings(node.line)
    at = sibs.index(group[-1])
    return group[-1], sibs[at + 1] if at + 1 < len(sibs) else None


def _refuse_merge(prev: Line | None, nxt: Line | None, new_cond: Line | None = None) -> None:
    """In text, a condition written right after a decision's last ``if`` branch is one more branch of that
    decision: an edit that would put two decisions so is refused (``new_cond``: a condition line written
    between ``prev`` and ``nxt``)."""
    if new_cond is not None:
        _refuse_merge(prev, new_cond)
        _refuse_merge(new_cond, nxt)
        return
    if prev is not None and nxt is not None and prev.is_condition and not _is_else(prev) and nxt.is_condition:
        raise CanvasError(f"in text, {nxt.text!r} written right after the branch {prev.text!r} would become one "
                          "more branch of that decision: put a step between them first")


# ---------------------------------------------------------------------------------------------- JSON SOPs
def _doc(source: str) -> tuple[jsonspan.JVal, jsonspan.JVal]:
    try:
        doc = jsonspan.parse(source)
    except jsonspan.JsonSpanError as exc:
        raise CanvasError(f"the JSON does not parse: {exc}") from exc
    nodes = doc.get("nodes") if doc.kind == "object" else None
    if nodes is None or nodes.kind != "object":
        raise CanvasError("the JSON SOP has no 'nodes' object")
    return doc, nodes


def _new_id(taken: set[str], wanted: str) -> str:
    base = re.sub(r"[^a-z0-9]+", "_", wanted.lower()).strip("_")[:32].strip("_") or "step"
    out, n = base, 2
    while out in taken:
        out, n = f"{base}_{n}", n + 1
    return out


def _json_fields(kind: Kind, fields: dict[str, Any], nxt: str | None) -> dict[str, Any]:
    """A new node's members in the order the engine note writes them."""
    desc = " ".join(str(fields.get("description") or "").split())
    msg = str(fields.get("message") or "").strip()
    out: dict[str, Any] = {"type": kind if kind in ("end", "decision", "handoff") else "action"}
    if kind == "ask":
        slot = str(fields.get("result_key") or "").strip()
        desc = desc or (f"Ask the customer for their {slot.replace('_', ' ')}" if slot else "Ask the customer")
        if not ASK_WORDS.match(desc) and not msg.endswith("?"):
            desc = f"Ask: {desc}"
        out |= {"description": desc,
                "messageTemplate": msg or (f"What is your {slot.replace('_', ' ')}?" if slot else f"{desc}?")}
        if slot:
            out["resultKey"] = slot
    elif kind == "tool":
        tool = _text_of(fields, "tool", "a tool")
        out |= {"description": desc or f"Call {tool}", "tool": tool, "toolParams": dict(fields.get("params") or {})}
        if fields.get("result_key"):
            out["resultKey"] = str(fields["result_key"]).strip()
        if msg:
            out["messageTemplate"] = msg
    elif kind == "handoff":  # the procedure ends with it; its message (optional) comes before the team's reply
        out["description"] = desc or "Hand off to a person"
        if msg:
            out["messageTemplate"] = msg
    elif kind == "message":
        desc = desc or "Tell the customer"
        out |= {"description": desc, "messageTemplate": msg or desc}
    elif kind == "call":
        call = _text_of(fields, "call", "the SOP to run")
        out |= {"description": desc or f"Run {call}", "call": call}
    elif kind == "decision":
        out |= {"description": desc or "Check", "condition": _require_condition(fields, "json")}
    else:
        out["description"] = desc or "Done"
    if kind == "decision":
        out["nextNodes"] = [nxt, nxt]
    elif kind not in ("end", "handoff"):
        out["nextNodes"] = [nxt]
    return out


def _json_add(canvas: Canvas, node: CanvasNode, kind: Kind, fields: dict[str, Any], branch: int | None) -> Edit:
    src = canvas.source
    _doc_, nodes = _doc(src)
    taken = {m.key for m in nodes.members}
    named = {"ask": f"ask_{fields.get('result_key') or 'customer'}", "tool": str(fields.get("tool") or "tool"),
             "call": f"run_{fields.get('call') or 'sop'}", "decision": "check", "end": "end", "handoff": "hand_off",
             "message": "tell"}
    label = str(fields.get("id") or fields.get("description") or named[kind])
    new_id = _new_id(taken, label)
    slot = 0 if node.kind != "decision" else (branch or 0)
    old = canvas.target(node.id, slot if node.kind == "decision" else None)
    if kind not in ("end", "handoff") and old is None:
        raise CanvasError(f"{node.id!r} leads nowhere yet: connect it first")
    members = _json_fields(kind, fields, old)
    src = _set_next(src, node.id, slot, new_id)
    _doc_, nodes = _doc(src)
    like = nodes.get(node.id)
    body = {"id": new_id, **members} if _has_ids(nodes) else members
    text = jsonspan.block(body, like, src) if like is not None else jsonspan.dump(body)
    return Edit(jsonspan.set_member(src, nodes, new_id, text, after=node.id), new_id)


def _pinned(canvas: Canvas, edit: Edit, keep: set[str] | None = None) -> Edit:
    """A JSON ask without ``resultKey`` fills the key the steps after it read, up to the next ask: an edit that
    puts another step there would change what it fills, so such an ask gets the key it filled written on it."""
    before = canvas.sop
    if before is None or edit.source == canvas.source:
        return edit
    after, _problems = compile_sop(edit.source, canvas.file, "json", _NoGar())
    if after is None:
        return edit
    src = edit.source
    for node in before.nodes.values():
        now = after.nodes.get(node.id)
        if not node.asks or len(node.fills) != 1 or now is None or now.fills == node.fills or node.id in (keep or ()):
            continue
        _doc_, nodes = _doc(src)
        obj = nodes.get(node.id)
        if obj is None or obj.kind != "object" or obj.get("resultKey") is not None:
            continue
        before_next = [m.key for m in obj.members if m.key != "nextNodes"]
        src = jsonspan.set_member(src, obj, "resultKey", jsonspan.dump(node.fills[0].name),
                                  after=before_next[-1] if before_next else None)
    return Edit(src, edit.selected)


def _has_ids(nodes: jsonspan.JVal) -> bool:
    """Whether the file repeats each node's id inside it (the engine note does; some authors do not)."""
    objs = [m.value for m in nodes.members if m.value.kind == "object"]
    return not objs or any(o.get("id") is not None for o in objs)


def _set_next(src: str, node_id: str, slot: int, target: str) -> str:
    _doc_, nodes = _doc(src)
    obj = nodes.get(node_id)
    if obj is None or obj.kind != "object":
        raise CanvasError(f"there is no node {node_id!r}")
    nxt = obj.get("nextNodes")
    if nxt is not None and nxt.kind == "array" and slot < len(nxt.items):
        return jsonspan.replace(src, nxt.items[slot], jsonspan.dump(target))
    items = [i.plain() for i in nxt.items] if nxt is not None and nxt.kind == "array" else []
    while len(items) < slot:
        items.append(target)
    items.append(target)
    return jsonspan.set_member(src, obj, "nextNodes", jsonspan.dump(items))


def _json_connect(src: str, source_id: str, target_id: str, branch: int | None) -> str:
    return _set_next(src, source_id, branch or 0, target_id)


def _json_update(canvas: Canvas, node: CanvasNode, fields: dict[str, Any]) -> str:
    src = canvas.source
    if node.kind == "decision" and "condition" in fields:
        fields = {**fields, "condition": _require_condition(fields, "json")}
    for name, value in fields.items():
        key = JSON_FIELDS.get(name)
        if key is None:
            raise CanvasError(f"a JSON step has no field {name!r}")
        _doc_, nodes = _doc(src)
        obj = nodes.get(node.id)
        if obj is None or obj.kind != "object":
            raise CanvasError(f"there is no node {node.id!r}")
        now = obj.get(key)
        empty = value is None or value == "" or value == {}
        if empty:
            if now is not None and key not in ("description",):
                src = jsonspan.remove_member(src, obj, key)
            continue
        if now is not None and now.plain() == value:
            continue
        before = [m.key for m in obj.members if m.key != "nextNodes"]
        src = jsonspan.set_member(src, obj, key, jsonspan.dump(value), after=before[-1] if before else None)
    return src


def _json_delete(canvas: Canvas, node: CanvasNode) -> Edit:
    src = canvas.source
    doc, nodes = _doc(src)
    if node.kind == "end" or (node.kind == "handoff" and not canvas.out(node.id)):  # where the procedure ends
        succ = next((n.id for n in canvas.nodes.values() if n.kind == "end" and n.id != node.id), None)
    elif node.kind == "decision":  # the branch that still reaches an end without it (the first when both do)
        ways = [canvas.target(node.id, i) for i in (0, 1)]
        succ = next((w for w in ways if w and _ends(canvas, w, node.id)), ways[0])
    else:
        succ = canvas.target(node.id)
    refs: list[jsonspan.JVal] = []
    for m in nodes.members:
        nxt = m.value.get("nextNodes") if m.value.kind == "object" and m.key != node.id else None
        if nxt is not None and nxt.kind == "array":
            refs += [i for i in nxt.items if i.value == node.id]
    start = doc.get("startNode")
    if start is not None and start.value == node.id:
        refs.append(start)
    if refs and (succ is None or succ == node.id):
        raise CanvasError(f"steps lead to {node.id!r} and it has no way on to give them: connect them "
                          "elsewhere first")
    for val in sorted(refs, key=lambda v: v.start, reverse=True):
        src = jsonspan.replace(src, val, jsonspan.dump(succ))
    _doc_, nodes = _doc(src)
    return Edit(jsonspan.remove_member(src, nodes, node.id), succ)


def _ends(canvas: Canvas, start: str, without: str) -> bool:
    """Whether an end is reachable from ``start`` without passing step ``without``."""
    seen, todo = set(), [start]
    while todo:
        nid = todo.pop()
        if nid in seen or nid == without or nid not in canvas.nodes:
            continue
        if canvas.nodes[nid].kind == "end" or (canvas.nodes[nid].kind == "handoff" and not canvas.out(nid)):
            return True
        seen.add(nid)
        todo += [e.target for e in canvas.out(nid)]
    return False


def lint_errors(canvas: Canvas, source: str) -> list[Problem]:
    """The errors of ``source`` compiled on its own (what an edit must not add)."""
    return errors(open_canvas(source, canvas.format, canvas.file, canvas.resolver).problems)
