"""Canvas edits written into a JSON SOP: members set, replaced or removed in place (comments, key order and
indentation kept), arrows as ``nextNodes``."""

from __future__ import annotations

import re
from typing import Any

from core.sop import jsonspan
from core.sop.canvas.conditions import _require_condition
from core.sop.canvas.drawing import _NoGar
from core.sop.canvas.model import JSON_FIELDS, Canvas, CanvasError, CanvasNode, Edit, Kind, _text_of
from core.sop.load import compile_sop
from core.sop.parse_json import ASK_WORDS


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
