"""The edits the canvas offers: a step added, an arrow led, a step changed or removed, a slot declared; each
a small change of the SOP's source (core/sop/canvas/text_edits.py, json_edits.py)."""

from __future__ import annotations

import re
from typing import Any

from core.sop import jsonspan
from core.sop.canvas.conditions import _require_condition
from core.sop.canvas.drawing import open_canvas
from core.sop.canvas.json_edits import _doc, _json_add, _json_connect, _json_delete, _json_update, _pinned
from core.sop.canvas.model import KINDS, Canvas, CanvasError, Edit, Kind, _node
from core.sop.canvas.text_edits import _front_matter_slot, _text_add, _text_connect, _text_delete, _text_update


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
