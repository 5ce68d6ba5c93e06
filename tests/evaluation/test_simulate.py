"""``simulate``: personas (a goal and a manner) drive the real engine, are judged by checks read from the SOP,
and a failing run becomes a conversation test the runner loads."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from core.__main__ import main
from core.engine.build import Workspace, load_workspace
from core.evaluation.personas import MANNERS, THAI_SCRIPT
from core.evaluation.sim_llm import CUSTOMER_PROMPT, SIMULATOR
from core.evaluation.sim_report import CHECKS, SimulationReport
from core.evaluation.simulate import failing_tests, simulate
from core.evaluation.testing import WorkspaceCache, run_file
from core.evaluation.testspec import load_spec
from core.retrieval.embedding import CachedEmbedder
from core.understanding import LLMSettings
from tests.brains.fake_openai import FakeOpenAI, Reply, abstain, content, schema_name

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo_report(demo_ws: Workspace) -> SimulationReport:
    return simulate(ROOT, k=3, seed=7, loaded=demo_ws)


def _stable(report: SimulationReport) -> dict[str, Any]:
    d = report.to_dict()
    d.pop("seconds")
    return d


def test_every_manner_plays_k_runs_on_the_demo_store(demo_report: SimulationReport, demo_ws: Workspace) -> None:
    d = demo_report.to_dict()
    assert json.loads(json.dumps(d)) == d  # JSON-safe as it is
    names = [p["name"] for p in d["personas"]]
    assert len(names) >= 6 and len(set(names)) == len(names)
    assert {p["manner"] for p in d["personas"]} == set(MANNERS)  # the demo store takes Thai: every manner plays
    assert {p["goal"]["sop"] for p in d["personas"]} == {s.id for s in demo_ws.sops}
    assert d["runs"] == 3 * len(names) and all(p["runs"] == 3 for p in d["personas"])
    for p in demo_report.personas:
        assert p.pass_k == all(r.passed for r in p.runs)
        assert p.pass_at_1 == sum(r.passed for r in p.runs) / 3
        for run in p.runs:
            assert set(run.checks) == set(CHECKS)
            assert len(run.traces) == len(run.turns) >= 1  # every message went through the engine
            assert run.passed or run.problems
    assert d["pass_at_1"] == pytest.approx(sum(r.passed for r in demo_report.runs) / d["runs"], abs=1e-4)
    assert d["pass_k"] == pytest.approx(sum(p.pass_k for p in demo_report.personas) / len(names), abs=1e-4)
    assert len(d["failing"]) == sum(not r.passed for r in demo_report.runs)
    assert d["customer"] == {"by": "rules"} and d["judge"] is None
    assert any("changes_mind" in n for n in d["notes"])  # a manner that does not apply is said, not skipped


def test_manners_change_the_conversation(demo_report: SimulationReport) -> None:
    by_name = {p.persona.name: p for p in demo_report.personas}
    for sop in ("sales.recommend_item", "support.order_status", "support.troubleshoot"):
        up_front, terse = by_name[f"up_front/{sop}"], by_name[f"terse/{sop}"]
        assert up_front.mean_turns < terse.mean_turns  # everything given at once: the end comes sooner
        assert up_front.pass_k and all(r.checks["end"] for r in up_front.runs)
    terse_order = by_name["terse/support.order_status"].runs[0]
    order_id = str(by_name["terse/support.order_status"].persona.goal.answers[0].value)
    assert terse_order.turns[1][0] == order_id  # a terse customer says the value and nothing else
    calls = [c for t in terse_order.traces for c in t["tool_calls"] if c["tool"] == "orders.get_status"]
    assert calls and calls[-1]["args"]["order_id"] == order_id
    thai = by_name["thai/support.order_status"].runs[0]
    assert all(THAI_SCRIPT.search(u) for u, _ in thai.turns)
    confused = by_name["confused/support.troubleshoot"]
    assert confused.mean_turns > by_name["terse/support.troubleshoot"].mean_turns  # asks before it answers
    mind = by_name["changes_mind/sales.recommend_item"]
    goal_category = next(a for a in mind.persona.goal.answers if a.kind == "category").value
    for run in mind.runs:  # took a value back: the search still used the one the customer ended with
        searched = [c["args"] for t in run.traces for c in t["tool_calls"] if c["tool"] == "inventory.query"]
        assert searched and str(searched[-1]["category"]).lower() == str(goal_category).lower()


def test_same_seed_same_report(demo_ws: Workspace) -> None:
    one = simulate(ROOT, sops=["support.order_status"], manners=["chatty", "side_questions"], k=2, seed=3,
                   loaded=demo_ws)
    two = simulate(ROOT, sops=["support.order_status"], manners=["chatty", "side_questions"], k=2, seed=3,
                   loaded=demo_ws)
    other = simulate(ROOT, sops=["support.order_status"], manners=["chatty", "side_questions"], k=2, seed=4,
                     loaded=demo_ws)
    assert _stable(one) == _stable(two)
    said = [u for r in one.runs for u, _ in r.turns]
    assert said != [u for r in other.runs for u, _ in r.turns]


def test_a_broken_sop_fails_and_its_run_reads_back_as_a_test(ws_copy: Path, embedder: CachedEmbedder,
                                                            tmp_path: Path) -> None:
    sop_file = ws_copy / "sops" / "order_status.json"
    sop = json.loads(sop_file.read_text(encoding="utf-8"))
    for node in ("tell_eta", "tell_status"):  # a typo in a field name: the order's items are never shown
        text = sop["nodes"][node]["messageTemplate"]
        sop["nodes"][node]["messageTemplate"] = text.replace("context.order.items", "context.order.item_list")
    sop_file.write_text(json.dumps(sop), encoding="utf-8")
    ws = load_workspace(ws_copy, embedder)
    report = simulate(ws_copy, sops=["support.order_status"], manners=["terse", "up_front"], k=2, loaded=ws)
    assert report.pass_k == 0 and report.pass_at_1 == 0
    for run in report.runs:
        assert run.checks["started"] and run.checks["end"] and run.checks["tools"] and not run.checks["no_loop"]
        assert any("{context.order.item_list}" in p for p in run.problems)
    fixed = simulate(ROOT, sops=["support.order_status"], manners=["terse", "up_front"], k=2,
                     loaded=load_workspace(ROOT, embedder))
    assert fixed.pass_k == 1  # the same personas on the SOP as it should be
    written = failing_tests(report, tmp_path / "out", ws_copy, ws)
    assert len(written) == 4
    spec = load_spec(written[0])  # the runner's own loader
    assert [t["user"] for t in spec["turns"]] == [u for u, _ in report.failing()[0].turns]
    assert "orders.get_status" in json.dumps(spec["turns"])  # the goal's world comes with the test
    result = run_file(written[0], None, WorkspaceCache())
    assert not result.error and result.passed  # what the broken SOP did, recorded: it runs green as written


def test_cli_prints_a_report_and_writes_failing_runs(tmp_path: Path) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["simulate", "--workspace", str(ROOT), "--sop", "support.order_status", "--personas",
                     "terse,up_front", "--k", "1", "--json", "--out", str(tmp_path / "failing")])
    d = json.loads(out.getvalue())
    assert code == 0 and [p["name"] for p in d["personas"]] == ["terse/support.order_status",
                                                                 "up_front/support.order_status"]
    assert d["k"] == 1 and d["runs"] == 2 and len(d["written"]) == len(d["failing"])
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        assert main(["simulate", "--workspace", str(ROOT), "--personas", "grumpy"]) == 2
    assert "no manner 'grumpy'" in err.getvalue()


# ---------------------------------------------------------------------------- a model plays the customer


def _model_customer(body: dict[str, Any]) -> Reply:
    """The fake model: a customer who opens with the goal's request and answers each question with the value
    the question names, from the facts its prompt gives; a judge who finds every run polite."""
    name = schema_name(body)
    system = next(m["content"] for m in body["messages"] if m["role"] == "system")
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if name == "Verdict":
        return content({"polite": True, "invented_facts": [], "notes": "courteous"})
    if name != "CustomerTurn":
        return abstain(body)
    if "has not started" in user:
        return content({"message": re.search(r"Your goal: (.*?) \(", system).group(1), "done": False})  # type: ignore[union-attr]
    facts = json.loads(re.search(r"^\{.*\}$", system, re.M).group(0))  # type: ignore[union-attr]
    last = user.rsplit("Assistant:", 1)[-1].lower()
    asked = [v for subject, v in facts.items() if any(w in last for w in subject.split())]
    if asked:
        return content({"message": str(asked[0]), "done": False})
    return content({"message": "thanks, bye", "done": True})


def test_a_model_plays_the_customer_and_judges_the_runs(demo_ws: Workspace) -> None:
    with FakeOpenAI(_model_customer) as fake:
        settings = LLMSettings(model="fake-model", base_url=fake.base_url, timeout_s=5)
        report = simulate(ROOT, sops=["support.order_status"], manners=["terse", "thai"], k=2, brain="rule",
                          llm=settings, loaded=demo_ws)
        sent = fake.chat_requests()
    d = report.to_dict()
    assert d["customer"]["model"] == "fake-model" and d["customer"]["prompt_sha256"] == SIMULATOR.sha256
    assert d["customer"]["prompt_version"] and d["judge"]["prompt"] == "judge"
    customers = [b for b in sent if schema_name(b) == "CustomerTurn"]
    goal = report.personas[0].persona.goal
    assert all(b["messages"][0]["content"].startswith(CUSTOMER_PROMPT.split("<<")[0]) for b in customers)
    assert any(str(goal.answers[0].value) in b["messages"][0]["content"] for b in customers)
    assert any("in Thai" in b["messages"][0]["content"] for b in customers)
    run = report.personas[0].runs[0]
    assert run.turns[0][0] == goal.request and run.turns[1][0] == str(goal.answers[0].value)  # the model's words
    assert run.passed and report.personas[0].pass_k
    assert d["soft"] == {"runs": 4, "passed": 4, "impolite": 0, "invented_facts": 0}
    assert sum(schema_name(b) == "Verdict" for b in sent) == 4  # one verdict per run
