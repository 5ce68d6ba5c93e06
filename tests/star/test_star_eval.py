"""``eval star``: the teacher-forced replay of STAR dialogues, on the tests' own two-dialogue fixture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.__main__ import main
from core.evaluation.star import evaluate_star
from core.evaluation.star_report import StarReport, format_report
from core.retrieval.embedding import CachedEmbedder
from core.shared.errors import UserInputError
from tests.star.support import FIXTURE


@pytest.fixture(scope="module")
def report(embedder: CachedEmbedder) -> StarReport:
    return evaluate_star(FIXTURE, embedder=embedder)


def steps(report: StarReport, dialogue: str) -> list[tuple[str, str]]:
    result = next(r for r in report.results if r.dialogue.id == dialogue)
    return [(t.gold, t.predicted) for t in result.turns]


def test_every_wizard_step_is_scored_with_the_engines_own_choice(report: StarReport) -> None:
    assert steps(report, "1") == [
        ("library_ask_card", "library_ask_card"),  # name volunteered: the name question is skipped
        ("library_ask_title", "library_ask_title"),
        ("query", "query"),
        ("library_ask_confirm", "library_ask_confirm"),  # the wizard acts again: the step loop goes on
        ("query", "query"),
        ("library_inform_renewed", "library_inform_renewed"),
        ("anything_else", "anything_else"),
        ("goodbye_1", "goodbye_1"),
    ]
    second = steps(report, "2")
    assert second[:4] == [("hello", "hello"), ("ask_name", "ask_name"), ("library_ask_card", "library_ask_card"),
                          ("library_ask_birthday", "library_ask_birthday")]  # "I don't remember my card number"
    assert ("out_of_scope", "out_of_scope") in second


def test_queries_are_scored_for_api_and_slot_values(report: StarReport) -> None:
    queries = [q for r in report.results for q in r.queries]
    assert len(queries) == 3 and all(q.api_match for q in queries)
    first = dict(queries[0].values)
    assert first == {"Title": True, "RequestType": True, "LibraryCardNumber": True, "FullName": True}
    assert dict(queries[2].values)["DateOfBirth"] is True


def test_the_report_has_the_contract_keys_and_consistent_figures(report: StarReport) -> None:
    d = report.to_dict()
    assert 0 <= d["accuracy"] <= 1 and 0 <= d["weighted_f1"] <= 1
    assert d["dialogues"] == 2 and d["turns"] == 17
    happy, every = d["sets"]["happy_single_task"], d["sets"]["all"]
    assert happy["dialogues"] == 1 and happy["turns"] == 8 and happy["accuracy"] == 1.0
    assert every["per_task"]["library_renew"]["turns"] == 17
    assert d["accuracy"] == every["accuracy"] and d["weighted_f1"] == every["weighted_f1"]
    assert every["queries"]["slot_value_accuracy"] == 1.0
    assert d["active_task"]["selections"] == 0 and d["errors"] == []
    wrong = {(c["gold"], c["predicted"]) for c in d["confusions"]["all"]}
    assert all(g != p for g, p in wrong)
    assert json.loads(json.dumps(d)) == d
    assert "weighted F1" in format_report(report)


def test_hidden_user_instructions_never_reach_the_engine(report: StarReport) -> None:
    # dialogue 2 has "Say you do not remember the number." as a hidden instruction right before the customer says
    # so: taken as a message, the card question would be passed over twice and the date of birth not asked
    assert steps(report, "2")[3] == ("library_ask_birthday", "library_ask_birthday")
    assert steps(report, "2")[4] == ("library_ask_title", "library_ask_title")


def test_a_folder_that_is_not_star_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="not a STAR folder"):
        evaluate_star(tmp_path)


def test_cli_eval_star_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["eval", "star", str(FIXTURE), "--json", "--dialogue", "1", "--min-weighted-f1", "0.9"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["dialogues"] == 1 and out["weighted_f1"] == 1.0
    assert main(["eval", "star", str(FIXTURE), "--json", "--min-weighted-f1", "1.01"]) == 1


def test_cli_import_writes_a_lint_clean_workspace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = FIXTURE / "tasks" / "library_renew"
    assert main(["import", "star", str(task), "--into", str(tmp_path / "ws"), "--dry-run", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["written"] is False and not (tmp_path / "ws").exists()
    assert main(["import", "star", str(task), "--into", str(tmp_path / "ws")]) == 0
    out = capsys.readouterr().out
    assert "library_renew -> SOP library.renew" in out
    assert (tmp_path / "ws" / "sops" / "library_renew.json").exists()
    assert main(["import", "star", str(tmp_path), "--into", str(tmp_path / "ws")]) == 2  # not a task folder
