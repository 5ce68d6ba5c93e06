"""The Schema-Guided Dialogue dataset (SGD, Rastogi et al. 2020) and its SGD-X rewordings (Lee et al. 2022), read
into the learned reader's examples.

A folder such as ``../shared/data/sgd/train`` holds ``schema.json.gz`` and ``dialogues_NNN.json.gz`` (each read
with ``json.load(gzip.open(path, "rt"))``); the rewordings live beside it in ``sgd_x/v1..v5/<split>/schema.json``,
each service named as the original plus the variant's digit (``Banks_2`` -> ``Banks_21``) and its slots and
intents in the original's order.

Two kinds of example come out of every USER turn:

- :class:`SpanExample`: for each frame of the turn, each non-categorical slot of the frame's service, the slot
  described in words, the previous system utterance, the user's utterance and the gold value's character span in
  it (or none: most pairs hold no value).
- :class:`ActExample`: the user's acts in the turn, mapped to the reader's seven classes (:data:`ACT_OF`).

How SGD's user acts map to the seven classes (a turn may carry several; :func:`act_labels` keeps them all):

========================  ============  ===================================================================
SGD user act              class         why
========================  ============  ===================================================================
INFORM                    inform        gives a value
AFFIRM, AFFIRM_INTENT     affirm        says yes to a confirmation or an offered intent
SELECT                    affirm        takes what the system offered
NEGATE, NEGATE_INTENT     negate        says no
INFORM_INTENT             new_request   asks for something to be done
REQUEST_ALTS              new_request   asks for other options than the one offered
REQUEST                   question      asks for a slot's value
THANK_YOU                 thanks
GOODBYE                   goodbye
========================  ============  ===================================================================
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.understanding import ACTS, SlotWords

ACT_OF: dict[str, str] = {
    "INFORM": "inform",
    "AFFIRM": "affirm", "AFFIRM_INTENT": "affirm", "SELECT": "affirm",
    "NEGATE": "negate", "NEGATE_INTENT": "negate",
    "INFORM_INTENT": "new_request", "REQUEST_ALTS": "new_request",
    "REQUEST": "question",
    "THANK_YOU": "thanks",
    "GOODBYE": "goodbye",
}
assert set(ACT_OF.values()) == set(ACTS)

VARIANTS = ("v1", "v2", "v3", "v4", "v5")  # SGD-X's five rewordings, v1 closest to the original wording


@dataclass(frozen=True)
class SlotSchema:
    """One slot of a service's schema."""

    name: str
    description: str
    categorical: bool
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class IntentSchema:
    """One intent of a service's schema."""

    name: str
    description: str


@dataclass(frozen=True)
class Service:
    """A service's schema: its slots and intents, in the schema file's order."""

    name: str
    description: str
    slots: tuple[SlotSchema, ...]
    intents: tuple[IntentSchema, ...]

    def slot(self, name: str) -> SlotSchema | None:
        return next((s for s in self.slots if s.name == name), None)

    def intent(self, name: str) -> IntentSchema | None:
        return next((i for i in self.intents if i.name == name), None)


Schema = dict[str, Service]
"""Services by their original SGD name."""


@dataclass(frozen=True)
class SpanExample:
    """A user turn and one non-categorical slot of its frame's service: the value's span, or none."""

    dialogue: str
    turn: int
    service: str
    slot: str  # the original slot name (the schema variant words it)
    intent: str  # the frame's active intent (original name), "" when none
    question: str  # the previous system utterance, "" at the start
    message: str
    start: int | None = None
    end: int | None = None
    same_turn_positive: bool = False  # another slot of the same frame holds a value in this turn
    asked: bool = False  # the previous system turn requested this slot (its REQUEST act)

    @property
    def value(self) -> str | None:
        return None if self.start is None or self.end is None else self.message[self.start:self.end]


@dataclass(frozen=True)
class ActExample:
    """A user turn and its acts in the reader's classes."""

    dialogue: str
    turn: int
    question: str
    message: str
    acts: tuple[str, ...]
    system_acts: tuple[str, ...] = ()


@dataclass
class Dialogues:
    """A split's dialogues and its schema."""

    schema: Schema
    dialogues: list[dict[str, Any]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def parse_schema(raw: list[dict[str, Any]], strip_variant: bool = False) -> Schema:
    """Services keyed by name; an SGD-X variant's names (``Banks_21``) are keyed by the original's
    (``Banks_2``) when ``strip_variant``."""
    out: Schema = {}
    for s in raw:
        name = s["service_name"][:-1] if strip_variant else s["service_name"]
        slots = tuple(SlotSchema(x["name"], x.get("description", ""), bool(x.get("is_categorical")),
                                 tuple(x.get("possible_values") or ())) for x in s.get("slots", []))
        intents = tuple(IntentSchema(x["name"], x.get("description", "")) for x in s.get("intents", []))
        out[name] = Service(name, s.get("description", ""), slots, intents)
    return out


def _read_json(path: Path) -> Any:
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    with path.open(encoding="utf-8") as f:
        return json.load(f)


def load_schema(folder: Path) -> Schema:
    """The schema of a split folder (``schema.json.gz`` or ``schema.json``)."""
    for name in ("schema.json.gz", "schema.json"):
        if (folder / name).is_file():
            return parse_schema(_read_json(folder / name))
    raise FileNotFoundError(f"no schema.json.gz in {folder}")


def load_split(folder: Path, limit: int | None = None) -> Dialogues:
    """A split folder's schema and dialogues (files in name order; ``limit`` dialogues at most)."""
    out = Dialogues(load_schema(folder))
    files = sorted(p for p in folder.iterdir() if p.name.startswith("dialogues_") and p.name.endswith((".json.gz",
                                                                                                        ".json")))
    for path in files:
        if limit is not None and len(out.dialogues) >= limit:
            break
        out.files.append(path.name)
        out.dialogues.extend(_read_json(path))
    if limit is not None:
        out.dialogues = out.dialogues[:limit]
    return out


def variant_folder(split_folder: Path, variant: str) -> Path:
    """Where SGD-X's ``variant`` schema of ``split_folder``'s split lives: ``<sgd>/sgd_x/<variant>/<split>``."""
    return split_folder.resolve().parent / "sgd_x" / variant / split_folder.resolve().name


def load_variant(split_folder: Path, variant: str, original: Schema) -> Schema:
    """SGD-X's ``variant`` rewording of the split's schema, keyed by the original service names, checked against
    the original (the same slots, in the same order, of the same kind).

    Raises:
        FileNotFoundError: the variant's schema is not there.
        ValueError: the variant does not line up with the original schema.
    """
    schema = parse_schema(_read_json(variant_folder(split_folder, variant) / "schema.json"), strip_variant=True)
    for name, service in schema.items():
        base = original.get(name)
        if base is None or len(base.slots) != len(service.slots) or len(base.intents) != len(service.intents) or any(
                a.categorical != b.categorical for a, b in zip(base.slots, service.slots, strict=True)):
            raise ValueError(f"SGD-X {variant}: service {name} does not line up with the original schema")
    return schema


def reworded(original: Schema, variant: Schema) -> dict[tuple[str, str], SlotSchema]:
    """(service, original slot name) -> the variant's slot; intents likewise under the key (service, "#" + name)."""
    out: dict[tuple[str, str], SlotSchema] = {}
    for name, service in variant.items():
        base = original[name]
        for a, b in zip(base.slots, service.slots, strict=True):
            out[(name, a.name)] = b
        for ia, ib in zip(base.intents, service.intents, strict=True):
            out[(name, "#" + ia.name)] = SlotSchema(ib.name, ib.description, False)
    return out


def unseen_services(dev: Schema, train: Schema) -> set[str]:
    """The dev services train does not have (the unseen-service measure)."""
    return set(dev) - set(train)


def slot_words(service: Service, slot: str, intent: str = "", *,
               variant: dict[tuple[str, str], SlotSchema] | None = None, example: str = "") -> SlotWords:
    """A slot described in words as the reader takes it: its name, its description, the active intent's
    description and an example value, in the original or an SGD-X variant's wording."""
    base = service.slot(slot)
    if base is None:
        raise KeyError(f"{service.name} has no slot {slot}")
    words = variant.get((service.name, slot), base) if variant else base
    intent_words = ""
    if intent:
        it = service.intent(intent)
        if it is not None:
            intent_words = variant[(service.name, "#" + intent)].description if variant and (
                service.name, "#" + intent) in variant else it.description
    return SlotWords(name=words.name, description=words.description, intent=intent_words, example=example)


def _previous_system(turns: list[dict[str, Any]], i: int) -> tuple[str, tuple[str, ...]]:
    if i == 0 or turns[i - 1].get("speaker") != "SYSTEM":
        return "", ()
    prev = turns[i - 1]
    acts = tuple(a["act"] for f in prev.get("frames", []) for a in f.get("actions", []))
    return prev.get("utterance", ""), acts


def _requested(turns: list[dict[str, Any]], i: int) -> set[tuple[str, str]]:
    """(service, slot) the previous system turn asked for."""
    if i == 0 or turns[i - 1].get("speaker") != "SYSTEM":
        return set()
    return {(f.get("service", ""), a.get("slot", "")) for f in turns[i - 1].get("frames", [])
            for a in f.get("actions", []) if a.get("act") == "REQUEST"}


def span_examples(data: Dialogues, services: set[str] | None = None) -> Iterator[SpanExample]:
    """Every user turn x every non-categorical slot of each of its frames' services (of ``services`` when
    given), with the gold span from the frame's ``slots`` (the first, when a slot is annotated twice)."""
    for dialogue in data.dialogues:
        turns = dialogue.get("turns", [])
        for i, turn in enumerate(turns):
            if turn.get("speaker") != "USER":
                continue
            question, _ = _previous_system(turns, i)
            asked = _requested(turns, i)
            message = turn.get("utterance", "")
            for frame in turn.get("frames", []):
                service = data.schema.get(frame.get("service", ""))
                if service is None or (services is not None and service.name not in services):
                    continue
                gold: dict[str, tuple[int, int]] = {}
                for s in frame.get("slots", []):
                    if "start" in s and "exclusive_end" in s:
                        gold.setdefault(s["slot"], (int(s["start"]), int(s["exclusive_end"])))
                intent = (frame.get("state") or {}).get("active_intent", "")
                intent = "" if intent in ("", "NONE") else intent
                for slot in service.slots:
                    if slot.categorical:
                        continue
                    span = gold.get(slot.name)
                    others = any(k != slot.name for k in gold)
                    yield SpanExample(dialogue["dialogue_id"], i, service.name, slot.name, intent, question, message,
                                      span[0] if span else None, span[1] if span else None, others,
                                      (service.name, slot.name) in asked)


def act_labels(frames: list[dict[str, Any]]) -> tuple[str, ...]:
    """The reader's classes of a user turn's acts (:data:`ACT_OF`), in :data:`ACTS` order, each once."""
    found = {ACT_OF[a["act"]] for f in frames for a in f.get("actions", []) if a.get("act") in ACT_OF}
    return tuple(a for a in ACTS if a in found)


def act_examples(data: Dialogues, services: set[str] | None = None) -> Iterator[ActExample]:
    """Every user turn (with a frame of ``services`` when given) and its acts."""
    for dialogue in data.dialogues:
        turns = dialogue.get("turns", [])
        for i, turn in enumerate(turns):
            if turn.get("speaker") != "USER":
                continue
            frames = turn.get("frames", [])
            if services is not None and not any(f.get("service") in services for f in frames):
                continue
            acts = act_labels(frames)
            if not acts:
                continue
            question, system_acts = _previous_system(turns, i)
            yield ActExample(dialogue["dialogue_id"], i, question, turn.get("utterance", ""), acts, system_acts)


def slot_value_examples(data: Dialogues) -> dict[tuple[str, str], list[str]]:
    """(service, slot) -> the values users gave for it, in order seen (for example values in training)."""
    out: dict[tuple[str, str], list[str]] = {}
    for ex in span_examples(data):
        if ex.value is not None:
            out.setdefault((ex.service, ex.slot), []).append(ex.value)
    return out


def positive_sample(examples: list[SpanExample], share: float = 0.4, seed: int = 13) -> list[SpanExample]:
    """Every example with a value and as many without, drawn with ``seed``, as make ``share`` of them positive
    (all negatives when there are too few)."""
    positives = [e for e in examples if e.start is not None]
    negatives = [e for e in examples if e.start is None]
    wanted = round(len(positives) * (1 - share) / share) if share > 0 else len(negatives)
    rng = random.Random(seed)
    chosen = negatives if wanted >= len(negatives) else rng.sample(negatives, wanted)
    return positives + chosen
