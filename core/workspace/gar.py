"""Match SOP steps to GAR rows: exact name first, then embedding similarity (paper §2.3)."""

from __future__ import annotations

import difflib

import numpy as np

from core.retrieval.embedding import CachedEmbedder
from core.workspace.gar_file import GarRow, normalise_action

SIMILARITY_THRESHOLD = 0.80


class GarIndex:
    """The GAR with an exact-name map and an embedding index over action names."""

    def __init__(self, rows: list[GarRow], embedder: CachedEmbedder | None) -> None:
        self.rows = rows
        self.by_name = {normalise_action(r.action): r for r in rows}
        self._embedder = embedder
        self._vectors: np.ndarray | None = None
        self.similarity_matches: dict[str, tuple[str, float]] = {}

    def resolve(self, text: str) -> tuple[GarRow | None, str]:
        """The GAR row for an SOP line and, when none, a did-you-mean hint."""
        key = normalise_action(text)
        if key in self.by_name:
            return self.by_name[key], ""
        row, score = self._similar(text)
        if row is not None and score >= SIMILARITY_THRESHOLD:
            self.similarity_matches[text] = (row.action, score)
            return row, ""
        near = difflib.get_close_matches(key, list(self.by_name), n=1, cutoff=0.5)
        hint = f" (did you mean {self.by_name[near[0]].action!r}?)" if near else ""
        if not hint and row is not None:
            hint = f" (closest: {row.action!r}, similarity {score:.2f})"
        return None, hint

    def _similar(self, text: str) -> tuple[GarRow | None, float]:
        if self._embedder is None or not self.rows:
            return None, 0.0
        if self._vectors is None:
            self._vectors = self._embedder.embed([r.action for r in self.rows])
        q = self._embedder.embed([text])[0]
        scores = self._vectors @ q
        best = int(np.argmax(scores))
        return self.rows[best], float(scores[best])
