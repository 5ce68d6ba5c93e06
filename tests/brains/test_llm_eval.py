"""``python -m core eval synthetic --brain hybrid|llm`` against a local endpoint: calls and prompt tokens per turn
next to the full-SOP baseline, and accuracy that a misbehaving model cannot lower."""

from __future__ import annotations

import json

import pytest

from core.__main__ import main
from core.engine.build import Workspace
from core.evaluation.synthetic import run_synthetic
from tests.brains.conftest import SELLER
from tests.brains.fake_openai import FakeOpenAI, abstain, chaos


@pytest.fixture()
def endpoint(monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    """A fake server configured the way a user configures a real one: through the environment."""
    fake = FakeOpenAI(abstain)
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    monkeypatch.setenv("SOP_LLM_MODEL", "fake-model")
    return fake


def test_hybrid_eval_reports_calls_and_tokens_against_the_baseline(seller: Workspace, endpoint: FakeOpenAI) -> None:
    with endpoint:
        rule = run_synthetic(SELLER, sessions=24, seed=3, brain="rule", loaded=seller)
        hybrid = run_synthetic(SELLER, sessions=24, seed=3, brain="hybrid", loaded=seller)
    assert "llm" not in rule.to_dict()
    llm = hybrid.to_dict()["llm"]
    assert hybrid.accuracy == rule.accuracy  # a model that cannot tell leaves every decision to the rules
    assert llm["turns"] == hybrid.turns and 0 < llm["calls"] == len(endpoint.chat_requests())
    assert llm["calls_per_turn"] <= 1.0 and llm["max_calls_in_turn"] <= 2
    assert llm["prompt_token_saving"] >= 0.6
    assert llm["prompt_tokens_per_call"] < llm["baseline_prompt_tokens_per_turn"] / 2


def test_a_misbehaving_model_cannot_lower_accuracy(seller: Workspace, endpoint: FakeOpenAI) -> None:
    endpoint.responder = chaos()
    with endpoint:
        rule = run_synthetic(SELLER, sessions=12, seed=5, brain="rule", loaded=seller)
        bad = run_synthetic(SELLER, sessions=12, seed=5, brain="llm", loaded=seller)
    assert bad.accuracy == rule.accuracy
    outcomes = bad.to_dict()["llm"]["outcomes"]
    assert outcomes.get("invalid", 0) > 0 and outcomes.get("abstained", 0) > 0 and "accepted" not in outcomes


def test_the_cli_reports_llm_figures(endpoint: FakeOpenAI, capsys: pytest.CaptureFixture[str]) -> None:
    with endpoint:
        code = main(["eval", "synthetic", "--workspace", str(SELLER), "--sessions", "6", "--seed", "1",
                     "--brain", "hybrid", "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["brain"] == "hybrid"
    assert {"calls_per_turn", "prompt_tokens_per_turn", "baseline_prompt_tokens_per_turn",
            "prompt_token_saving", "token_counting"} <= set(report["llm"])
