"""The SGD loader, its examples and the reader's measures, on a tiny dataset of our own in SGD's format (no SGD
data is copied here)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from core.evaluation.sgd import (
    act_examples,
    act_labels,
    load_split,
    load_variant,
    positive_sample,
    reworded,
    slot_words,
    span_examples,
    unseen_services,
)
from core.evaluation.sgd_eval import act_figures, evaluate_rules, normalise, sample_indices, span_figures

PARKING = {"service_name": "Parking_1", "description": "Reserve a parking space",
           "slots": [{"name": "garage_name", "description": "Name of the garage", "is_categorical": False,
                      "possible_values": []}],
           "intents": [{"name": "ReserveSpace", "description": "Reserve a space in a garage"}]}
FERRIES = {"service_name": "Ferries_1", "description": "Book ferry crossings",
           "slots": [{"name": "departure_port", "description": "Port the ferry leaves from", "is_categorical": False,
                      "possible_values": []},
                     {"name": "cabin_class", "description": "Kind of cabin", "is_categorical": True,
                      "possible_values": ["deck", "cabin"]},
                     {"name": "arrival_port", "description": "Port the ferry sails to", "is_categorical": False,
                      "possible_values": []}],
           "intents": [{"name": "BookCrossing", "description": "Book a seat on a ferry crossing"}]}
FERRIES_REWORDED = {"service_name": "Ferries_11", "description": "Ferry tickets",
                    "slots": [{"name": "leaving_harbour", "description": "Where the boat sets off",
                               "is_categorical": False, "possible_values": []},
                              {"name": "berth_type", "description": "Seat or berth", "is_categorical": True,
                               "possible_values": ["deck", "cabin"]},
                              {"name": "landing_harbour", "description": "Where the boat lands",
                               "is_categorical": False, "possible_values": []}],
                    "intents": [{"name": "GetFerryTicket", "description": "Buy a ferry ticket"}]}

USER_1 = "I need a boat from Oban to the isle of Mull."


def _turn(speaker: str, text: str, frames: list[dict[str, Any]]) -> dict[str, Any]:
    return {"speaker": speaker, "utterance": text, "frames": frames}


def _dialogue() -> dict[str, Any]:
    start, end = USER_1.index("Oban"), USER_1.index("Oban") + 4
    start2 = USER_1.index("isle of Mull")
    return {"dialogue_id": "x_1", "services": ["Ferries_1"], "turns": [
        _turn("USER", USER_1, [{"service": "Ferries_1",
                                "slots": [{"slot": "departure_port", "start": start, "exclusive_end": end},
                                          {"slot": "arrival_port", "start": start2, "exclusive_end": start2 + 12}],
                                "actions": [{"act": "INFORM_INTENT", "slot": "intent", "values": ["BookCrossing"]},
                                            {"act": "INFORM", "slot": "departure_port", "values": ["Oban"]}],
                                "state": {"active_intent": "BookCrossing", "requested_slots": [],
                                          "slot_values": {}}}]),
        _turn("SYSTEM", "Shall I book a deck seat?", [{"service": "Ferries_1", "slots": [],
                                                       "actions": [{"act": "CONFIRM", "slot": "cabin_class",
                                                                    "values": ["deck"]}]}]),
        _turn("USER", "Yes please, thanks!", [{"service": "Ferries_1", "slots": [],
                                               "actions": [{"act": "AFFIRM", "slot": "", "values": []},
                                                           {"act": "THANK_YOU", "slot": "", "values": []}],
                                               "state": {"active_intent": "BookCrossing"}}]),
    ]}


def _write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as f:
            json.dump(data, f)
    else:
        path.write_text(json.dumps(data), encoding="utf-8")


@pytest.fixture
def sgd(tmp_path: Path) -> Path:
    """An SGD-shaped folder: train knows Parking_1 only; dev has Parking_1 and the unseen Ferries_1."""
    _write(tmp_path / "train" / "schema.json.gz", [PARKING])
    _write(tmp_path / "train" / "dialogues_001.json.gz", [])
    _write(tmp_path / "dev" / "schema.json.gz", [PARKING, FERRIES])
    _write(tmp_path / "dev" / "dialogues_001.json.gz", [_dialogue()])
    _write(tmp_path / "sgd_x" / "v1" / "dev" / "schema.json", [FERRIES_REWORDED])
    return tmp_path


def test_the_loader_reads_schemas_dialogues_and_the_unseen_services(sgd: Path) -> None:
    dev = load_split(sgd / "dev")
    train = load_split(sgd / "train")
    assert set(dev.schema) == {"Parking_1", "Ferries_1"} and len(dev.dialogues) == 1
    assert dev.files == ["dialogues_001.json.gz"]
    assert unseen_services(dev.schema, train.schema) == {"Ferries_1"}


def test_every_user_turn_pairs_with_every_non_categorical_slot(sgd: Path) -> None:
    examples = list(span_examples(load_split(sgd / "dev")))
    assert [(e.turn, e.slot, e.value) for e in examples] == [
        (0, "departure_port", "Oban"), (0, "arrival_port", "isle of Mull"),
        (2, "departure_port", None), (2, "arrival_port", None)]
    first = examples[0]
    assert first.question == "" and first.intent == "BookCrossing" and first.same_turn_positive
    assert examples[2].question == "Shall I book a deck seat?" and not examples[2].same_turn_positive


def test_acts_map_to_the_seven_classes(sgd: Path) -> None:
    acts = list(act_examples(load_split(sgd / "dev")))
    assert [a.acts for a in acts] == [("inform", "new_request"), ("affirm", "thanks")]
    assert acts[1].system_acts == ("CONFIRM",)
    assert act_labels([{"actions": [{"act": "REQUEST_ALTS"}, {"act": "GOODBYE"}, {"act": "OFFER"}]}]) == (
        "new_request", "goodbye")


def test_an_sgd_x_rewording_lines_up_with_the_original_by_position(sgd: Path) -> None:
    dev = load_split(sgd / "dev")
    variant = reworded(dev.schema, load_variant(sgd / "dev", "v1", dev.schema))
    plain = slot_words(dev.schema["Ferries_1"], "arrival_port", "BookCrossing")
    other = slot_words(dev.schema["Ferries_1"], "arrival_port", "BookCrossing", variant=variant)
    assert plain.text() == "arrival port: Port the ferry sails to (Book a seat on a ferry crossing)"
    assert other.text() == "landing harbour: Where the boat lands (Buy a ferry ticket)"


def test_a_rewording_that_does_not_line_up_is_refused(sgd: Path) -> None:
    broken = {**FERRIES_REWORDED, "slots": FERRIES_REWORDED["slots"][:2]}
    _write(sgd / "sgd_x" / "v2" / "dev" / "schema.json", [broken])
    dev = load_split(sgd / "dev")
    with pytest.raises(ValueError, match="Ferries_1"):
        load_variant(sgd / "dev", "v2", dev.schema)


def test_span_figures_count_spans_not_pairs() -> None:
    golds = ["Oban", None, "isle of Mull", None, "7:45"]
    predicted = ["oban.", "Mull", "Mull", None, None]
    # one right (case and punctuation aside), three predicted, three gold
    assert span_figures(golds, predicted) == {"precision": 0.3333, "recall": 0.3333, "f1": 0.3333,
                                              "predicted": 3, "gold": 3, "correct": 1}
    assert span_figures([None, None], [None, None])["f1"] == 0.0
    assert normalise("  “Isle of  Mull!” ") == "isle of mull"


def test_the_positive_sample_holds_forty_percent_positives(sgd: Path) -> None:
    pairs = list(span_examples(load_split(sgd / "dev")))
    examples = pairs[:2] * 2 + pairs[2:] * 10  # 4 positive, 20 negative
    chosen = sample_indices(examples)
    assert len(chosen) == 10 and sum(examples[k].start is not None for k in chosen) == 4
    assert sample_indices(examples) == chosen  # the same seed, the same sample
    drawn = positive_sample(examples, 0.4)
    assert len(drawn) == 10 and sum(e.start is not None for e in drawn) == 4


def test_act_figures() -> None:
    golds = [("affirm", "thanks"), ("goodbye",), ("question",)]
    probs = [{"affirm": 0.9, "thanks": 0.7, "goodbye": 0.1}, {"thanks": 0.8, "goodbye": 0.6},
             {"question": 0.95}]
    figures = act_figures(golds, probs)
    assert figures["accuracy"] == round(2 / 3, 4)
    assert figures["exact_set"] == round(2 / 3, 4)
    assert figures["top_act_per_gold_act"]["goodbye"] == 0.0


def test_the_rule_baseline_runs_on_the_unseen_services(sgd: Path) -> None:
    report = evaluate_rules(sgd / "dev", variants=("v1",))
    assert report["services"] == ["Ferries_1"] and report["pairs"] == 4 and report["positives"] == 2
    assert set(report["schemas"]) == {"original", "v1"}
    assert report["acts"]["turns"] == 2
