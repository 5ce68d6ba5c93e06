"""The SOP compiler never crashes: any JSON value in any field, any text SOP (broken front matter, deep
nesting, stray colons), any condition. A bad file is a problem with file:line, and the rest of the
workspace still loads. (Compile time against size: ``python -m core bench --sop-nodes 10000``.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.engine.build import load_workspace
from core.shared.problems import Problem
from core.sop.expr import ExprError, parse
from core.sop.load import compile_sop
from core.workspace.gar import GarIndex
from core.workspace.gar_file import load_gar
from core.workspace.store_yaml import load_store_config

ROOT = Path(__file__).resolve().parents[1]
SELLER = ROOT / "examples" / "seller_support"
GAR = GarIndex(load_gar(SELLER / "gar.csv")[0], None)
JSON_SOP = json.loads(next((ROOT / "sops").glob("*.json")).read_text(encoding="utf-8"))
TEXT_SOP = (SELLER / "sops" / "listing_blocked.sop").read_text(encoding="utf-8").splitlines()

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)


def well_formed(problems: list[Problem], file: str) -> bool:
    return all(p.file == file and isinstance(p.line, int) and p.line >= 0 and p.message for p in problems)


def replace_at(data: Any, path: list[int], value: Any) -> Any:
    """``data`` with the field reached by ``path`` (indices into keys/items, modulo their count) replaced."""
    if not path or not isinstance(data, dict | list) or not data:
        return value
    if isinstance(data, dict):
        key = list(data)[path[0] % len(data)]
        return {**data, key: replace_at(data[key], path[1:], value)}
    i = path[0] % len(data)
    return [*data[:i], replace_at(data[i], path[1:], value), *data[i + 1:]]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 50), min_size=1, max_size=4), values)
def test_any_value_in_any_field_of_a_json_sop_is_a_problem_not_a_crash(path: list[int], value: Any) -> None:
    source = json.dumps(replace_at(JSON_SOP, path, value), allow_nan=True)
    sop, problems = compile_sop(source, "sops/x.json", "json", GAR)
    assert well_formed(problems, "sops/x.json")
    assert sop is not None or any(p.severity == "error" for p in problems)


lines = st.sampled_from(TEXT_SOP + ["priority: high", "triggers: 5", "id: [1, 2]", "title: {a: 1}", "---", "else:",
                                    "if (((((:", "if not not not it is x:", "\tif it is x:", "    ask user to", ":"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(lines, st.integers(0, 12)), min_size=1, max_size=30))
def test_any_text_sop_is_a_problem_not_a_crash(picked: list[tuple[str, int]]) -> None:
    source = "\n".join("    " * depth + line.strip() if depth else line for line, depth in picked)
    sop, problems = compile_sop(source, "sops/x.sop", "text", GAR)
    assert well_formed(problems, "sops/x.sop")


@given(st.text(max_size=60))
def test_any_condition_parses_or_says_where_it_is_wrong(condition: str) -> None:
    try:
        parse(condition)
    except ExprError as exc:
        assert exc.column >= 1


def test_deep_nesting_is_refused_with_the_line() -> None:
    deep = "\n".join("    " * i + "if it is x:" for i in range(500)) + "\n" + "    " * 500 + "show message onboarding"
    sop, problems = compile_sop(deep, "sops/deep.sop", "text", GAR)
    assert sop is None or any("nest" in p.message for p in problems)
    assert any(p.severity == "error" and "nest more than" in p.message and p.line == 41 for p in problems)
    cond = "if " + "(" * 200 + "it is x" + ")" * 200 + ":\n    show message onboarding"
    _, problems = compile_sop(cond, "sops/cond.sop", "text", GAR)
    assert all(isinstance(p, Problem) for p in problems)


def test_a_broken_sop_is_skipped_and_the_rest_of_the_workspace_loads(tmp_path: Path) -> None:
    ws = tmp_path / "seller"
    shutil.copytree(SELLER, ws)
    (ws / "sops" / "broken.json").write_text(json.dumps({"startNode": "a", "priority": "high", "triggers": 5,
                                                         "nodes": {"a": {"type": "end"}}}), encoding="utf-8")
    loaded = load_workspace(ws)
    errors = [p for p in loaded.problems if p.severity == "error"]
    assert {(p.file, p.message.split(" must")[0]) for p in errors} == {("sops/broken.json", "priority"),
                                                                      ("sops/broken.json", "triggers")}
    assert len(loaded.sops) == 3  # the three good SOPs


def test_a_loop_without_an_exit_gets_a_warning_with_its_line() -> None:
    nodes = {"ask": {"type": "action", "description": "ask the customer for the order id",
                     "messageTemplate": "Your order id?", "resultKey": "order_id", "nextNodes": ["check"]},
             "check": {"type": "decision", "condition": "context.order_id == 'x'", "nextNodes": ["done", "again"]},
             "again": {"type": "action", "description": "tell the customer to try again",
                       "messageTemplate": "Give it another go.", "nextNodes": ["retry"]},
             "retry": {"type": "action", "description": "tell the customer we retry",
                       "messageTemplate": "Retrying.", "nextNodes": ["again"]},
             "done": {"type": "end"}}
    source = json.dumps({"id": "loop", "startNode": "ask", "nodes": nodes}, indent=1)
    _, problems = compile_sop(source, "sops/loop.json", "json", GAR)  # no question in it: a cycle, an error
    cycles = [p for p in problems if "cycle of steps" in p.message]
    assert len(cycles) == 1 and cycles[0].severity == "error" and "'again' -> 'retry'" in cycles[0].message
    nodes["again"].update(resultKey="attempt", messageTemplate="Another order id?")  # a question: no cycle error
    nodes["retry"] = {"type": "decision", "condition": "context.attempt == 'x'", "nextNodes": ["again", "again"]}
    source = json.dumps({"id": "loop", "startNode": "ask", "nodes": nodes}, indent=1)
    sop, problems = compile_sop(source, "sops/loop.json", "json", GAR)
    assert not [p for p in problems if p.severity == "error"], problems
    loops = [p for p in problems if "loop without an exit" in p.message]
    assert sop is not None and len(loops) == 1 and loops[0].severity == "warning"
    assert loops[0].line == next(i for i, ln in enumerate(source.splitlines(), 1) if '"again": {' in ln)
    assert "from 'again', 'retry'" in loops[0].message
    nodes["retry"]["nextNodes"] = ["ask"]  # back to the question: an exit through it, no warning
    _, problems = compile_sop(json.dumps({"id": "loop", "startNode": "ask", "nodes": nodes}), "sops/loop.json",
                              "json", GAR)
    assert not [p for p in problems if "loop without an exit" in p.message]


STORE = yaml.safe_load((ROOT / "store.yaml").read_text(encoding="utf-8"))


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, 50), min_size=1, max_size=4), values)
def test_any_value_in_any_field_of_store_yaml_is_a_problem_not_a_crash(tmp_path: Path, path: list[int],
                                                                       value: Any) -> None:
    (tmp_path / "store.yaml").write_text(yaml.safe_dump(replace_at(STORE, path, value)), encoding="utf-8")
    _, problems = load_store_config(tmp_path / "store.yaml")
    assert well_formed(problems, "store.yaml")
