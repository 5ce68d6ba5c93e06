"""The values a slot of each kind takes: what the canvas's condition builder offers to compare a slot with,
and why a condition's literal is one its slot never holds (lint)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal

from core.workspace.slots import SlotType, type_label

Mode = Literal["pick", "number", "date", "free"]
YES_WORDS = frozenset({"yes", "y", "true", "yeah", "ok", "okay", "sure", "confirmed"})
NO_WORDS = frozenset({"no", "n", "false", "nope", "not"})
ISO = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class ValueChoice:
    """How a value to compare a slot with is chosen: picked from ``options``, a number, a date, or free text
    (``options`` then are values it is known to take, offered but not required)."""

    mode: Mode
    options: tuple[str, ...] = ()
    kind: str = ""  # the slot's kind as a declaration writes it (yes_no, one_of(…), number …); "" for a non-slot


def values_of(st: SlotType) -> ValueChoice:
    """The values a condition may compare slot ``st`` with: true or false for a yes/no slot, the options of a
    choice, a number for a number or an amount, a date for a date, else free text."""
    label = type_label(st)
    if st.kind == "boolean":
        return ValueChoice("pick", ("true", "false"), label)
    if st.kind == "option" and st.vocab:
        return ValueChoice("pick", tuple(st.vocab), label)
    if st.kind in ("number", "money"):
        return ValueChoice("number", (), label)
    if st.kind == "date":
        return ValueChoice("date", (), label)
    return ValueChoice("free", tuple(st.vocab), label)


def never_holds(st: SlotType, value: Any) -> str:
    """Why slot ``st`` never holds ``value`` (a condition's literal: a string, number, bool or date), as a
    sentence that says what to compare it with instead; '' when it may hold it."""
    if value is None:
        return ""
    if st.kind == "boolean":
        if isinstance(value, bool):
            return ""
        said = str(value).strip().lower()
        fix = "true" if said in YES_WORDS else "false" if said in NO_WORDS else "true or false"
        return f"a yes/no slot holds true or false, never {_shown(value)}: compare it with {fix}"
    if isinstance(value, bool):
        return f"it never holds {_shown(value)}: only a yes/no slot holds true or false"
    if st.kind == "option" and st.vocab:
        if _among(value, st.vocab):
            return ""
        listed = ", ".join(repr(v) for v in st.vocab[:8]) + (", …" if len(st.vocab) > 8 else "")
        return f"it holds one of {listed}, never {_shown(value)}"
    if st.kind in ("number", "money"):
        if isinstance(value, int | float) or (isinstance(value, str) and _numeric(value)):
            return ""
        return f"a {st.kind} slot holds a number, never {_shown(value)}"
    if st.kind == "date":
        if isinstance(value, date) or (isinstance(value, str) and ISO.fullmatch(value.strip())):
            return ""
        return f"a date slot holds a date (2026-12-24 or today), never {_shown(value)}"
    return ""


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, date):
        return value.isoformat()
    return repr(value)


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _among(value: Any, options: list[str]) -> bool:
    """Whether a literal equals one of a choice's options as the evaluator compares them (case and surrounding
    spaces aside, numbers as numbers)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return any(_numeric(o) and float(o) == float(value) for o in options)
    said = str(value).strip().lower()
    return any(o.strip().lower() == said for o in options)


__all__ = ["ValueChoice", "never_holds", "values_of"]
