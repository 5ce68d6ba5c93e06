"""Per-language lexicons: yes/no, cancel, greetings, thanks, go back, number words, value frames.

Each ``<language>.yaml`` file here holds the general words of one language (never a store's, a
product's or an SOP's). All files are loaded together: a phrase list of the engine is the union of
that list over the languages, so a customer may write in any of them. Messages in a script that has
no spaces between words (Thai) are segmented first (:func:`segment`), and the lexicon writes such
phrases with spaces between their words.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
LISTS = ("affirm", "deny", "weak_yes", "negative", "unsure", "lead_filler", "cancel", "cancel_tail", "greeting",
         "thanks", "thanks_anywhere", "farewell", "decline_more", "decline_offer", "yes_no_echo", "street_types", "object_asks", "object_starts", "object_stops", "swap_joiners", "place_asks", "vague_trouble", "reuse_same", "step_leads", "clock_past", "clock_to", "clock_quarter", "clock_half", "clock_noon", "clock_midnight", "clock_am", "clock_pm", "clock_oclock", "place_joiners", "current_words", "statement_adverbs", "correction", "go_back", "skip_question", "now", "offers_more",
         "refers_back", "person", "value_frames", "units", "tens", "instructions", "judgement", "currency_words",
         "shopping_requests", "question_start", "question_inside", "question_words", "question_end", "request",
         "request_lead", "request_verbs", "unable", "narrated", "hostile", "asks_when", "clause_joiners",
         "clause_comma_joiners", "clause_request_starts", "excludes", "route_from", "route_to", "route_stops",
         "route_start_words", "route_end_words", "change_to", "target_words", "date_words", "month_names", "ordinals", "subordinate", "hedges",
         "item_questions", "general_verbs", "list_joiners", "label_synonyms", "label_joiners", "ending_phrases",
         "name_intro", "name_outro", "default_markers", "replaces", "same_as_before", "not_wanted", "likes",
         "alternative_joiners", "catch_all_options", "example_leads", "particles", "function_words", "ask_leads", "ask_to_leads",
         "ask_tails", "customer_words", "cheaper", "pricier", "negation", "measure_units", "headcount_nouns",
         "headcount_columns", "size_words", "measure_at_most", "measure_at_least", "measure_questions", "narrowing")
SETTINGS = ("language", "script", "name")
SECTIONS = ("simulation",)  # data for other parts than the reader (simulated customers' wording), by name


@dataclass(frozen=True)
class Lexicon:
    """One language's lists."""

    language: str
    script: re.Pattern[str]
    lists: dict[str, tuple[str, ...]]
    name: str = ""
    sections: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)

    def get(self, key: str) -> tuple[str, ...]:
        return self.lists.get(key, ())

    def section(self, name: str) -> dict[str, tuple[str, ...]]:
        """A named data section (``simulation``): its phrase lists by key (empty when the file has none)."""
        return self.sections.get(name, {})


def _load(path: Path) -> Lexicon:
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    unknown = sorted(set(data) - set(LISTS) - set(SETTINGS) - set(SECTIONS))
    if unknown:  # a misspelt list would be left out without a word
        raise ValueError(f"{path.name}: unknown list {unknown[0]!r}; the lists are: {', '.join(LISTS)}")
    for key in LISTS:
        for item in data.get(key) or []:
            if not isinstance(item, str):  # YAML reads a bare on/off/yes/no as true/false
                raise ValueError(f"{path.name}: {key}: {item!r} is not a phrase; write it in quotes")
    lists = {k: tuple(str(x) for x in data.get(k) or []) for k in LISTS}
    language = str(data.get("language") or path.stem)
    return Lexicon(language, re.compile(str(data.get("script") or r"[A-Za-z]")), lists,
                   str(data.get("name") or language), {k: _section(path, k, data.get(k)) for k in SECTIONS})


def _section(path: Path, name: str, raw: Any) -> dict[str, tuple[str, ...]]:
    """A data section: a map of phrase lists."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ValueError(f"{path.name}: {name}: expected a map of phrase lists")
    out: dict[str, tuple[str, ...]] = {}
    for key, items in raw.items():
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise ValueError(f"{path.name}: {name}.{key}: expected a list of phrases (quote yes/no/on/off)")
        out[str(key)] = tuple(items)
    return out


@cache
def lexicons() -> tuple[Lexicon, ...]:
    """Every language file, English first."""
    paths = sorted(HERE.glob("*.yaml"), key=lambda p: (p.stem != "en", p.stem))
    return tuple(_load(p) for p in paths)


def phrases(key: str) -> list[str]:
    """A list over all languages, longest first (so "no thanks" is tried before "no")."""
    out = {p for lx in lexicons() for p in lx.get(key)}
    return sorted(out, key=len, reverse=True)


def alternation(key: str) -> str:
    """A list over all languages as one regular-expression alternation (a space in a phrase stands for any
    run of white space)."""
    return "|".join(re.sub(r" (?![?*+{])", r"\\s+", p) for p in phrases(key))


def language_of(text: str) -> str:
    """The language a message is written in, by its script (English when nothing else shows)."""
    counts = {lx.language: len(lx.script.findall(text)) for lx in lexicons() if lx.language != "en"}
    best = max(counts.items(), key=lambda kv: kv[1], default=("en", 0))
    return best[0] if best[1] else "en"


def readable(text: str, languages: Collection[str] = ()) -> bool:
    """Whether a message is written in the script of one of ``languages`` (default: every language with a
    lexicon): at least half its letters are. A message of fewer than two letters (a number, an emoji) is."""
    letters = [c for c in text if c.isalpha()]
    if len(letters) < 2:
        return True
    scripts = [lx.script for lx in lexicons() if not languages or lx.language in languages]
    known = sum(1 for c in letters if any(sc.match(c) for sc in scripts))
    return known * 2 >= len(letters)


def language_names(languages: Collection[str] = ()) -> list[str]:
    """The languages' names, each in its own language (English, ไทย), in the order given (default: all)."""
    by_code = {lx.language: lx.name for lx in lexicons()}
    return [by_code[c] for c in (languages or by_code) if c in by_code]


UNSPACED = re.compile(r"[\u0E00-\u0E7F]+")  # Thai: words are not separated by spaces


def segment(text: str) -> str:
    """The message with the words of unspaced scripts separated by spaces (other text unchanged)."""
    if not UNSPACED.search(text):
        return text
    return _segmented(text)


@lru_cache(maxsize=4096)  # segmenting is the costly part of reading Thai, and a turn reads a text often
def _segmented(text: str) -> str:
    from core.language.lexicons.thai_words import thai_tokens  # loaded only when a message needs it

    spaced = UNSPACED.sub(lambda m: " " + " ".join(w for w in thai_tokens(m.group(0)) if w.strip()) + " ", text)
    return " ".join(spaced.split())
