"""Indexes over a workspace's texts: a FAISS index over the embeddings (:class:`VectorIndex`), BM25 over word
stems (:class:`LexicalIndex`) and the words a message shares with SOP triggers, for text the embedding model
cannot read (:class:`TriggerWords`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from core.retrieval.embedding import DIM


class VectorIndex:
    """A FAISS inner-product index over normalised vectors, with payloads."""

    def __init__(self, vectors: np.ndarray, payloads: Sequence[object]) -> None:
        import faiss

        self.payloads = list(payloads)
        self._index = faiss.IndexFlatIP(vectors.shape[1] if vectors.size else DIM)
        if len(self.payloads):
            self._index.add(np.ascontiguousarray(vectors, dtype=np.float32))

    def add(self, vectors: np.ndarray, payloads: Sequence[object]) -> None:
        """Append vectors with their payloads (callers that search meanwhile hold their own lock)."""
        if len(payloads):
            self._index.add(np.ascontiguousarray(vectors, dtype=np.float32))
            self.payloads += list(payloads)

    def __len__(self) -> int:
        return len(self.payloads)

    def nearest(self, query: np.ndarray, k: int = 5) -> list[tuple[float, int]]:
        """The k best (score, position) pairs, best first."""
        if not self.payloads:
            return []
        scores, ids = self._index.search(np.ascontiguousarray(query.reshape(1, -1)), min(k, len(self.payloads)))
        return [(float(s), int(i)) for s, i in zip(scores[0], ids[0], strict=True) if i >= 0]

    def score(self, query: np.ndarray, position: int) -> float:
        """The query's score against the vector at ``position``."""
        return float(np.dot(self._index.reconstruct(position), query.reshape(-1)))

    def search(self, query: np.ndarray, k: int = 5) -> list[tuple[float, object]]:
        """The k best (score, payload) pairs, best first."""
        return [(score, self.payloads[i]) for score, i in self.nearest(query, k)]


class LexicalIndex:
    """Okapi BM25 over word stems, beside the vectors: the words a question shares with a passage
    ("warranty claim", "graphics driver") count even where the embedding ranks a neighbour first."""

    K1 = 1.2
    B = 0.75

    def __init__(self) -> None:
        self._postings: dict[str, list[tuple[int, int]]] = {}  # term -> (passage, count)
        self._sizes: list[int] = []

    @staticmethod
    def terms(text: str) -> list[str]:
        """Content-word stems and each pair of neighbours ("graphic_driver"): a phrase the question shares
        with a passage counts more than its words scattered. Thai words that say nothing of the topic
        (particles, "ได้", "ไหม") are left out."""
        from core.language.text import stem, tokens

        stems = [stem(w) for w in tokens(text) if not (_unspaced(w) and w in _function_words())]
        return stems + [f"{a}_{b}" for a, b in zip(stems, stems[1:], strict=False)]

    def add(self, texts: Sequence[str]) -> None:
        for text in texts:
            counts: dict[str, int] = {}
            for term in self.terms(text):
                counts[term] = counts.get(term, 0) + 1
            for term, count in counts.items():
                self._postings.setdefault(term, []).append((len(self._sizes), count))
            self._sizes.append(sum(counts.values()))

    def __len__(self) -> int:
        return len(self._sizes)

    def _found(self, term: str) -> list[tuple[int, int]]:
        """A term's postings; a Thai word of three letters or more is also found inside the passages' longer
        words ("ส่ง" in "จัดส่ง", "วัน" in "วันทำการ"): segmentation may join words differently in a question
        and a passage."""
        if len(term) < 3 or "_" in term or not _unspaced(term):
            return self._postings.get(term, [])
        counts: dict[int, int] = {}
        for t, found in self._postings.items():
            if term in t and "_" not in t:
                for i, tf in found:
                    counts[i] = counts.get(i, 0) + tf
        return sorted(counts.items())

    def scores(self, query: str) -> dict[int, float]:
        """Each matching passage's BM25 score divided by the most any passage could score for this query
        (0-1: how much of the question's rare words the passage has)."""
        import math

        n = len(self._sizes)
        if not n:
            return {}
        avg = sum(self._sizes) / n or 1.0
        postings = {t: self._found(t) for t in set(self.terms(query))}
        idf = {t: math.log(1 + (n - len(found) + 0.5) / (len(found) + 0.5)) for t, found in postings.items() if found}
        best = sum(idf.values()) * (self.K1 + 1)
        out: dict[int, float] = {}
        if best <= 0:
            return out
        for term, weight in idf.items():
            for i, tf in postings[term]:
                norm = tf + self.K1 * (1 - self.B + self.B * self._sizes[i] / avg)
                out[i] = out.get(i, 0.0) + weight * tf * (self.K1 + 1) / norm / best
        return out


class TriggerWords:
    """Which SOP a message asks for by the words it shares with the SOP's triggers, for text the embedding
    model cannot read: all-MiniLM-L6-v2 knows no Thai, so every Thai message scores about the same against
    every Thai trigger (a greeting would start a task). Thai is segmented into words (pythainlp); the words
    that say nothing about what is asked (particles, pronouns, "want", "please": ``function_words``,
    ``particles``, greetings and thanks in the language files, and numbers) are left out.

    A trigger's score for a message is how much of the trigger the message says (its words weighted by how
    few SOPs use them: a word every SOP's triggers use tells nothing) times the square root of how much of
    the message the trigger explains (of the message's words that some trigger uses, and its Thai words no
    trigger uses, counted as a word every SOP uses): "มือถือค้าง" says all of "อยากได้มือถือ" but asks about
    a freezing phone, which a troubleshooting trigger explains better.
    A Thai word of three letters or more also counts inside a longer one ("เครื่องร้อน" has "ร้อน"), as
    segmentation may join words differently in a message and in a trigger.
    """

    def __init__(self, owners: Sequence[str], texts: Sequence[str]) -> None:
        import math

        self._owners = list(owners)
        self._words = [self.content(t) for t in texts]
        sops: dict[str, set[str]] = {}
        for owner, words in zip(self._owners, self._words, strict=True):
            sops.setdefault(owner, set()).update(words)
        n = max(1, len(sops))
        df: dict[str, int] = {}
        for words in sops.values():
            for w in words:
                df[w] = df.get(w, 0) + 1
        self._weight = {w: math.log(1 + n / c) for w, c in df.items()}
        self._common = math.log(2)  # the weight of a word every SOP uses
        self._vocab = sorted(self._weight, key=len, reverse=True)

    @staticmethod
    def content(text: str) -> set[str]:
        """The words of a text that can say what is asked (a Thai word segmented together with function words
        loses them: "ใช้ไม่ได้" -> "ใช้", "มีเสียง" -> "เสียง")."""
        from core.language import text as T

        words = (_core_word(w) if _unspaced(w) else w for w in T.words(text))
        return {w for w in words if w not in _function_words() and not any(ch.isdigit() for ch in w)
                and len(w) > 1 and T.THAI_SCALES.get(w) is None and w not in T.THAI_DIGITS}

    def _inside(self, word: str, within: str) -> bool:
        return word == within or (len(word) >= 3 and _unspaced(word) and word in within)

    def scores(self, text: str) -> list[float]:
        """Each trigger's score for a message (0-1), in the order the triggers were given."""
        said = self.content(text)
        if not said:
            return [0.0] * len(self._words)
        surface = " ".join(sorted(said))
        known: dict[str, float] = {}
        other = 0.0  # Thai words no trigger uses: the message may be about something else ("ร้านเปิดกี่โมง")
        for w in said:  # the message's words some trigger uses, each with its weight
            hit = self._weight.get(w) or max((self._weight[v] for v in self._vocab if self._inside(v, w)), default=0)
            if hit:
                known[w] = hit
            elif _unspaced(w):  # (a name in Latin letters is a value: "Samsung A55", not a topic)
                other += self._common
        total_known = sum(known.values()) + other
        out = []
        for words in self._words:
            if not words:
                out.append(0.0)
                continue
            full = sum(self._weight.get(w, 0.0) for w in words)
            found = sum(self._weight.get(w, 0.0) for w in words if w in said or self._inside(w, surface))
            explained = sum(weight for w, weight in known.items()
                            if any(w == v or self._inside(v, w) or self._inside(w, v) for v in words))
            covers = found / full if full else 0.0
            explains = explained / total_known if total_known else 1.0
            out.append(covers * explains ** 0.5)
        return out


def _unspaced(word: str) -> bool:
    from core.language.lexicons import UNSPACED

    return bool(UNSPACED.search(word))


def _core_word(word: str) -> str:
    """A Thai word without the function words segmentation left at its edges ("ใช้ไม่ได้" -> "ใช้")."""
    if not _EDGES:
        _EDGES.extend(sorted((w for w in _function_words() if len(w) >= 2 and _unspaced(w)), key=len, reverse=True))
    edges = _EDGES
    changed = True
    while changed:
        changed = False
        for edge in edges:
            if word != edge and word.startswith(edge) and len(word) - len(edge) >= 2:
                word, changed = word[len(edge):], True
            elif word != edge and word.endswith(edge) and len(word) - len(edge) >= 2:
                word, changed = word[: -len(edge)], True
    return word


_FUNCTION_WORDS: set[str] = set()
_EDGES: list[str] = []


def _function_words() -> set[str]:
    """Words that never tell an SOP from another: English stopwords and the language files' function words,
    particles, greetings and thanks (segmented as messages are)."""
    if not _FUNCTION_WORDS:
        from core.language import lexicons as LEX
        from core.language.text import STOPWORDS

        words = set(STOPWORDS)
        for key in ("function_words", "particles", "greeting", "thanks"):
            for phrase in LEX.phrases(key):  # plain words, not patterns; a greeting or thanks of one word
                if re.fullmatch(r"[\w\u0E00-\u0E7F ]+", phrase) and (key in ("function_words", "particles")
                                                                  or " " not in phrase):
                    words.update(LEX.segment(phrase).lower().split())
        _FUNCTION_WORDS.update(words)
    return _FUNCTION_WORDS
