"""What the learned reader reads and how its outputs are read back: a slot described in words, the agent's last
question and the customer's message, as one token sequence for the cross-encoder, and the answer span decoded from
its start and end scores.

The sequence is ``[CLS] slot words [SEP] agent's question [SEP] message [SEP]``: the first two segments have token
type 0, the message type 1. For the dialogue act the first segment is the fixed :data:`ACT_MARKER`. The model
scores every token as the start and the end of the answer; ``[CLS]`` (position 0) stands for "no value here".
Training (:mod:`core.evaluation.sgd_train`) and the runtime (:mod:`core.understanding.candidates.learned`) share
this module, so both build the very same inputs. It needs only numpy and the ``tokenizers`` library.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ACTS: tuple[str, ...] = ("inform", "affirm", "negate", "new_request", "question", "thanks", "goodbye")
"""The dialogue acts the reader tells apart, in the order of the model's act outputs."""

ACT_MARKER = "dialogue act"
"""The first segment of an act input, in place of a slot's words."""

SLOT_TOKENS = 40  # the slot's words, at most (its intent's words are cut first)
QUESTION_TOKENS = 40  # the agent's question, at most: its last tokens, where the question usually is
MAX_TOKENS = 128  # the whole sequence
MAX_SPAN = 20  # tokens in an answer, at most

CLS, SEP, PAD = 101, 102, 0


@dataclass(frozen=True)
class SlotWords:
    """A slot described in words: what the reader is told about the value it looks for.

    ``name`` is the slot's name (underscores read as spaces), ``description`` its hint or description, ``intent``
    what the procedure it belongs to does (optional), ``example`` one example value (optional).
    """

    name: str
    description: str = ""
    intent: str = ""
    example: str = ""

    def text(self) -> str:
        """The words as the model reads them: ``name: description. e.g. example (intent)``."""
        out = self.name.replace("_", " ").strip()
        if self.description.strip():
            out += ": " + self.description.strip().rstrip(".")
        if self.example.strip():
            out += ". e.g. " + self.example.strip()
        if self.intent.strip():
            out += " (" + self.intent.strip().rstrip(".") + ")"
        return out


@dataclass(frozen=True)
class Encoded:
    """One input sequence and where the message's tokens are in it."""

    ids: list[int]
    types: list[int]
    first: int  # the message's first token's position
    offsets: list[tuple[int, int]]  # each message token's characters in the message

    def token_span(self, start: int, end: int) -> tuple[int, int] | None:
        """The positions of the first and last message tokens covering characters ``start:end``, if any."""
        covered = [k for k, (a, b) in enumerate(self.offsets) if a < end and b > start and b > a]
        if not covered:
            return None
        return self.first + covered[0], self.first + covered[-1]


class Encoder:
    """Builds the reader's inputs with the packaged MiniLM's tokenizer (``tokenizer.json``)."""

    def __init__(self, tokenizer_file: Path) -> None:
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_file(str(tokenizer_file))
        self._tok.no_truncation()
        self._tok.no_padding()

    def _pieces(self, texts: Sequence[str]) -> list[tuple[list[int], list[tuple[int, int]]]]:
        done = self._tok.encode_batch(list(texts), add_special_tokens=False)
        return [(list(e.ids), list(e.offsets)) for e in done]

    def encode(self, firsts: Sequence[str], questions: Sequence[str], messages: Sequence[str]) -> list[Encoded]:
        """One sequence per (first segment, question, message); the three lists have the same length."""
        uniq = list(dict.fromkeys([*firsts, *questions, *messages]))
        pieces = dict(zip(uniq, self._pieces(uniq), strict=True))
        out: list[Encoded] = []
        for first, question, message in zip(firsts, questions, messages, strict=True):
            a = pieces[first][0][:SLOT_TOKENS]
            q = pieces[question][0][-QUESTION_TOKENS:] if question else []
            m_ids, m_off = pieces[message]
            room = MAX_TOKENS - len(a) - len(q) - 4
            m_ids, m_off = m_ids[:room], m_off[:room]
            head = [CLS, *a, SEP, *q, SEP]
            ids = head + m_ids + [SEP]
            types = [0] * len(head) + [1] * (len(m_ids) + 1)
            out.append(Encoded(ids, types, len(head), m_off))
        return out


def pad(batch: Sequence[Encoded]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """input_ids, attention_mask and token_type_ids (int64), padded to the batch's longest sequence."""
    width = max(len(e.ids) for e in batch)
    ids = np.full((len(batch), width), PAD, dtype=np.int64)
    mask = np.zeros((len(batch), width), dtype=np.int64)
    types = np.zeros((len(batch), width), dtype=np.int64)
    for r, e in enumerate(batch):
        ids[r, :len(e.ids)] = e.ids
        mask[r, :len(e.ids)] = 1
        types[r, :len(e.ids)] = e.types
    return ids, mask, types


@dataclass(frozen=True)
class BestSpan:
    """The best answer span in one message: characters ``start:end``, and how far its score is above "none"
    (``margin``; its logistic is the span's probability against no value)."""

    start: int
    end: int
    margin: float

    @property
    def probability(self) -> float:
        return float(1.0 / (1.0 + np.exp(-self.margin)))


def best_span(encoded: Encoded, starts: np.ndarray, ends: np.ndarray) -> BestSpan | None:
    """The message's best span by its start and end scores (one row each), at most :data:`MAX_SPAN` tokens, or
    None when the message has no tokens."""
    n = len(encoded.offsets)
    if n == 0:
        return None
    s = starts[encoded.first:encoded.first + n].astype(np.float64)
    e = ends[encoded.first:encoded.first + n].astype(np.float64)
    grid = s[:, None] + e[None, :]
    i, j = np.indices(grid.shape)
    grid[(j < i) | (j - i >= MAX_SPAN)] = -np.inf
    k = int(np.argmax(grid))
    a, b = divmod(k, n)
    null = float(starts[0]) + float(ends[0])
    return BestSpan(encoded.offsets[a][0], encoded.offsets[b][1], float(grid[a, b]) - null)
