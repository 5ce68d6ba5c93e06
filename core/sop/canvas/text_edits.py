"""Canvas edits written into a text SOP: a line inserted, rewritten or removed, leads and line endings kept.
A text SOP goes from a step to the one written under it, so only arrows to an end (or back onto the step
below when a ``terminate`` stood in between) can be written."""

from __future__ import annotations

import re
from typing import Any

from core.sop.canvas.conditions import _require_condition, _strip_if
from core.sop.canvas.drawing import open_canvas
from core.sop.canvas.model import TERMINATE_LINE, Canvas, CanvasError, CanvasNode, Edit, Kind, _text_of
from core.sop.canvas.text_index import _is_else, _TextIndex
from core.sop.parse_text import HANDOFF, TERMINATE, Line


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
