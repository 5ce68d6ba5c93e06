"""Values a customer names: labelled pairs ("zip is 10023", "Username: jdoe41", "my pin is 4410 and order id
7712309944"), the last digits of a card ("ending in 5058"), and self-introductions ("this is omar haddad",
"Mia Smith here").

A label says which slot a value is for, so it is read first: each labelled value goes to the slot its label
names, and its words are taken out of the message (:func:`blank`) before the slots without a label read
theirs, so a PIN is never read out of a phone number and an order id is never entered as a phone. How labels
are called (synonyms, the words between a label and its value) is language data (``label_synonyms``,
``label_joiners``, ``ending_phrases``, ``name_intro``, ``name_outro`` in the language files); the labels
themselves are the author's slot names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from core import lexicons as LEX
from core import text as T
from core.slots import (GENERIC_NAME_WORDS, SlotType, extract, handle_value, person_name, validate)

END = r"(?=\s*(?:,(?!\s*\d{4}\b)|;|\s(?:and|but|&|plus)\s|[.!?](?:\s|$)|$))"  # where a labelled value stops


@dataclass(frozen=True)
class Labelled:
    """A value the customer named: the slot it is for, the value, and the span of the label and value."""

    slot: str
    value: Any
    start: int
    end: int
    words: str


@cache
def _synonyms() -> dict[str, tuple[str, ...]]:
    """Per word of a slot name, the other ways customers call it (``label_synonyms``: "zip: zip code, ...")."""
    out: dict[str, list[str]] = {}
    for entry in LEX.phrases("label_synonyms"):
        head, sep, rest = entry.partition(":")
        if sep:
            out.setdefault(head.strip().lower(), []).extend(p.strip().lower() for p in rest.split(",") if p.strip())
    return {k: tuple(v) for k, v in out.items()}


def name_words(name: str) -> list[str]:
    """The words of a slot name: ``card_last4`` -> card, last, 4; ``orderId`` -> order, id."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name.split(".")[-1])
    return [w.lower() for w in re.findall(r"[A-Za-z]+|\d+", spaced)]


def label_phrases(name: str, st: SlotType) -> list[str]:
    """How a customer may name the slot: its name as words ("order id"), that name without generic words
    ("order"), and the language files' synonyms of its words ("zip code", "postcode" for ``zip``)."""
    words = name_words(name)
    if not words or st.describes:
        return []
    out = [" ".join(words)]
    content = [w for w in words if w not in GENERIC_NAME_WORDS and w not in T.STOPWORDS and not w.isdigit()]
    if content and content != words and len("".join(content)) >= 3 and not st.person:
        out.append(" ".join(content))
    syn = _synonyms()
    for w in words:
        if w in syn and (len(words) == 1 or w not in GENERIC_NAME_WORDS):
            out += syn[w]
    if len(words) > 1 and words[-1] in GENERIC_NAME_WORDS and words[-1] in syn:  # "order id" -> "order number"
        out += [" ".join([*words[:-1], s]) for s in syn[words[-1]]]
    if st.kind == "digits" and 0 < st.digits <= 6 and set(words) & _ending_words():
        out += list(LEX.phrases("ending_phrases"))  # "card ending in 5058" for ``card_last4``
    return list(dict.fromkeys(p for p in out if p))


@cache
def _ending_words() -> frozenset[str]:
    """The words of the ending phrases ("last", "ending"): a slot named with one holds the last digits."""
    return frozenset(w for p in LEX.phrases("ending_phrases") for w in p.lower().split()
                     if w.isalpha() and w not in T.STOPWORDS and w not in ("four", "digits"))


def _read(st: SlotType, name: str, said: str) -> Any:
    """The slot's value in the words after its label, or None."""
    if st.person:
        return person_name(said, asked=True)
    if st.handle:
        return handle_value(said, name)
    if st.kind == "text":
        value = said.strip(" .,'\"")
        return value if 0 < len(T.words(value)) <= 8 and not T.is_question(value) else None
    value = extract(st, said, asked=True)
    if st.kind == "id" and st.pattern is None and len(str(value or "")) < 3:
        return None  # "order 2 pizzas": a word that is also a label, then a count
    return value if validate(st, value) else None


def _may_follow(st: SlotType, said: str, joined: bool) -> bool:
    """Whether the words after a label can be its value: a range ("budget between 30k and 40k") is read
    whole elsewhere; without "is" or ":" between them, free text only when shaped like a value ("username
    dolsen217", not "my login first"), a name only when it reads as one ("name gareth hughes")."""
    if st.kind in ("money", "number") and re.match(r"\s*(?:between|from)\b", said, re.I):
        return False
    if joined or st.kind != "text":
        return True
    first = said.split()[0] if said.split() else ""
    if st.person:
        return _name_run(said.split(",")[0]) is not None
    return bool(re.search(r"[\d._@]", first))


@cache
def _joiners() -> str:
    return LEX.alternation("label_joiners") or "(?!x)x"


def labelled_values(text: str, types: dict[str, SlotType]) -> list[Labelled]:
    """Every value the message gives under a label that names one of ``types``' slots, longest label first,
    each span used once; in the order they were said. A label whose words hold no valid value of its slot
    ("I opened a checking account last week") gives nothing."""
    index: dict[str, list[str]] = {}
    for name in sorted(types):
        for phrase in label_phrases(name, types[name]):
            index.setdefault(phrase, []).append(name)
    taken: list[tuple[int, int]] = []
    found: list[Labelled] = []
    given: set[str] = set()
    joiners = _joiners()
    for phrase in sorted(index, key=lambda p: (-len(p), p)):
        label = r"\s+".join(re.escape(w) for w in phrase.split())
        pattern = re.compile(rf"(?<![\w@.])(?:{label})(?![\w@])((?:\s*(?:{joiners})(?![\w])|\s*[:#=-])*)\s*", re.I)
        for m in pattern.finditer(text):
            if any(s < m.end() and m.start() < e for s, e in taken):
                continue
            stop = re.search(END, text[m.end():])
            said = text[m.end(): m.end() + (stop.start() if stop else len(text) - m.end())]
            if not said.strip():
                continue
            joined = bool(m.group(1).strip())  # "login: x", "zip is 10023"; else the value follows the label
            for name in index[phrase]:
                st = types[name]
                if name in given or not _may_follow(st, said, joined):
                    continue
                value = _read(st, name, said)
                if value is None:
                    continue
                where = said.find(str(value)) if isinstance(value, str) else -1
                end = m.end() + (where + len(str(value)) if where >= 0 else len(said.rstrip()))
                found.append(Labelled(name, value, m.start(), end, said.strip()))
                given.add(name)
                taken.append((m.start(), end))
                break
    return sorted(found, key=lambda f: (f.start, f.slot))


def blank(text: str, spans: list[tuple[int, int]]) -> str:
    """The text with the given spans replaced by spaces (positions kept)."""
    chars = list(text)
    for s, e in spans:
        chars[s:e] = " " * (e - s)
    return "".join(chars)


NAME_WORD = r"[^\W\d_][\w'-]*"


def introduced_name(text: str) -> str | None:
    """A name the customer gives unasked by introducing themselves: "this is omar haddad", "hi im Derek
    Olsen", "Mia Smith here", "Tomas Herrera speaking". Lower-case names count when two or three words, none
    of them a function word or a word of the language files; None otherwise."""
    intro, outro = LEX.alternation("name_intro"), LEX.alternation("name_outro")
    candidates: list[str] = []
    if intro:
        for m in re.finditer(rf"(?<![\w'])(?:{intro})\s+((?:{NAME_WORD})(?:\s+{NAME_WORD}){{0,3}})", text, re.I):
            candidates.append(m.group(1))
    if outro:
        for m in re.finditer(rf"(?:^|[,.;!?]\s*|\b(?:hi|hello|hey)\s+)((?:{NAME_WORD})(?:\s+{NAME_WORD}){{1,2}})\s+"
                             rf"(?:{outro})\b", text, re.I):
            candidates.append(m.group(1))
    for said in candidates:
        name = _name_run(said)
        if name:
            return name
    return None


def _name_run(said: str) -> str | None:
    """The leading words of ``said`` that can be a person's name."""
    skip = _not_name_words()
    run: list[str] = []
    for w in said.split():
        if w.lower() in skip or len(w) < 2 or not w[0].isalpha():
            break
        run.append(w)
    if not run:
        return None
    if any(w[0].isupper() for w in run):
        run = run[: next((i for i, w in enumerate(run) if not w[0].isupper()), len(run))]
        return " ".join(run) if run else None
    return " ".join(run[:3]) if 2 <= len(run) else None


@cache
def _not_name_words() -> frozenset[str]:
    """Words that are never part of a name: function words and every word of the language files' lists."""
    out = set(T.STOPWORDS)
    for key in ("affirm", "deny", "greeting", "thanks", "lead_filler", "unsure", "unable", "negative", "hedges",
                "general_verbs", "request_verbs", "name_outro", "judgement", "currency_words", "units", "tens"):
        for p in LEX.phrases(key):
            out |= {w for w in re.findall(r"[a-z']+", p.lower()) if len(w) > 1}
    return frozenset(out | {"calling", "writing", "trying", "having", "going", "looking", "contacting", "reaching"})


def stated_default(st: SlotType, name: str, texts: list[str]) -> Any:
    """The value a question says it uses when the customer does not know ("If you're not sure, I'll use the
    standard $50."): a valid value of the slot in a sentence of ``texts`` (the question, its description)
    that has a ``default_markers`` phrase; None when none says one."""
    markers = LEX.alternation("default_markers")
    if not markers:
        return None
    for said in texts:
        for sentence in re.split(r"(?<=[.!?;])\s+|[()]", said or ""):
            if re.search(rf"\b(?:{markers})\b", sentence, re.I):
                value = _read(st, name, sentence) if st.kind not in ("text", "boolean") else None
                if value is not None:
                    return value
    return None
