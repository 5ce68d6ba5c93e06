"""Step coverage of SOPs by conversation tests, and conversation test files that cannot be read.

Written on a small plant clinic of our own: one JSON SOP with a decision (one test takes one branch, another
stops after the first question) and one text SOP that no test reaches.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from core.__main__ import main
from core.engine.build import load_workspace
from core.evaluation.coverage import overall, step_coverage, step_coverage_of_sessions
from core.evaluation.synthetic import run_synthetic
from core.evaluation.testing import EXPECT_KEYS, WorkspaceCache, run_file
from core.evaluation.testspec import TestFileError, load_spec
from core.retrieval.embedding import CachedEmbedder

ROOT = Path(__file__).resolve().parent.parent
STORE = """name: Fern & Pot Plant Clinic
currency: EUR
agents:
  clinic: {goals: "plants.*", tools: [plants.card]}
tools:
  plants.card:
    description: A plant's care card
    params: [plant]
    table: data/cards.csv
    key: {plant: plant}
    not_found: invalid plant name
"""
CARE = """{
  "id": "plants.care",
  "name": "Plant care advice",
  "triggers": ["how do I look after my plant", "care tips for my plant"],
  "startNode": "ask_plant",
  "nodes": {
    "ask_plant": {"type": "action", "description": "Ask which plant",
                  "messageTemplate": "Which plant is it? For example a monstera.", "nextNodes": ["card"]},
    "card": {"type": "action", "description": "Look up the care card", "tool": "plants.card",
             "toolParams": {"plant": "context.plant"}, "resultKey": "card", "nextNodes": ["thirsty"]},
    "thirsty": {"type": "decision", "condition": "context.card.thirsty === 'yes'",
                "nextNodes": ["water_often", "water_rarely"]},
    "water_often": {"type": "action", "messageTemplate": "{context.plant}: {context.card.light}, keep it moist.",
                    "nextNodes": ["end"]},
    "water_rarely": {"type": "action", "messageTemplate": "{context.plant}: {context.card.light}, let it dry.",
                     "nextNodes": ["end"]},
    "end": {"type": "end"}
  }
}
"""
HOURS = """---
id: plants.hours
title: Opening hours
triggers:
  - when are you open
---
tell customer the opening hours
"""
GAR = """action,action_type,user_interaction_metadata,api,params
tell customer the opening hours,message_to_user,"We are open Tuesday to Saturday, 9:00 to 17:00.",,
"""
CALATHEA = """name: a calathea gets its care card
turns:
  - user: How do I look after my plant?
    expect: {active_goal: plants.care, status: blocked}
  - user: calathea
    expect: {tools: [plants.card], reply_contains: [moist], ended: true}
"""
ASKS_ONLY = """name: only asks which plant
turns:
  - user: care tips for my plant
    expect: {active_goal: plants.care}
"""


@pytest.fixture()
def clinic(tmp_path: Path) -> Path:
    root = tmp_path / "clinic"
    for folder in ("sops", "data", "conversations"):
        (root / folder).mkdir(parents=True)
    (root / "store.yaml").write_text(STORE, encoding="utf-8")
    (root / "gar.csv").write_text(GAR, encoding="utf-8")
    (root / "data" / "cards.csv").write_text("plant,light,thirsty\nmonstera,bright light,no\ncalathea,shade,yes\n",
                                            encoding="utf-8")
    (root / "sops" / "care.json").write_text(CARE, encoding="utf-8")
    (root / "sops" / "hours.sop").write_text(HOURS, encoding="utf-8")
    (root / "conversations" / "calathea.yaml").write_text(CALATHEA, encoding="utf-8")
    (root / "conversations" / "asks_only.yaml").write_text(ASKS_ONLY, encoding="utf-8")
    return root


def test_each_step_counts_the_tests_that_reach_it(clinic: Path, embedder: CachedEmbedder) -> None:
    cache = WorkspaceCache()
    cache.put(clinic, load_workspace(clinic, embedder))
    results = [run_file(f, clinic, cache) for f in sorted((clinic / "conversations").glob("*.yaml"))]
    assert all(r.passed for r in results), [t.failures for r in results for t in r.turns]
    assert {r.workspace for r in results} == {str(clinic.resolve())}
    found = step_coverage(results, {str(clinic.resolve()): cache.get(clinic)})
    care, hours = found
    assert care.id == "plants.care" and hours.id == "plants.hours"  # every SOP of the workspace, by file
    assert care.counts() == {"ask_plant": 2, "card": 1, "thirsty": 1, "water_often": 1, "water_rarely": 0, "end": 1}
    assert [s.id for s in care.steps] == ["ask_plant", "card", "thirsty", "water_often", "water_rarely", "end"]
    assert (care.reached, len(care.steps)) == (5, 6)
    [missed] = care.unreached
    assert (missed.id, missed.label, care.where(missed)) == ("water_rarely", "water_rarely", "sops/care.json:15")
    assert care.steps[2].label == "context.card.thirsty === 'yes'?"  # a decision is named by its condition
    assert [(s.label, s.tests) for s in hours.steps] == [("tell customer the opening hours", 0), ("end", 0)]
    assert hours.where(hours.steps[0]) == "sops/hours.sop:7"
    assert overall(found) == (5, 8, 62.5)
    as_json = care.as_dict()
    assert as_json["unreached"] == ["water_rarely"] and as_json["percent"] == 83.3


def test_a_file_that_did_not_run_counts_towards_no_step(clinic: Path, embedder: CachedEmbedder) -> None:
    cache = WorkspaceCache()
    cache.put(clinic, load_workspace(clinic, embedder))
    bad = clinic / "conversations" / "bad.yaml"
    bad.write_text("name: bad\nturns: [{user: hi, expect: {ended: maybe}}]\n", encoding="utf-8")
    results = [run_file(bad, clinic, cache), run_file(clinic / "conversations" / "asks_only.yaml", clinic, cache)]
    assert not results[0].passed and not results[0].workspace
    [care, _] = step_coverage(results, {str(clinic.resolve()): cache.get(clinic)})
    assert care.counts()["ask_plant"] == 1 and care.reached == 1


def test_the_synthetic_evaluation_counts_the_sessions_that_reach_each_step(clinic: Path,
                                                                           embedder: CachedEmbedder) -> None:
    ws = load_workspace(clinic, embedder)
    report = run_synthetic(clinic, sessions=12, seed=3, embedder=embedder, loaded=ws)
    assert report.reached and all(0 < n <= 12 for n in report.reached.values())
    assert all(sop in {s.id for s in ws.sops} for sop, _ in report.reached)
    found = step_coverage_of_sessions(report.reached, ws, str(clinic.resolve()))
    assert [c.id for c in found] == ["plants.care", "plants.hours"]
    care = found[0]
    assert care.counts()["ask_plant"] == report.reached[("plants.care", "ask_plant")] > 0  # every care session asks
    assert {(c.id, s.id): s.tests for c in found for s in c.steps if s.tests} == {
        k: n for k, n in report.reached.items() if k[1] in {s.id for c in found for s in c.steps}}


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_cli_prints_coverage_and_min_coverage_fails_below_it(clinic: Path) -> None:
    convs = str(clinic / "conversations")
    code, out, _ = _cli("test", "--coverage", "--workspace", str(clinic), convs)
    assert code == 0, out
    assert "Step coverage: 5 of 8 steps reached (62%)" in out
    assert "5 of 6 steps reached (83%)" in out and "0 of 2 steps reached (0%)" in out
    assert "     2 tests  ask_plant" in out
    assert "not reached: water_rarely" in out and "sops/care.json:15" in out
    assert "not reached: s7 (tell customer the opening hours)" in out and "sops/hours.sop:7" in out

    code, out, _ = _cli("test", "--json", "--min-coverage", "50", "--workspace", str(clinic), convs)
    report = json.loads(out)
    assert code == 0 and report["passed"] == 2
    assert (report["coverage"]["reached"], report["coverage"]["steps"]) == (5, 8)
    care = report["coverage"]["sops"][0]
    assert care["sop"] == "plants.care" and care["unreached"] == ["water_rarely"]
    assert {n["id"]: n["tests"] for n in care["nodes"]}["ask_plant"] == 2

    code, _, err = _cli("test", "--min-coverage", "70", "--workspace", str(clinic), convs)
    assert code == 1 and "62.5% is below --min-coverage 70%" in err
    code, out, _ = _cli("test", "--json", "--workspace", str(clinic), convs)
    assert code == 0 and "coverage" not in json.loads(out)  # reported only when asked for


BAD_FILES = {
    "bad_yaml.yaml": ("name: x\nturns:\n  - user: hi\n    expect: [oops\n",
                      "line 5, column 1: expected ',' or ']'"),
    "unknown_key.yaml": ("name: x\nturnz:\n  - user: hi\n",
                         "line 2, column 1: unknown key 'turnz' in the test file (did you mean 'turns'?)"),
    "turn_key.yaml": ("name: x\nturns:\n  - user: hi\n    expct: {ended: true}\n",
                      "line 4, column 5: unknown key 'expct' in turn 1 (did you mean 'expect'?)"),
    "turns_text.yaml": ("name: x\nturns: hello\n", "line 2, column 8: 'turns' must be a list of turns"),
    "turn_text.yaml": ("name: x\nturns:\n  - hello\n", "line 3, column 5: turn 1 must be a mapping"),
    "list_type.yaml": ("name: x\nturns:\n  - user: hi\n    expect: {tools: plants.card}\n",
                       "line 4, column 21: 'tools' must be a list, e.g. [plants.card]"),
    "tools_type.yaml": ("name: x\ntools: 5\nturns:\n  - user: hi\n",
                        "line 2, column 8: 'tools' must map each tool name to its outcome"),
    "outcome.yaml": ("name: x\nturns:\n  - user: hi\n    tools: {plants.card: {reslt: {}}}\n",
                     "unknown key 'reslt' in the outcome of 'plants.card' (did you mean 'result'?)"),
    "not_mapping.yaml": ("- user: hi\n", "line 1, column 1: the test file must be a mapping"),
    "empty.yaml": ("", "the file is empty"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_an_unreadable_test_file_says_where_and_why(tmp_path: Path, name: str) -> None:
    text, reason = BAD_FILES[name]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TestFileError) as err:
        load_spec(path)
    assert reason in str(err.value)
    result = run_file(path, None, WorkspaceCache())  # not run: no workspace is even looked for
    assert not result.passed and reason in result.error and not result.turns


def test_cli_counts_an_unreadable_file_as_failing_with_its_reason(clinic: Path) -> None:
    bad = clinic / "conversations" / "typo.yaml"
    bad.write_text("name: typo\nturns:\n  - user: hi\n    expect: {ended: maybe}\n", encoding="utf-8")
    code, out, _ = _cli("test", "--workspace", str(clinic), str(bad), str(clinic / "conversations" / "asks_only.yaml"))
    assert code == 1
    assert f"FAIL  {bad}  (typo)" in out
    assert "      error: line 4, column 21: 'ended' must be true or false" in out
    assert "1 passed, 1 failed" in out
    code, out, _ = _cli("test", "--json", "--workspace", str(clinic), str(bad))
    report = json.loads(out)
    assert code == 1 and report["failed"] == 1 and "'ended' must be true or false" in report["files"][0]["error"]


def test_every_documented_expect_key_reads_and_every_shipped_test_file_reads(tmp_path: Path) -> None:
    values = {"active_goal": "plants.care", "status": None, "missing": ["plant"], "slots": {"plant": "fern"},
              "stack": [], "tools": ["plants.card"], "actions": ["ask_plant"], "goal_status": {"plants.care": "done"},
              "reply_contains": ["fern"], "reply_not_contains": ["cactus"], "ended": False,
              "memory": [{"action": "card", "observation": {"light": "shade"}, "feedback": "ok"}]}
    assert set(values) == EXPECT_KEYS
    path = tmp_path / "all.yaml"
    path.write_text(json.dumps({"name": "all keys", "workspace": ".", "customer_id": 7,
                                "tools": {"plants.card": [{"error": "down"}, {"result": {"light": "shade"}}]},
                                "turns": [{"user": "hi", "session": "s2", "tools": {"plants.card": {"timeout": True}},
                                           "expect": values}]}), encoding="utf-8")
    assert load_spec(path)["turns"][0]["expect"] == values
    shipped = [p for folder in ("tests/conversations", "examples") for p in (ROOT / folder).rglob("*.yaml")
               if "conversations" in p.parts]
    assert len(shipped) > 20
    for p in shipped:
        load_spec(p)  # raises, naming the problem, if a shipped test would not read


def test_keys_left_empty_take_their_defaults_but_an_expectation_left_empty_does_not(tmp_path: Path) -> None:
    path = tmp_path / "empty_values.yaml"
    path.write_text("name:\nworkspace:\ntools:\nturns:\n  - user: hi\n    session:\n    expect:\n", encoding="utf-8")
    assert load_spec(path)["turns"] == [{"user": "hi", "session": None, "expect": None}]
    path.write_text("turns:\n  - user: hi\n    expect: {missing: }\n  - user:\n", encoding="utf-8")
    with pytest.raises(TestFileError) as err:
        load_spec(path)
    assert err.value.problems == ["line 3, column 22: 'missing' must be a list, e.g. [...]",
                                  "line 4, column 10: 'user' must be a single value"]
