"""Lexicon lists as patterns: the word edges that also hold for Thai and the lists of
core/language/lexicons/*.yaml compiled to regular expressions (every dialogue-act pattern is one)."""

from __future__ import annotations

import re

from core.language import lexicons as LEX

L0, L1 = r"(?<![\w\u0E00-\u0E7F])", r"(?![\w\u0E00-\u0E7F])"  # word edges that also hold for Thai


def _lex(key: str, *, start: bool = False, end: bool = False) -> re.Pattern[str]:
    """A lexicon list (core/language/lexicons/*.yaml, every language) as a pattern: anywhere, at the start, or at
    the end (before closing punctuation)."""
    body = f"({LEX.alternation(key)})" if LEX.phrases(key) else r"(?!x)x"
    tail = r"[\s?.!,]*$" if end else L1
    return re.compile(("^" if start else L0) + body + tail, re.I)
