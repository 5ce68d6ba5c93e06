"""An SOP's source read into a canvas through the same compiler the engine uses, so a step looks on the
canvas as the engine runs it; the steps laid out in layers from the start."""

from __future__ import annotations

from typing import Any

from core.sop import jsonspan
from core.sop.canvas.conditions import _strip_if
from core.sop.canvas.model import JSON_FIELDS, Canvas, CanvasEdge, CanvasNode, Format, Kind
from core.sop.canvas.text_index import _is_else, _TextIndex
from core.sop.graph import Node, Sop
from core.sop.load import compile_sop
from core.sop.parse_text import HANDOFF, GarResolver

GAP_X, GAP_Y = 270.0, 120.0


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
