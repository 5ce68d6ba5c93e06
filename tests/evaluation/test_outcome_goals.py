"""Simulated customers judged by the goal they came with, written apart from the SOP under test: the demo's
order-status SOP meets the goal, and the same SOP broken two ways (its end moved before the answer, the shipped
condition inverted), both of which lint accepts, misses it, each with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.cli.main import main
from core.evaluation.outcome_goals import load_goals, simulate_goals
from core.shared.errors import UserInputError

GOALS = """
- name: a shipped order
  request: where is my order?
  knows: {order_id: ORD-10021}
  world:
    orders.get_status: [{result: {order_id: ORD-10021, status: shipped, items: a mouse, eta: 2026-12-01}}]
  wants:
    called: {orders.get_status: {order_id: ORD-10021}}
    reply_contains: [has shipped and should arrive]
    handoff: false
"""


def _goals(tmp_path: Path) -> Path:
    path = tmp_path / "goals.yaml"
    path.write_text(GOALS, encoding="utf-8")
    return path


def _break(ws: Path, old: str, new: str) -> None:
    sop = ws / "sops" / "order_status.json"
    text = sop.read_text(encoding="utf-8")
    assert old in text
    sop.write_text(text.replace(old, new), encoding="utf-8")


def test_the_sop_as_written_meets_the_goal(ws_copy: Path, tmp_path: Path) -> None:
    runs = simulate_goals(ws_copy, load_goals(_goals(tmp_path)), k=2)
    assert [r.met for r in runs] == [True, True], [r.problems for r in runs]
    assert runs[0].turns[1][0] == "ORD-10021"  # the customer answered the question from what it knows


@pytest.mark.parametrize(("old", "new", "missed"), [
    ('"resultKey": "order", "nextNodes": ["is_shipped"]', '"resultKey": "order", "nextNodes": ["end"]',
     "no reply says 'has shipped and should arrive'"),
    ("context.order.status === 'shipped'", "context.order.status !== 'shipped'",
     "no reply says 'has shipped and should arrive'"),
], ids=["end before the answer", "inverted condition"])
def test_a_broken_sop_misses_the_goal_and_says_why(ws_copy: Path, tmp_path: Path, old: str, new: str,
                                                   missed: str) -> None:
    _break(ws_copy, old, new)
    (run,) = simulate_goals(ws_copy, load_goals(_goals(tmp_path)))
    assert not run.met and missed in run.problems


def test_the_command_exits_1_on_a_missed_goal(ws_copy: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    goals = str(_goals(tmp_path))
    assert main(["simulate", "--workspace", str(ws_copy), "--goals", goals, "--k", "1"]) == 0
    assert "MET     a shipped order" in capsys.readouterr().out
    (tmp_path / "goals.yaml").write_text(GOALS.replace("order_id: ORD-10021}}", "order_id: ORD-99999}}"),
                                         encoding="utf-8")  # a goal the customer's own order cannot meet
    assert main(["simulate", "--workspace", str(ws_copy), "--goals", goals, "--k", "1", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["met"] == 0 and report["runs"][0]["problems"] == [
        "orders.get_status was called with order_id='ORD-10021'; the goal wants it called with order_id='ORD-99999'"]


def test_a_goal_without_a_request_or_with_an_unknown_want_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "goals.yaml"
    path.write_text("- name: vague\n  wants: {reply_contains: [hi]}\n", encoding="utf-8")
    with pytest.raises(UserInputError, match=r"goals.yaml: goal 1: needs a request"):
        load_goals(path)
    path.write_text("- name: odd\n  request: hi\n  wants: {replied: [hi]}\n", encoding="utf-8")
    with pytest.raises(UserInputError, match=r"goal 'odd': keys are .* wants takes called"):
        load_goals(path)
