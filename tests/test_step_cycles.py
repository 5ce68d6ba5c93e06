"""Cycles of steps: two JSON SOPs of our own whose steps go round without waiting for the customer (a message and
a decision; two decisions). Lint names the steps of each cycle as an error at its line; at run time (a graph
edited behind lint's back) a guard ends the goal with one sentence, never a message said again, never the
"not sure how to help" fallback. A cycle through a question is no error: the question is asked again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core import build_orchestrator
from core.engine.build import load_workspace
from core.language.replies import say

STORE = 'name: Loop Desk\ncurrency: GBP\nagents:\n  desk: {goals: "desk.*", tools: []}\n'
ASK = {"type": "action", "description": "Ask for the code", "resultKey": "code",
       "messageTemplate": "What is the parcel code?", "nextNodes": ["first"]}
SPIN: dict[str, Any] = {
    "id": "desk.spin", "name": "Check the parcel", "triggers": ["check my parcel", "where is my parcel"],
    "startNode": "ask",
    "nodes": {
        "ask": ASK,
        "first": {"type": "action", "description": "Say we are checking", "messageTemplate": "Checking...",
                  "nextNodes": ["second"]},
        "second": {"type": "decision", "description": "Is it ready", "condition": "context.code === 'P-1'",
                   "nextNodes": ["done", "first"]},
        "done": {"type": "end", "description": "Done"},
    },
}
QUIET: dict[str, Any] = {
    "id": "desk.quiet", "name": "Check the refund", "triggers": ["check my refund", "where is my refund"],
    "startNode": "ask",
    "nodes": {
        "ask": {**ASK, "messageTemplate": "What is the refund code?"},
        "first": {"type": "decision", "description": "Is it paid", "condition": "context.code === 'R-1'",
                  "nextNodes": ["done", "second"]},
        "second": {"type": "decision", "description": "Is it sent", "condition": "context.code === 'R-2'",
                   "nextNodes": ["done", "first"]},
        "done": {"type": "end", "description": "Done"},
    },
}


def _desk(root: Path, *sops: dict[str, Any]) -> Path:
    (root / "sops").mkdir(parents=True)
    (root / "store.yaml").write_text(STORE, encoding="utf-8")
    (root / "gar.csv").write_text("action,action_type,user_interaction_metadata,api,params\n", encoding="utf-8")
    for sop in sops:
        (root / "sops" / f"{sop['id'].split('.')[1]}.json").write_text(json.dumps(sop, indent=2), encoding="utf-8")
    return root


def _back_to_ask(sop: dict[str, Any]) -> dict[str, Any]:
    """The SOP with its cycle going through the question (lint accepts it)."""
    copy = json.loads(json.dumps(sop))
    copy["nodes"]["second"]["nextNodes"] = ["done", "ask"]
    return copy


@pytest.mark.parametrize("sop", [SPIN, QUIET], ids=["message", "decisions"])
def test_a_cycle_that_never_waits_is_a_lint_error_naming_its_steps(sop: dict[str, Any], tmp_path: Path) -> None:
    problems = load_workspace(_desk(tmp_path / "ws", sop)).problems
    cycles = [p for p in problems if "cycle" in p.message]
    assert len(cycles) == 1 and cycles[0].severity == "error" and cycles[0].line > 1
    assert "'first' -> 'second'" in cycles[0].message
    fine = load_workspace(_desk(tmp_path / "ok", _back_to_ask(sop))).problems
    assert not [p for p in fine if p.severity == "error"]


@pytest.mark.parametrize(("sop", "start", "said"), [(SPIN, "check my parcel", "Checking..."),
                                                     (QUIET, "check my refund", "")],
                         ids=["message", "decisions"])
def test_a_cycle_at_run_time_ends_the_goal_with_one_sentence(sop: dict[str, Any], start: str, said: str,
                                                             tmp_path: Path) -> None:
    orch = build_orchestrator(_desk(tmp_path / "ws", _back_to_ask(sop)), state_url=f"sqlite:///{tmp_path}/s")
    loaded = orch.sops[sop["id"]]
    second = loaded.nodes["second"]
    second.branches[-1].target = "first"  # the graph edited behind lint's back: the cycle skips the question
    orch.handle_message("s", start)
    reply = orch.handle_message("s", "X-7")
    if said:
        assert reply.count(said) == 1  # said once, never again
    assert "not sure how to help" not in reply
    assert reply.count(say("went_round", "en")) == 1
    state = orch.load_state("s")
    assert state is not None and state.active_goal is None
    assert any("came round again" in d for d in (orch.last_trace("s") or {})["decisions"])


# ------------------------------------------------------------------------------------------- a JSON SOP fuzzed
def _fuzzed() -> list[tuple[str, str, int]]:
    """A JSON SOP of ours, spoiled four ways: (name, source, the line the error belongs to)."""
    lines = json.dumps(SPIN, indent=2).splitlines()
    source = "\n".join(lines)

    def line_of(text: str, within: str) -> int:
        return next(i for i, ln in enumerate(within.splitlines(), 1) if text in ln)

    big = source.replace('"startNode": "ask"', '"startNode": "ask", "version": ' + "9" * 5000)
    nods = source.replace('"nodes": {', '"nods": {')
    start = source.replace('"startNode": "ask"', '"startnode": "ask"')
    endless = source.replace('"nextNodes": [\n        "done",\n        "first"\n      ]',
                             '"nextNodes": [\n        "first",\n        "first"\n      ]')
    return [("a number too long", big, line_of('"version"', big)),
            ("nodes misspelt", nods, line_of('"nods"', nods)),
            ("startNode misspelt", start, line_of('"startnode"', start)),
            ("no end reachable", endless, line_of('"startNode"', endless))]


@pytest.mark.parametrize(("name", "source", "line"), _fuzzed(), ids=[f[0] for f in _fuzzed()])
def test_a_fuzzed_json_sop_is_an_error_at_its_line(name: str, source: str, line: int) -> None:
    from core.sop.load import compile_sop

    _, problems = compile_sop(source, "sops/spin.json", "json", None)  # type: ignore[arg-type]
    errors = [p for p in problems if p.severity == "error"]
    assert errors and errors[0].line == line > 1, (name, errors)
    assert "cannot be compiled" not in errors[0].message


def test_a_byte_order_mark_is_not_an_error() -> None:
    from core.sop.load import compile_sop

    sop, problems = compile_sop("\ufeff" + json.dumps(_back_to_ask(SPIN), indent=2), "sops/spin.json", "json",
                                None)  # type: ignore[arg-type]
    assert sop is not None and not [p for p in problems if p.severity == "error"]
