"""JSON read with the place of every value in the source, and small edits that keep the rest byte for byte.

An SOP author's JSON keeps its own layout (one node a line, or indented blocks), key order and spacing; the
canvas changes one value, adds one member or removes one, and leaves every other character where it was.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None}


class JsonSpanError(ValueError):
    """The source is not JSON (the canvas needs it to parse; the text view shows where it breaks)."""


@dataclass
class JVal:
    """One value of the document and where it is: ``source[start:end]``."""

    kind: str  # object | array | string | number | literal
    start: int
    end: int
    value: Any = None  # the Python value of a scalar
    members: list[JMember] = field(default_factory=list)  # an object's, in source order
    items: list[JVal] = field(default_factory=list)  # an array's

    def get(self, key: str) -> JVal | None:
        """An object's member value by key (the first, as ``json.loads`` keeps the last: files have one)."""
        return next((m.value for m in self.members if m.key == key), None)

    def member(self, key: str) -> JMember | None:
        """An object's member by key."""
        return next((m for m in self.members if m.key == key), None)

    def plain(self) -> Any:
        """The value as ``json.loads`` would give it."""
        if self.kind == "object":
            return {m.key: m.value.plain() for m in self.members}
        if self.kind == "array":
            return [i.plain() for i in self.items]
        return self.value


@dataclass
class JMember:
    """``"key": value`` inside an object; ``key_start`` is the opening quote of the key."""

    key: str
    key_start: int
    value: JVal


def parse(source: str) -> JVal:
    """The document's top value with its spans.

    Raises:
        JsonSpanError: the source is not one JSON value.
    """
    reader = _Reader(source)
    val = reader.value()
    reader.ws()
    if reader.pos != len(source):
        raise JsonSpanError(f"extra text after the JSON value at offset {reader.pos}")
    return val


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0

    def ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t\r\n":
            self.pos += 1

    def value(self) -> JVal:
        self.ws()
        if self.pos >= len(self.text):
            raise JsonSpanError("unexpected end of the JSON text")
        ch = self.text[self.pos]
        if ch in "{[":
            self.depth += 1
            if self.depth > 200:
                raise JsonSpanError("the JSON nests too deeply")
            out = self.obj() if ch == "{" else self.arr()
            self.depth -= 1
            return out
        if ch == '"':
            start = self.pos
            try:
                text, self.pos = json.decoder.scanstring(self.text, self.pos + 1)  # type: ignore[attr-defined]
            except json.JSONDecodeError as exc:
                raise JsonSpanError(str(exc)) from exc
            return JVal("string", start, self.pos, text)
        m = NUMBER.match(self.text, self.pos)
        if m:
            self.pos = m.end()
            return JVal("number", m.start(), m.end(), json.loads(m.group(0)))
        for word, lit in LITERALS.items():
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return JVal("literal", self.pos - len(word), self.pos, lit)
        raise JsonSpanError(f"unexpected {ch!r} at offset {self.pos}")

    def obj(self) -> JVal:
        out = JVal("object", self.pos, self.pos)
        self.pos += 1
        self.ws()
        if self.text.startswith("}", self.pos):
            self.pos += 1
            out.end = self.pos
            return out
        while True:
            self.ws()
            key = self.value()
            if key.kind != "string":
                raise JsonSpanError(f"an object key must be a string at offset {key.start}")
            self.ws()
            if not self.text.startswith(":", self.pos):
                raise JsonSpanError(f"expected ':' at offset {self.pos}")
            self.pos += 1
            out.members.append(JMember(str(key.value), key.start, self.value()))
            self.ws()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if self.text.startswith("}", self.pos):
                self.pos += 1
                out.end = self.pos
                return out
            raise JsonSpanError(f"expected ',' or '}}' at offset {self.pos}")

    def arr(self) -> JVal:
        out = JVal("array", self.pos, self.pos)
        self.pos += 1
        self.ws()
        if self.text.startswith("]", self.pos):
            self.pos += 1
            out.end = self.pos
            return out
        while True:
            out.items.append(self.value())
            self.ws()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if self.text.startswith("]", self.pos):
                self.pos += 1
                out.end = self.pos
                return out
            raise JsonSpanError(f"expected ',' or ']' at offset {self.pos}")


def dump(value: Any) -> str:
    """A value written the way SOP files write them: one line, ``", "`` and ``": "``, text as typed."""
    return json.dumps(value, ensure_ascii=False)


def replace(source: str, val: JVal, text: str) -> str:
    """``source`` with one value replaced by ``text`` (JSON)."""
    return source[: val.start] + text + source[val.end :]


def line_indent(source: str, pos: int) -> str:
    """The whitespace that starts the line holding ``pos``."""
    start = source.rfind("\n", 0, pos) + 1
    lead = re.match(r"[ \t]*", source[start:])
    return lead.group(0) if lead else ""


def _separator(source: str, obj: JVal, after: int) -> str:
    """The whitespace that goes between member ``after`` and the next one, as the object already writes it."""
    members = obj.members
    for i in (after, after - 1, *range(len(members) - 1)):
        if 0 <= i < len(members) - 1:
            gap = source[members[i].value.end : members[i + 1].key_start]
            return gap[gap.index(",") + 1 :] if "," in gap else " "
    if members:
        gap = source[obj.start + 1 : members[0].key_start]
        return gap if "\n" in gap else " "
    return " "


def set_member(source: str, obj: JVal, key: str, text: str, *, after: str | None = None) -> str:
    """Set ``key`` of an object to ``text`` (JSON): its value replaced in place when the key is there, else
    a new member after ``after`` (default: the last member), spaced as the object spaces its members."""
    found = obj.member(key)
    if found is not None:
        return replace(source, found.value, text)
    if not obj.members:
        return source[: obj.start + 1] + f"{dump(key)}: {text}" + source[obj.end - 1 :]
    idx = next((i for i, m in enumerate(obj.members) if m.key == after), len(obj.members) - 1)
    sep = _separator(source, obj, idx)
    at = obj.members[idx].value.end
    return source[:at] + "," + sep + f"{dump(key)}: {text}" + source[at:]


def remove_member(source: str, obj: JVal, key: str) -> str:
    """An object without its member ``key`` (the comma and spacing that belonged to it go with it)."""
    members = obj.members
    idx = next((i for i, m in enumerate(members) if m.key == key), None)
    if idx is None:
        return source
    if len(members) == 1:
        return source[: obj.start + 1] + source[obj.end - 1 :]
    if idx == 0:
        return source[: members[0].key_start] + source[members[1].key_start :]
    return source[: members[idx - 1].value.end] + source[members[idx].value.end :]


def block(value: dict[str, Any], like: JVal, source: str) -> str:
    """``value`` as an object written like the object ``like``: on one line when ``like`` is, else indented
    as ``like``'s members are (its continuation lines carry the indentation of the line it starts on)."""
    text = source[like.start : like.end]
    if "\n" not in text or not like.members:
        return dump(value)
    base = line_indent(source, like.start)
    inner = line_indent(source, like.members[0].key_start)
    step = inner[len(base):] if inner.startswith(base) and len(inner) > len(base) else "  "
    dumped = json.dumps(value, ensure_ascii=False, indent=step)
    return dumped.replace("\n", "\n" + base)
