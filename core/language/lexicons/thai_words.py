"""Thai word segmentation (pythainlp's ``newmm``) over a compact dictionary.

pythainlp looks words up in a character trie of its 62,000-word dictionary: a Python object per
character, about 60 MB resident in every process that segments Thai. :class:`WordList` answers the
one question the segmenter asks of its dictionary (which dictionary words start at this position of
the text, shortest first) from the dictionary's own frozenset, with the lengths of the words that
share their first two letters, in well under a megabyte: the segmentation is the same, word for word.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

HEAD = 2  # words are grouped by their first HEAD letters; shorter words are looked up one by one


class WordList:
    """A word dictionary for pythainlp's ``newmm`` segmenter (its ``custom_dict``), answering
    :meth:`prefixes` as ``pythainlp.util.Trie`` does."""

    def __init__(self, words: Iterable[str]) -> None:
        given = words if isinstance(words, frozenset) else frozenset(words)
        clean = all(w and w == w.strip() for w in given)  # as the trie stores them (pythainlp's list is)
        self._words: frozenset[str] = given if clean else frozenset(s for w in given if (s := w.strip()))
        lengths: dict[str, set[int]] = {}
        for w in self._words:
            if len(w) >= HEAD:
                lengths.setdefault(w[:HEAD], set()).add(len(w))
        self._lengths = {head: tuple(sorted(found)) for head, found in lengths.items()}

    def __len__(self) -> int:
        return len(self._words)

    def __contains__(self, word: object) -> bool:
        return word in self._words

    def prefixes(self, text: str, start: int = 0) -> list[str]:
        """The dictionary words that ``text`` has at ``start``, shortest first."""
        words = self._words
        found: list[str] = []
        for size in range(1, HEAD):
            piece = text[start : start + size]
            if len(piece) < size:
                return found
            if piece in words:
                found.append(piece)
        left = len(text) - start
        for size in self._lengths.get(text[start : start + HEAD], ()):
            if size > left:
                break
            piece = text[start : start + size]
            if piece in words:
                found.append(piece)
        return found


@cache
def dictionary() -> WordList:
    """pythainlp's Thai word list (the ``newmm`` segmenter's default), loaded on first use."""
    from pythainlp.corpus import thai_words

    return WordList(thai_words())


def thai_tokens(text: str, keep_whitespace: bool = True) -> list[str]:
    """``text`` segmented by pythainlp's ``newmm`` with its default dictionary."""
    from pythainlp.tokenize import word_tokenize

    return word_tokenize(text, custom_dict=dictionary(), engine="newmm",  # type: ignore[arg-type]
                         keep_whitespace=keep_whitespace)
