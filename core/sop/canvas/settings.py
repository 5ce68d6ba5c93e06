"""A procedure's own settings (id, title, description, agent, triggers) read from its source and written back
into it in its own format: a text SOP's front matter or a JSON SOP's top-level members.

Like every canvas edit, only what changed is rewritten: a setting left as it was keeps its line (its quoting,
its comment, its wrapping), a trigger removed takes its line away and a trigger added goes under the last one,
so the version diff shows the change and nothing else.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

import yaml

from core.sop import jsonspan
from core.sop.canvas.model import CanvasError, Format
from core.sop.parse_text import split_front_matter

SCALARS = ("id", "title", "description", "agent")
JSON_KEYS = {"id": "id", "title": "name", "description": "description", "agent": "agent", "triggers": "triggers"}
TEXT_ORDER = ("id", "title", "description", "agent", "triggers")


@dataclass(frozen=True)
class ProcedureSettings:
    """What a procedure says about itself; '' (or no triggers) for a setting it leaves out."""

    id: str = ""
    title: str = ""
    description: str = ""
    agent: str = ""
    triggers: tuple[str, ...] = ()

    def cleaned(self) -> ProcedureSettings:
        """The settings with spaces trimmed, blank and repeated triggers dropped.

        Raises:
            CanvasError: an id that is not dotted words (``support.report_damage``), or an agent name with spaces.
        """
        out = ProcedureSettings(self.id.strip(), " ".join(self.title.split()), self.description.strip(),
                                self.agent.strip(),
                                tuple(dict.fromkeys(t for t in (" ".join(x.split()) for x in self.triggers) if t)))
        if out.id and not re.fullmatch(r"[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*", out.id):
            raise CanvasError(f"{out.id!r} is not an id: words of letters, digits and _ joined by dots "
                              "(support.report_damage)")
        if out.agent and not re.fullmatch(r"[A-Za-z_][\w-]*", out.agent):
            raise CanvasError(f"{out.agent!r} is not an agent name: one word of letters, digits and _")
        return out

    def with_trigger(self, phrase: str) -> ProcedureSettings:
        """These settings with one more trigger (a blank or repeated one changes nothing)."""
        return replace(self, triggers=(*self.triggers, phrase)).cleaned()

    def without_trigger(self, phrase: str) -> ProcedureSettings:
        """These settings without the trigger ``phrase``."""
        return replace(self, triggers=tuple(t for t in self.triggers if t != phrase))


def read_settings(source: str, fmt: Format) -> ProcedureSettings:
    """The settings an SOP's source gives (what it leaves out, or cannot be read, as '')."""
    if fmt == "json":
        try:
            data = json.loads(source)
        except json.JSONDecodeError:
            return ProcedureSettings()
        data = data if isinstance(data, dict) else {}
    else:
        data, _body, _offset, _problems = split_front_matter(source, "")
    values = {name: data.get(JSON_KEYS[name] if fmt == "json" else name) for name in SCALARS}
    triggers = data.get("triggers")
    return ProcedureSettings(**{k: str(v) if isinstance(v, str | int | float) else "" for k, v in values.items()},
                             triggers=tuple(str(t) for t in triggers) if isinstance(triggers, list) else ())


def write_settings(source: str, fmt: Format, settings: ProcedureSettings) -> str:
    """``source`` with ``settings`` written into it, every other line kept as it was.

    Raises:
        CanvasError: settings that are not valid (see :meth:`ProcedureSettings.cleaned`), or a source whose
            settings cannot be read to change them (JSON that does not parse, front matter without its end).
    """
    new = settings.cleaned()
    if not new.id:
        raise CanvasError("a procedure needs an id (support.report_damage, say)")
    old = read_settings(source, fmt)
    out = _write_json(source, old, new) if fmt == "json" else _write_text(source, old, new)
    if read_settings(out, fmt) != new:  # read back as the engine reads it
        raise CanvasError("the settings would not read back as written; change them in the text view")
    return out


# ---------------------------------------------------------------------------------------------- JSON
def _write_json(source: str, old: ProcedureSettings, new: ProcedureSettings) -> str:
    for name in (*SCALARS, "triggers"):
        value: Any = getattr(new, name)
        if value == getattr(old, name):
            continue
        try:
            doc = jsonspan.parse(source)
        except jsonspan.JsonSpanError as exc:
            raise CanvasError(f"the SOP is not valid JSON ({exc}); fix it in the text view") from exc
        key = JSON_KEYS[name]
        if not value and name != "id":
            source = jsonspan.remove_member(source, doc, key)
            continue
        if name == "triggers":
            was = doc.get("triggers")
            edited = _json_items(source, was, list(value)) if was is not None and was.kind == "array" else None
            if edited is not None:
                source = edited
                continue
        text = _json_list(source, doc, list(value)) if name == "triggers" else jsonspan.dump(value)
        anchor = {"title": "id", "description": "name", "agent": "version", "triggers": "priority"}.get(name)
        keys = [m.key for m in doc.members]
        if anchor not in keys:
            anchor = next((k for k in ("priority", "agent", "version", "description", "name", "id") if k in keys), None)
        source = jsonspan.set_member(source, doc, key, text, after=anchor)
    return source


def _json_items(source: str, arr: jsonspan.JVal, wanted: list[str]) -> str | None:
    """The trigger array with the items no longer wanted taken out and the new ones added after the last
    (the array's wrapping kept); None when that cannot give the list wanted (reordered, the first one gone)."""
    present = [i.plain() for i in arr.items]
    if not present or present[0] not in wanted or not all(isinstance(p, str) for p in present):
        return None
    if [t for t in present if t in wanted] != [t for t in wanted if t in present]:
        return None
    added = "".join(", " + jsonspan.dump(t) for t in wanted if t not in present)
    at = arr.items[-1].end
    text = source[:at] + added + source[at:]
    for idx in range(len(arr.items) - 1, 0, -1):
        if present[idx] not in wanted:
            text = text[: arr.items[idx - 1].end] + text[arr.items[idx].end :]
    return text


def _json_list(source: str, doc: jsonspan.JVal, items: list[str]) -> str:
    """The triggers as a JSON array, one per line when the file writes its triggers on several lines."""
    was = doc.member("triggers")
    if was is None or "\n" not in source[was.value.start : was.value.end]:
        return jsonspan.dump(items)
    lead = jsonspan.line_indent(source, was.key_start) + "  "
    return "[\n" + ",\n".join(lead + jsonspan.dump(t) for t in items) + "\n" + lead[:-2] + "]"


# ---------------------------------------------------------------------------------------------- text
def _write_text(source: str, old: ProcedureSettings, new: ProcedureSettings) -> str:
    nl = "\r\n" if "\r\n" in source else "\n"
    lines = source.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        lines = [f"---{nl}", f"---{nl}", *lines]
    close = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if close is None:
        raise CanvasError("the front matter has no closing '---'; fix it in the text view")
    head = lines[1:close]
    for name in TEXT_ORDER:
        value = getattr(new, name)
        if value != getattr(old, name):
            head = _set_key(head, name, value, nl)
    return "".join([lines[0], *head, *lines[close:]])


def _span(head: list[str], key: str) -> tuple[int, int] | None:
    """(the key's line, the line after its block: indented lines and comments under it) in front matter."""
    at = next((i for i, ln in enumerate(head) if re.match(rf"{re.escape(key)}\s*:", ln)), None)
    if at is None:
        return None
    end = at + 1
    while end < len(head) and (not head[end].strip() or head[end][:1] in (" ", "\t", "-")
                               or head[end].lstrip().startswith("#")):
        end += 1
    while end > at + 1 and not head[end - 1].strip():
        end -= 1
    return at, end


def _set_key(head: list[str], key: str, value: str | tuple[str, ...], nl: str) -> list[str]:
    span = _span(head, key)
    if key == "triggers" and span is not None and value:
        kept = _edit_items(head[span[0] : span[1]], list(value), nl)
        if kept is not None:
            return head[: span[0]] + kept + head[span[1] :]
    new = _block(key, value, nl) if value else []
    if span is None:
        at = _insert_at(head, key)
        return head[:at] + new + head[at:]
    return head[: span[0]] + new + head[span[1] :]


def _insert_at(head: list[str], key: str) -> int:
    """Where a missing key goes: after the last key written before it in the usual order, else at the top."""
    before = TEXT_ORDER[: TEXT_ORDER.index(key)]
    ends = [s[1] for k in before if (s := _span(head, k)) is not None]
    return max(ends) if ends else 0


def _block(key: str, value: str | tuple[str, ...], nl: str) -> list[str]:
    if isinstance(value, tuple):
        return [f"{key}:{nl}"] + [f"  - {_scalar(t)}{nl}" for t in value]
    return [f"{key}: {_scalar(value)}{nl}"]


def _scalar(value: str) -> str:
    """A value as YAML reads it back: as typed when it can be, else in double quotes."""
    try:
        if yaml.safe_load(f"k: {value}") == {"k": value} and "\n" not in value:
            return value
    except yaml.YAMLError:
        pass
    return json.dumps(value, ensure_ascii=False)


def _edit_items(block: list[str], wanted: list[str], nl: str) -> list[str] | None:
    """A block-style trigger list with the items no longer wanted taken out and the new ones added under the
    last item (comments and the others' lines kept); None when the list is not written item by item."""
    items = [i for i, ln in enumerate(block) if re.match(r"\s*-\s", ln)]
    if not items or re.match(r"triggers\s*:\s*\S", block[0]) and not re.match(r"triggers\s*:\s*#", block[0]):
        return None
    values: dict[int, Any] = {}
    for i in items:
        try:
            values[i] = yaml.safe_load(block[i].split("-", 1)[1])
        except yaml.YAMLError:
            return None
    present = [str(v) for v in values.values()]
    if [t for t in present if t in wanted] != [t for t in wanted if t in present]:
        return None  # the order changed: written afresh
    lead = re.match(r"\s*-\s*", block[items[-1]]).group(0)  # type: ignore[union-attr]
    out = [ln for i, ln in enumerate(block) if i not in values or str(values[i]) in wanted]
    last = max((j for j, ln in enumerate(out) if re.match(r"\s*-\s", ln)), default=len(out) - 1)
    added = [f"{lead}{_scalar(t)}{nl}" for t in wanted if t not in present]
    return out[: last + 1] + added + out[last + 1 :]
