"""``python -m core eval sgd <sgd>/dev``: the learned reader measured on SGD's dev split, as the data's README
says.

Only the dev services train never has (the unseen-service measure). Every user turn of them x every
non-categorical slot of its frame's service is one pair (the natural rate: 3 to 6 in 100 pairs hold a value). A
predicted span counts when it equals the gold value, case and surrounding punctuation aside:

- span precision = correct predicted spans / predicted spans; recall = correct predicted spans / gold spans; F1;
- the same on a 40% positive sample (every pair with a value and as many drawn without, fixed seed), for
  comparison with figures measured that way;
- act accuracy on the user turns of the same services: the reader's most probable act is one of the turn's acts
  (:data:`core.evaluation.sgd.ACT_OF`), and the exact set (every act above one half, no other);
- the span figures again with each SGD-X rewording's schema (the spread). The act input names no slot, so its
  figures do not change with the schema and are given once.

A slot is worded as :func:`core.evaluation.sgd.slot_words` says: its name, description and the frame's active
intent's description (what the running procedure does, known to the engine at run time).

``--rule-only`` measures the engine's own value extraction instead (:func:`core.understanding.extract.extract`,
then :func:`~core.understanding.extract.labelled_value`), the slot's kind inferred from its name and description
as a workspace's slot is (:func:`core.workspace.slots.infer_type`), "asked" when the previous system turn requested
the slot. The rules give values, not spans: a rule value counts when it equals the gold text, or equals what the
same extraction reads from the gold text alone (the same date written differently). Acts by the lexicon's
tests: farewell, thanks, yes/no, a question, else inform.
"""

from __future__ import annotations

import random
import string
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from core.evaluation.sgd import (
    ActExample,
    Dialogues,
    SpanExample,
    act_examples,
    load_schema,
    load_split,
    load_variant,
    reworded,
    slot_words,
    span_examples,
    unseen_services,
)
from core.understanding import ACTS, BestSpan

Progress = Callable[[str], None]
SAMPLE_SHARE = 0.4
SAMPLE_SEED = 13
WITH_INTENT = True


def normalise(value: str | None) -> str | None:
    """A value as compared: lower case, without surrounding spaces and punctuation (None stays None)."""
    if value is None:
        return None
    out = value.strip().strip(string.punctuation + string.whitespace + "“”‘’").lower()
    return " ".join(out.split()) or None


def span_figures(golds: Sequence[str | None], predictions: Sequence[str | None],
                 correct: Sequence[bool] | None = None) -> dict[str, float | int]:
    """Span precision, recall and F1 over pairs: each pair's gold value and predicted value (None for none).
    ``correct`` says, per pair, whether a prediction matches its gold value (by default: equal after
    :func:`normalise`)."""
    predicted = gold = right = 0
    for k, (g, p) in enumerate(zip(golds, predictions, strict=True)):
        gold += g is not None
        predicted += p is not None
        if p is not None and g is not None:
            right += bool(correct[k]) if correct is not None else normalise(p) == normalise(g)
    precision = right / predicted if predicted else 0.0
    recall = right / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4),
            "predicted": predicted, "gold": gold, "correct": right}


def sample_indices(examples: Sequence[SpanExample], share: float = SAMPLE_SHARE, seed: int = SAMPLE_SEED) -> list[int]:
    """The pairs of the positive sample: every pair with a value and as many without, drawn with ``seed``, as
    make ``share`` of them positive."""
    positives = [k for k, e in enumerate(examples) if e.start is not None]
    negatives = [k for k, e in enumerate(examples) if e.start is None]
    wanted = min(len(negatives), round(len(positives) * (1 - share) / share))
    return sorted(positives + random.Random(seed).sample(negatives, wanted))


def act_figures(golds: Sequence[Sequence[str]], predictions: Sequence[dict[str, float]]) -> dict[str, Any]:
    """Act accuracy (the most probable act is one of the turn's), exact-set accuracy (the acts above one half are
    the turn's) and per-act recall of the top act."""
    top_right = exact = 0
    per: dict[str, list[int]] = {a: [0, 0] for a in ACTS}
    for gold, probs in zip(golds, predictions, strict=True):
        top = max(probs, key=lambda a: probs[a]) if probs else ""
        top_right += top in gold
        exact += {a for a, p in probs.items() if p >= 0.5} == set(gold)
        for a in gold:
            per[a][1] += 1
            per[a][0] += top == a
    n = len(golds)
    return {"turns": n, "accuracy": round(top_right / n, 4) if n else 0.0,
            "exact_set": round(exact / n, 4) if n else 0.0,
            "top_act_per_gold_act": {a: round(r / t, 4) for a, (r, t) in per.items() if t}}


def _dev(folder: Path, limit: int | None) -> tuple[Dialogues, set[str], list[SpanExample], list[ActExample]]:
    data = load_split(folder, limit=limit)
    train_folder = folder.resolve().parent / "train"
    services = unseen_services(data.schema, load_schema(train_folder)) if train_folder.is_dir() else set(data.schema)
    return data, services, list(span_examples(data, services)), list(act_examples(data, services))


def _wordings(folder: Path, data: Dialogues, variants: Sequence[str]) -> dict[str, dict[Any, Any] | None]:
    out: dict[str, dict[Any, Any] | None] = {"original": None}
    for v in variants:
        out[v] = reworded(data.schema, load_variant(folder, v, data.schema))
    return out


def _slot_texts(data: Dialogues, examples: Sequence[SpanExample], variant: dict[Any, Any] | None) -> list[str]:
    return [slot_words(data.schema[e.service], e.slot, e.intent if WITH_INTENT else "", variant=variant).text()
            for e in examples]


def score_pairs(reader: Any, data: Dialogues, examples: Sequence[SpanExample],
                variant: dict[Any, Any] | None = None) -> list[BestSpan | None]:
    """The reader's best span for every pair (whatever its score), in the variant's wording."""
    return list(reader.best_spans(_slot_texts(data, examples, variant), [e.question for e in examples],
                                  [e.message for e in examples]))


def predictions(examples: Sequence[SpanExample], best: Sequence[BestSpan | None], threshold: float) -> list[str | None]:
    """The predicted value of each pair: its best span's text when its margin reaches ``threshold``."""
    return [e.message[b.start:b.end] if b is not None and b.margin >= threshold else None
            for e, b in zip(examples, best, strict=True)]


def one_slot_per_span(examples: Sequence[SpanExample], best: Sequence[BestSpan | None],
                      threshold: float) -> list[str | None]:
    """:func:`predictions` with each span of a turn given to one slot only, the one it scores highest for (as
    the reading's assignment does, ARCHITECTURE §3b): a proposal overlapping a better one of the same turn is
    dropped."""
    out = predictions(examples, best, threshold)
    turns: dict[tuple[str, int], list[int]] = {}
    for k, e in enumerate(examples):
        if out[k] is not None:
            turns.setdefault((e.dialogue, e.turn), []).append(k)
    for ks in turns.values():
        kept: list[BestSpan] = []
        for k in sorted(ks, key=lambda k: -best[k].margin):  # type: ignore[union-attr]
            b = best[k]
            assert b is not None
            if any(b.start < o.end and o.start < b.end for o in kept):
                out[k] = None
            else:
                kept.append(b)
    return out


def _both(examples: Sequence[SpanExample], predicted: Sequence[str | None], sample: Sequence[int],
          correct: Sequence[bool] | None = None) -> dict[str, Any]:
    golds = [e.value for e in examples]
    return {"natural": span_figures(golds, predicted, correct),
            "sample40": span_figures([golds[k] for k in sample], [predicted[k] for k in sample],
                                     [correct[k] for k in sample] if correct is not None else None)}


def _spread(schemas: dict[str, Any]) -> dict[str, Any]:
    rewordings = {k: v for k, v in schemas.items() if k != "original"}
    if not rewordings:
        return {}
    out: dict[str, Any] = {}
    for rate in ("natural", "sample40"):
        f1s = [v[rate]["f1"] for v in rewordings.values()]
        out[rate] = {"f1_min": min(f1s), "f1_max": max(f1s), "f1_mean": round(sum(f1s) / len(f1s), 4)}
    return out


def tune_threshold(reader: Any, folder: Path, limit: int | None = None) -> tuple[float, list[dict[str, float]]]:
    """The margin over "none" that gives the best span F1 at the natural rate on ``folder``'s unseen services in
    the original wording, and the sweep (every whole step) it was chosen from."""
    data, _, examples, _ = _dev(folder, limit)
    return best_threshold(examples, score_pairs(reader, data, examples))


def best_threshold(examples: Sequence[SpanExample],
                   best: Sequence[BestSpan | None]) -> tuple[float, list[dict[str, float]]]:
    """The threshold (in quarters from -3 to 10) with the best natural-rate F1 over scored pairs, and the sweep."""
    golds = [e.value for e in examples]
    sweep: list[dict[str, float]] = []
    chosen, top = 0.0, -1.0
    for step in range(-12, 41):
        t = step / 4
        fig = span_figures(golds, predictions(examples, best, t))
        if float(fig["f1"]) > top:
            chosen, top = t, float(fig["f1"])
        if step % 4 == 0:
            sweep.append({"threshold": t, "precision": fig["precision"], "recall": fig["recall"], "f1": fig["f1"]})
    return chosen, sweep


def tune_and_evaluate(reader: Any, folder: Path, variants: Sequence[str] = ("v1", "v2", "v3", "v4", "v5"),
                      progress: Progress | None = None) -> tuple[float, list[dict[str, float]], dict[str, Any]]:
    """:func:`tune_threshold`, set on ``reader``, then :func:`evaluate_reader` (the original wording scored
    once for both)."""
    data, _, examples, _ = _dev(folder, None)
    t = time.time()
    scored = score_pairs(reader, data, examples)
    threshold, sweep = best_threshold(examples, scored)
    reader.threshold = threshold
    if progress:
        progress(f"none-threshold {threshold:g} (best natural-rate F1 on dev, {time.time() - t:.0f} s)")
    seconds = round(time.time() - t, 1)
    report = evaluate_reader(folder, reader, variants, progress=progress, scored=scored)
    report["schemas"]["original"]["seconds"] = seconds
    report["wall_seconds"] = round(report["wall_seconds"] + seconds, 1)
    return threshold, sweep, report


def evaluate_reader(folder: Path, reader: Any = None, variants: Sequence[str] = ("v1", "v2", "v3", "v4", "v5"),
                    limit: int | None = None, progress: Progress | None = None,
                    scored: Sequence[BestSpan | None] | None = None) -> dict[str, Any]:
    """The learned reader's figures on ``folder`` (a dev split folder), in the original wording and each of
    ``variants``; ``reader`` defaults to the shipped model, on two threads. ``scored``: the original wording's
    best spans when they are at hand."""
    began = time.time()
    if reader is None:
        from core.understanding import LearnedReader, reader_model_file

        path = reader_model_file()
        if not path.is_file():
            return {"error": f"no learned reader model at {path}: build it with "
                             "`python -m core train reader ../shared/data/sgd`"}
        reader = LearnedReader(path, threads=2)
    data, services, examples, acts = _dev(folder, limit)
    sample = sample_indices(examples)
    report: dict[str, Any] = {"reader": "learned", "model": str(getattr(reader, "model_file", "")),
                              "threshold": reader.threshold, "folder": str(folder), "services": sorted(services),
                              "dialogues": len(data.dialogues), "pairs": len(examples),
                              "positives": sum(e.start is not None for e in examples), "sample40_pairs": len(sample),
                              "schemas": {}}
    t = time.time()
    probs = list(reader.acts([a.question for a in acts], [a.message for a in acts]))
    report["acts"] = {**act_figures([a.acts for a in acts], probs), "seconds": round(time.time() - t, 1)}
    if progress:
        progress(f"acts: accuracy {report['acts']['accuracy']:.3f} on {len(acts)} turns "
                 f"({report['acts']['seconds']} s)")
    for name, variant in _wordings(folder, data, variants).items():
        t = time.time()
        best = list(scored) if name == "original" and scored is not None else score_pairs(reader, data, examples,
                                                                                           variant)
        figures = _both(examples, predictions(examples, best, reader.threshold), sample)
        golds = [e.value for e in examples]
        figures["natural_one_slot_per_span"] = span_figures(golds, one_slot_per_span(examples, best,
                                                                                     reader.threshold))
        figures["seconds"] = round(time.time() - t, 1)
        report["schemas"][name] = figures
        if progress:
            progress(f"{name}: {_line(figures)} ({figures['seconds']} s)")
    report["spread"] = _spread(report["schemas"])
    model = getattr(reader, "model_file", None)
    if model is not None:
        report["latency"] = latency(Path(model), data, examples)
        if progress:
            progress(f"latency of spans() on one thread: {report['latency']}")
    report["wall_seconds"] = round(time.time() - began, 1)
    return report


def latency(model_file: Path, data: Dialogues, examples: Sequence[SpanExample], turns: int = 60) -> dict[str, Any]:
    """Milliseconds per :meth:`~core.understanding.candidates.learned.LearnedReader.spans` call on one thread (as
    at run time), for 1 and for 5 slots of a turn's service, over the first ``turns`` user turns: median and 95th
    percentile."""
    import statistics

    from core.understanding import LearnedReader

    reader = LearnedReader(model_file, threads=1)
    by_turn: dict[tuple[str, int], list[SpanExample]] = {}
    for e in examples:
        by_turn.setdefault((e.dialogue, e.turn), []).append(e)
    chosen = [pairs for pairs in by_turn.values() if len(pairs) >= 5][:turns]
    out: dict[str, Any] = {"turns": len(chosen)}
    for n in (1, 5):
        times: list[float] = []
        for pairs in chosen:
            slots = [slot_words(data.schema[e.service], e.slot, e.intent) for e in pairs[:n]]
            t = time.perf_counter()
            reader.spans(slots, pairs[0].question, pairs[0].message)
            times.append((time.perf_counter() - t) * 1000)
        if times:
            times.sort()
            out[f"{n}_slot{'s' if n > 1 else ''}_ms"] = {
                "median": round(statistics.median(times), 1), "p95": round(times[int(0.95 * (len(times) - 1))], 1)}
    return out


def evaluate_rules(folder: Path, variants: Sequence[str] = ("v1", "v2", "v3", "v4", "v5"), limit: int | None = None,
                   progress: Progress | None = None) -> dict[str, Any]:
    """The rule-only baseline's figures (see the module's docstring)."""
    from core.language import text as T

    began = time.time()
    data, services, examples, acts = _dev(folder, limit)
    sample = sample_indices(examples)
    report: dict[str, Any] = {"reader": "rules", "folder": str(folder), "services": sorted(services),
                              "dialogues": len(data.dialogues), "pairs": len(examples),
                              "positives": sum(e.start is not None for e in examples), "sample40_pairs": len(sample),
                              "schemas": {}}
    guessed = [rule_act(T, a.message) for a in acts]
    report["acts"] = act_figures([a.acts for a in acts], [{g: 1.0} for g in guessed])
    report["acts"]["exact_set"] = None  # one act a turn: no set to compare
    for name, variant in _wordings(folder, data, variants).items():
        t = time.time()
        predicted, correct = rule_values(data, examples, variant)
        figures = _both(examples, predicted, sample, correct)
        figures["seconds"] = round(time.time() - t, 1)
        report["schemas"][name] = figures
        if progress:
            progress(f"{name}: {_line(figures)} ({figures['seconds']} s)")
    report["spread"] = _spread(report["schemas"])
    report["wall_seconds"] = round(time.time() - began, 1)
    return report


def rule_act(T: Any, message: str) -> str:
    """The rule baseline's act for a message: farewell, thanks, yes/no, a question, else inform."""
    if T.is_farewell(message):
        return "goodbye"
    if T.is_thanks(message):
        return "thanks"
    said = T.yes_no(message)
    if said is not None:
        return "affirm" if said else "negate"
    return "question" if T.is_question(message) else "inform"


def rule_values(data: Dialogues, examples: Sequence[SpanExample],
                variant: dict[Any, Any] | None) -> tuple[list[str | None], list[bool]]:
    """The rule baseline's value for each pair (as text) and whether it matches the gold value."""
    from core.understanding import extract_values, labelled_value
    from core.workspace.slots import Vocabulary, infer_type

    kinds: dict[tuple[str, str], Any] = {}
    predicted: list[str | None] = []
    correct: list[bool] = []
    for e in examples:
        words = slot_words(data.schema[e.service], e.slot, variant=variant)
        key = (words.name, words.description)
        if key not in kinds:
            kinds[key] = infer_type(words.name, words.description, Vocabulary())
        st = kinds[key]
        value = extract_values(st, e.message, asked=e.asked)
        if value is None:
            value = labelled_value(st, words.name, e.message)
        text = None if value is None else str(value)
        predicted.append(text)
        gold = e.value
        same = False
        if text is not None and gold is not None:
            same = normalise(text) == normalise(gold) or value == extract_values(st, gold, asked=True)
        correct.append(same)
    return predicted, correct


def _line(figures: dict[str, Any]) -> str:
    n, s = figures["natural"], figures["sample40"]
    return (f"natural P {n['precision']:.3f} R {n['recall']:.3f} F1 {n['f1']:.3f} | "
            f"40% sample P {s['precision']:.3f} R {s['recall']:.3f} F1 {s['f1']:.3f}")


def format_sgd(report: dict[str, Any]) -> str:
    """The report as text: one line per schema wording, the acts, the spread and the wall time."""
    lines = [f"SGD dev, unseen services ({', '.join(report['services'])}): {report['dialogues']} dialogues, "
             f"{report['pairs']} turn-and-slot pairs, {report['positives']} with a value "
             f"({100 * report['positives'] / max(1, report['pairs']):.1f}%); 40% sample: {report['sample40_pairs']} "
             f"pairs",
             f"reader: {report['reader']}" + (f" ({report['model']}, none-threshold {report['threshold']:g})"
                                              if report["reader"] == "learned" else " (extraction by inferred kind)")]
    width = max(len(k) for k in report["schemas"])
    for name, figures in report["schemas"].items():
        lines.append(f"  {name:<{width}}  {_line(figures)}")
    one = report["schemas"].get("original", {}).get("natural_one_slot_per_span")
    if one:
        lines.append(f"  original, each span to one slot of its turn: natural P {one['precision']:.3f} "
                     f"R {one['recall']:.3f} F1 {one['f1']:.3f}")
    acts = report["acts"]
    exact = f", exact set {acts['exact_set']:.3f}" if acts.get("exact_set") is not None else ""
    lines.append(f"acts: accuracy {acts['accuracy']:.3f}{exact} on {acts['turns']} user turns "
                 f"(the same for every wording)")
    spread = report.get("spread", {}).get("natural")
    if spread:
        lines.append(f"SGD-X spread, natural-rate F1: {spread['f1_min']:.3f} to {spread['f1_max']:.3f} "
                     f"(mean {spread['f1_mean']:.3f})")
    lat = report.get("latency")
    if lat and "1_slot_ms" in lat:
        lines.append(f"spans() on one thread: 1 slot {lat['1_slot_ms']['median']} ms, 5 slots "
                     f"{lat['5_slots_ms']['median']} ms (median of {lat['turns']} turns; p95 "
                     f"{lat['1_slot_ms']['p95']} / {lat['5_slots_ms']['p95']} ms)")
    lines.append(f"wall time {report['wall_seconds']:.0f} s")
    return "\n".join(lines)
