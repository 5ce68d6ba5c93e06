"""Typos: how alike two texts are, and words corrected to the near-miss lexicon word they were
meant as."""

from __future__ import annotations

import difflib
import re
from functools import lru_cache

from core.language.text.vocabulary import STOPWORDS, WORD, words


@lru_cache(maxsize=65536)  # a message's words are compared with the same vocabulary every turn
def _similar(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio()


def alike(a: str, b: str, at_least: float) -> bool:
    """Whether two texts' character similarity (0-1, case ignored: for typos) is at least ``at_least``; texts
    whose lengths alone rule it out (the ratio is at most twice the shorter length over both) are not
    compared."""
    a, b = a.lower(), b.lower()
    if a and b and 2 * min(len(a), len(b)) < at_least * (len(a) + len(b)):
        return False
    return _similar(a, b) >= at_least


def _correction(word: str, lexicon: set[str] | frozenset[str]) -> str:
    """The lexicon word a word is a near-miss of (a typo), else the word itself."""
    if isinstance(lexicon, frozenset):
        return _cached_correction(word, lexicon)
    return _find_correction(word, lexicon)


@lru_cache(maxsize=65536)
def _cached_correction(word: str, lexicon: frozenset[str]) -> str:
    """A fixed lexicon's corrections, remembered (a word's near-misses cost a scan of the lexicon)."""
    return _find_correction(word, lexicon)


def _find_correction(word: str, lexicon: set[str] | frozenset[str]) -> str:
    if word in lexicon or word in STOPWORDS or len(word) < 3 or not word.isalpha():
        return word
    by_length = _by_length(lexicon) if isinstance(lexicon, frozenset) else _lengths(lexicon)
    size = len(word)
    if size >= 4:  # a ratio of 0.8 needs lengths within 2/3 and 3/2 of each other: no other word can reach it
        near = difflib.get_close_matches(word, [w for n in range(size * 2 // 3, size * 3 // 2 + 2)
                                                for w in by_length.get(n, ())], n=1, cutoff=0.8)
        if near:
            return near[0]
    slips = sorted(w for n in (size, size + 1) for w in by_length.get(n, ()) if is_slip(word, w))
    return slips[0] if len(slips) == 1 else word


def _lengths(lexicon: set[str] | frozenset[str]) -> dict[int, tuple[str, ...]]:
    """A lexicon's words by their length."""
    out: dict[int, list[str]] = {}
    for w in lexicon:
        out.setdefault(len(w), []).append(w)
    return {n: tuple(ws) for n, ws in out.items()}


@lru_cache(maxsize=64)
def _by_length(lexicon: frozenset[str]) -> dict[int, tuple[str, ...]]:
    return _lengths(lexicon)


def is_slip(typed: str, word: str) -> bool:
    """Whether ``typed`` is ``word`` with one letter dropped or two neighbours swapped ("hve", "lsot").
    A three-letter word only counts as a slip when the dropped letter is a vowel ("lot" is no "lost")."""
    if len(word) == len(typed) + 1 and len(typed) >= 3:
        return any(word[:i] + word[i + 1:] == typed and (len(typed) > 3 or word[i] in "aeiou")
                   for i in range(len(word)))
    if len(word) == len(typed) >= 4:
        diff = [i for i in range(len(word)) if word[i] != typed[i]]
        return len(diff) == 2 and diff[1] == diff[0] + 1 and word[diff[0]] == typed[diff[1]] \
            and word[diff[1]] == typed[diff[0]]
    return False


def correct_spelling(text: str, lexicon: set[str] | frozenset[str]) -> str:
    """Replace words that are near-misses of lexicon words (typos) by those words (lower-cased words out)."""
    return " ".join(_correction(w, lexicon) for w in words(text))


def correct_typos(text: str, lexicon: set[str] | frozenset[str]) -> str:
    """The text as written, with only its misspelt words replaced (case, ids and punctuation kept)."""

    def fix(m: re.Match[str]) -> str:
        word = m.group(0)
        fixed = _correction(word.lower(), lexicon)
        return word if fixed == word.lower() else fixed

    return WORD.sub(fix, text)
