"""The grounding check: a reply states no number that no tool, customer or SOP text gave."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Container, Iterable
from functools import lru_cache
from typing import Any

from core.language.text import number_forms
from core.shared.models import SessionState
from core.workspace.slots import ISO_DATE


def allowed_numbers(sources: Iterable[Any]) -> set[float]:
    """Every number stated anywhere in the given sources (tool results, messages, SOP text): a text's numbers,
    and in structured data (a tool's answer) every number and the numbers of every text in it, keys included,
    each text read once however many answers repeat it."""
    found: set[float] = set()
    for src in sources:
        _collect(src, found)
    return found


def _collect(value: Any, found: set[float]) -> None:
    if isinstance(value, str):
        found |= _text_numbers(value)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        if math.isfinite(value):
            found.add(round(float(value), 2))
    elif isinstance(value, dict):
        for key, item in value.items():
            _collect(str(key), found)
            _collect(item, found)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            _collect(item, found)
    else:  # a date, a decimal, an object: as its text says it
        found |= _text_numbers(json.dumps(value, default=str, ensure_ascii=False))


@lru_cache(maxsize=8192)
def _text_numbers(text: str) -> frozenset[float]:
    """The numbers one text states (a session's messages come back every turn: read once)."""
    found = number_forms(text)
    for m in ISO_DATE.finditer(text):  # "2025-06-14" is written "14 June 2025" in a message
        found |= {float(int(part)) for part in m.groups()}
    return frozenset(found)


class SourceNumbers(Container[float]):
    """The numbers of a turn's sources, read the first time a reply's figure is looked up (most replies
    state none, and a long session's sources are many)."""

    def __init__(self, sources: list[Any], also: Iterable[float] = ()) -> None:
        self._sources = sources
        self._also = set(also)
        self._found: set[float] | None = None

    def __contains__(self, number: object) -> bool:
        if self._found is None:
            self._found = allowed_numbers(self._sources) | self._also
        return number in self._found



def ungrounded(reply: str, allowed: Container[float]) -> list[float]:
    """Numbers in a reply that no source gave (small list enumerators 1–10 are not facts)."""
    return sorted(n for n in number_forms(reply) if not (n.is_integer() and 0 <= n <= 10) and n not in allowed)


def session_sources(state: SessionState) -> list[Any]:
    """What a session's replies may draw figures from: the customer's words, observations and slots."""
    sources: list[Any] = [m.text for m in state.history if m.role == "user"]
    for goal in state.goals.values():
        sources += [e.observation for e in goal.memory]
        sources.append(goal.slots)
    return sources


LINK = re.compile(r"https?://[^\s)>\]]+", re.I)
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
CODE = re.compile(r"(?<![\w@./-])[A-Za-z0-9][\w-]{3,}(?![\w@])")
UNIT_WORD = re.compile(r"^\d+(?:[.,]\d+)?-?[a-z]+$")  # 72-hour, 48h, 10am, 2nd: a number, checked as one
MENU_STEP = re.compile(r"([^\W_]+)\s*>\s*([^\W_]+)")  # "Listings > My Listings": the words around each ">"


def ungrounded_facts(reply: str, sources: list[Any]) -> list[str]:
    """Facts besides plain numbers that a reworded reply states and no source holds: links, emails,
    ids and codes (words with at least two letters and two digits) and menu paths (the words around
    each ">"). Compared case-insensitively with spacing ignored, so a translation may move them but
    not change them."""
    haystack = _squash(" ".join(s if isinstance(s, str) else json.dumps(s, default=str, ensure_ascii=False)
                                for s in sources))
    found = [m.group(0) for m in LINK.finditer(reply)] + [m.group(0) for m in EMAIL.finditer(reply)]
    rest = EMAIL.sub(" ", LINK.sub(" ", reply))
    found += [m.group(0) for m in CODE.finditer(rest) if _is_code(m.group(0))]
    found += [f"{m.group(1)} > {m.group(2)}" for m in MENU_STEP.finditer(rest)]
    bad: list[str] = []
    for fact in (f.rstrip(".,;:!?") for f in found):
        if _squash(fact) not in haystack and fact not in bad:
            bad.append(fact)
    return bad


def _is_code(word: str) -> bool:
    digits = sum(ch.isdigit() for ch in word)
    letters = sum(ch.isalpha() for ch in word)
    return digits >= 2 and letters >= 2 and not UNIT_WORD.match(word)


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text.lower())
