"""The learned reader at run time (ARCHITECTURE §3c): for slots described in words, the span of a message that
fills each one, or none; and the message's dialogue act given the agent's last words.

The model is the packaged MiniLM fine-tuned on SGD's train split (Schema-Guided Dialogue, Rastogi et al. 2020,
CC BY-SA 4.0, with SGD-X's reworded schemas, Lee et al. 2022) by ``python -m core train reader
../shared/data/sgd``, shipped as int8 ONNX in ``reader_model/`` beside this module with ``reader.json`` (how it was
trained, its dev figures and its none-threshold). It runs on ONNX Runtime with one thread, loaded once per process
on first use; the tokenizer is the packaged MiniLM's ``tokenizer.json``. No torch at run time.

A missing or unreadable model is said once, in one sentence naming the file and the command that rebuilds it, and
the reader then proposes nothing (the rule reading runs alone). ``SOP_READER_MODEL=off`` switches it off.

Usage::

    from core.understanding.candidates.learned import SlotWords, act, spans

    spans([SlotWords("destination", "The city to fly to")], "Where to?", "to Lisbon please")
    # [Proposal(slot='destination', text='Lisbon', start=3, end=9, probability=0.98)]
    act("Anything more I can do?", "thanks a lot")  # {'thanks': 0.98, ...}
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.understanding.candidates.encoding import (
    ACT_MARKER,
    ACTS,
    BestSpan,
    Encoded,
    Encoder,
    SlotWords,
    best_span,
    pad,
)

__all__ = ["ACTS", "ENV", "USAGE", "LearnedReader", "Proposal", "SlotWords", "act", "available", "reader", "spans"]

log = logging.getLogger(__name__)

MODEL_DIR = Path(__file__).resolve().parent / "reader_model"
MODEL_FILE = "reader.onnx"
RECORD_FILE = "reader.json"
REBUILD = "python -m core train reader ../shared/data/sgd"
ENV = "SOP_READER_MODEL"
"""``off`` (or ``0``, ``no``, ``false``) switches the learned reader off; a path loads that ONNX file instead."""

RUN_TOKENS = 4096  # padded tokens in one run at most
RUN_ROWS = 64  # sequences in one run at most


@dataclass(frozen=True)
class Proposal:
    """The reader's proposal for one slot: the span of the message that fills it (``text``, characters
    ``start:end``), or none (all three None) when its best span's ``probability`` against "no value" is below the
    model's threshold. ``probability`` is the best span's either way (0.0 for an empty message)."""

    slot: str
    text: str | None
    start: int | None
    end: int | None
    probability: float

    @property
    def found(self) -> bool:
        return self.text is not None


class LearnedReader:
    """One loaded model: :meth:`spans` and :meth:`act`, each one batched ONNX run.

    ``threshold`` is the margin (logit) a span's score must have over "none" to be proposed; by default the one
    tuned on dev and recorded in ``reader.json`` beside the model (0.0, even odds, when there is none).

    Raises:
        Exception: the model file or the packaged tokenizer cannot be loaded (the module's functions catch it).
    """

    def __init__(self, model_file: Path, threads: int = 1, threshold: float | None = None) -> None:
        import onnxruntime as ort

        from core.retrieval.embedding import model_path

        self.model_file = model_file
        self._encoder = Encoder(Path(model_path()) / "tokenizer.json")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
        self._lock = threading.Lock()
        self.threshold = recorded_threshold(model_file) if threshold is None else threshold

    def spans(self, slots: Sequence[SlotWords], question: str, message: str) -> list[Proposal]:
        """For each slot, in order, the span of ``message`` that fills it or none; ``question`` is the agent's
        last words ("" when there are none)."""
        found = self.best_spans([s.text() for s in slots], [question] * len(slots), [message] * len(slots))
        return [self._proposal(s.name, message, best) for s, best in zip(slots, found, strict=True)]

    def _proposal(self, slot: str, message: str, best: BestSpan | None) -> Proposal:
        if best is None:
            return Proposal(slot, None, None, None, 0.0)
        if best.margin < self.threshold:
            return Proposal(slot, None, None, None, best.probability)
        return Proposal(slot, message[best.start:best.end], best.start, best.end, best.probability)

    def act(self, agent_text: str, message: str) -> dict[str, float]:
        """The probability of each act in :data:`ACTS` (independent: a message may inform and thank at once)."""
        return self.acts([agent_text], [message])[0]

    def acts(self, agent_texts: Sequence[str], messages: Sequence[str]) -> list[dict[str, float]]:
        """:meth:`act` for many messages in batched runs."""
        encoded = self._encoder.encode([ACT_MARKER] * len(messages), list(agent_texts), list(messages))
        _, _, logits = self._run(encoded)
        probs = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
        return [{name: float(p[k]) for k, name in enumerate(ACTS)} for p in probs]

    def best_spans(self, slot_texts: Sequence[str], questions: Sequence[str],
                   messages: Sequence[str]) -> list[BestSpan | None]:
        """The best span for each (slot words, question, message), whatever its score, in batched runs."""
        encoded = self._encoder.encode(list(slot_texts), list(questions), list(messages))
        starts, ends, _ = self._run(encoded)
        return [best_span(e, starts[k], ends[k]) for k, e in enumerate(encoded)]

    def _run(self, encoded: list[Encoded]) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
        """Start and end scores (one row per sequence, its own length) and act scores, run longest first in runs
        of similar lengths."""
        started = time.perf_counter()
        order = sorted(range(len(encoded)), key=lambda k: -len(encoded[k].ids))
        starts: list[np.ndarray] = [np.zeros(0)] * len(encoded)
        ends: list[np.ndarray] = [np.zeros(0)] * len(encoded)
        acts = np.zeros((len(encoded), len(ACTS)), dtype=np.float32)
        k = 0
        while k < len(order):
            width = len(encoded[order[k]].ids)
            stop = k + 1
            while stop < len(order) and stop - k < RUN_ROWS and (stop - k + 1) * width <= RUN_TOKENS:
                stop += 1
            rows = order[k:stop]
            ids, mask, types = pad([encoded[r] for r in rows])
            with self._lock:
                s, e, a = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                                   "token_type_ids": types})
            for n, r in enumerate(rows):
                starts[r], ends[r] = s[n], e[n]
                acts[r] = a[n]
            k = stop
        USAGE.add(time.perf_counter() - started)
        return starts, ends, acts


class Usage:
    """How often the model ran in this process and for how long (``python -m core bench`` reports its share of a
    turn); ``reset`` starts counting again."""

    def __init__(self) -> None:
        self.calls = 0
        self.seconds = 0.0

    def add(self, seconds: float) -> None:
        self.calls += 1
        self.seconds += seconds

    def reset(self) -> None:
        self.calls, self.seconds = 0, 0.0


USAGE = Usage()


def recorded_threshold(model_file: Path) -> float:
    """The none-threshold recorded beside ``model_file`` (``reader.json``), else 0.0."""
    record = model_file.with_name(RECORD_FILE)
    try:
        return float(json.loads(record.read_text(encoding="utf-8")).get("threshold", 0.0))
    except (OSError, ValueError, TypeError, AttributeError):
        return 0.0


_loaded: LearnedReader | None = None
_tried = False
_lock = threading.Lock()


def switched_off() -> bool:
    """Whether ``SOP_READER_MODEL`` switches the learned reader off."""
    return os.environ.get(ENV, "").strip().lower() in ("off", "0", "no", "false", "none")


def model_file() -> Path:
    """The model this process loads: ``SOP_READER_MODEL`` when it names a file, else the shipped one."""
    raw = os.environ.get(ENV, "").strip()
    return Path(raw) if raw and not switched_off() else MODEL_DIR / MODEL_FILE


def reader() -> LearnedReader | None:
    """The process's learned reader, loaded on first use; None when switched off or unloadable (said once)."""
    global _loaded, _tried
    if switched_off():
        return None
    if _tried:
        return _loaded
    with _lock:
        if not _tried:
            path = model_file()
            try:
                if not path.is_file():
                    raise FileNotFoundError("no such file")
                _loaded = LearnedReader(path, threads=1)
            except Exception as exc:  # a missing, truncated or foreign file: the rule reading runs alone
                message = (f"The learned reader's model {path} cannot be loaded ({type(exc).__name__}: "
                           f"{str(exc)[:120]}); rebuild it with `{REBUILD}` — reading with rules only meanwhile.")
                log.warning(message)
            _tried = True
    return _loaded


def forget() -> None:
    """Drop the loaded model so the next call loads it again (tests, or after retraining)."""
    global _loaded, _tried
    with _lock:
        _loaded, _tried = None, False


def available() -> bool:
    """Whether the learned reader is on and loaded."""
    return reader() is not None


def spans(slots: Sequence[SlotWords], question: str, message: str) -> list[Proposal]:
    """:meth:`LearnedReader.spans` with the process's reader; [] when it is off or unavailable."""
    r = reader()
    return r.spans(slots, question, message) if r is not None and slots else []


def act(agent_text: str, message: str) -> dict[str, float]:
    """:meth:`LearnedReader.act` with the process's reader; {} when it is off or unavailable."""
    r = reader()
    return r.act(agent_text, message) if r is not None else {}
