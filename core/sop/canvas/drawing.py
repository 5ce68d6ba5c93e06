"""An SOP's source read into a canvas through the same compiler the engine uses, so a step looks on the
canvas as the engine runs it, each step labelled by what it does. The drawing is laid out where it is drawn
(ui/canvas.py: the flow component's layered layout, sized to each step as shown)."""

from __future__ import annotations

from typing import Any

from core.sop import jsonspan
from core.sop.canvas.conditions import _strip_if
from core.sop.canvas.model import JSON_FIELDS, Canvas, CanvasEdge, CanvasNode, Format, Kind
from core.sop.canvas.text_index import _is_else, _TextIndex
from core.sop.graph import Node, Sop
from core.sop.load import compile_sop
from core.sop.parse_text import HANDOFF, GarResolver

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
    label = str(raw.get("description") or "") or what_it_does(kind, node)
    if kind == "decision":
        label = f"{raw.get('condition') or label}?"
    return CanvasNode(node.id, kind, label, node.line, fields, _details(node))


def what_it_does(kind: Kind, node: Node) -> str:
    """A step's label when its author gave it none: what it does, never its id ("Hand off to a person: Our
    team will call you", "Call orders.lookup", "Ask for order_id")."""
    said = _short(node.message)
    if kind == "end":
        return "End"
    if kind == "handoff":
        return "Hand off to a person" + (f": {said}" if said else "")
    if kind == "call":
        return f"Run {node.call}"
    if kind == "tool" and node.tool:
        return f"Call {node.tool}"
    if kind == "ask":
        return said or "Ask for " + (", ".join(p.name for p in node.fills) or "an answer")
    if kind == "decision":
        return "Decide"
    return f"Say: {said}" if said else "Message"


def _short(text: str, size: int = 60) -> str:
    words = " ".join((text or "").split())
    return words if len(words) <= size else words[:size - 1].rstrip() + "…"

