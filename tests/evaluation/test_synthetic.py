"""``eval synthetic``: reproducible, runs on any workspace, and tells a good brain from a broken one."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from core.__main__ import main
from core.engine.build import Workspace, build_orchestrator
from core.evaluation import run_synthetic
from core.evaluation.generator import generate_sessions
from core.evaluation.synthetic import SyntheticReport, format_report, run_plans
from core.sop.graph import Node, Sop
from core.state.memory import LocalPreferenceMemory
from core.state.sessions import open_state_store
from core.understanding import Brain, Perception

ROOT = Path(__file__).resolve().parents[2]
SELLER = ROOT / "examples" / "seller_support"


def _stable(report: SyntheticReport) -> dict[str, Any]:
    d = report.to_dict()
    d.pop("seconds")
    return d


def test_same_seed_same_sessions_and_same_report(seller_ws: Workspace) -> None:
    first = [asdict(p) for p in generate_sessions(seller_ws, 12, seed=5)]
    again = [asdict(p) for p in generate_sessions(seller_ws, 12, seed=5)]
    other = [asdict(p) for p in generate_sessions(seller_ws, 12, seed=6)]
    assert first == again
    assert first != other
    a = run_synthetic(SELLER, sessions=12, seed=5, loaded=seller_ws)
    b = run_synthetic(SELLER, sessions=12, seed=5, loaded=seller_ws)
    assert _stable(a) == _stable(b)
    assert json.loads(json.dumps(a.to_dict())) == a.to_dict()  # JSON-safe as it is


def test_sessions_cover_every_sop_and_count_states(seller_ws: Workspace) -> None:
    report = run_synthetic(SELLER, sessions=15, seed=7, loaded=seller_ws)
    d = report.to_dict()
    assert set(d["per_sop"]) == {s.id for s in seller_ws.sops}
    assert all(v["sessions"] == 5 for v in d["per_sop"].values())
    assert d["states"] == sum(v["states"] for v in d["per_sop"].values()) > 15
    assert 0.0 <= d["accuracy"] <= 1.0
    assert sum(d["outcomes"].values()) == 15 == sum(d["expected_outcomes"].values())
    text = format_report(report)
    assert "state-decision accuracy" in text and "seller.email_update" in text


def test_runs_on_the_demo_store_with_progress(demo_ws: Workspace) -> None:
    seen: list[tuple[int, int]] = []
    report = run_synthetic(ROOT, sessions=6, seed=2, loaded=demo_ws, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(i, 6) for i in range(1, 7)]
    assert set(report.to_dict()["per_sop"]) == {s.id for s in demo_ws.sops}
    assert report.overall.states > 6


class BranchBlindBrain:
    """A brain that reads every branch condition as true and never notices a question."""

    def __init__(self, inner: Brain) -> None:
        self.inner = inner

    def perceive(self, text: str, sops: list[Sop], *, need_intents: bool = True) -> Perception:
        p = self.inner.perceive(text, sops, need_intents=need_intents)
        p.question = False
        return p

    def branch(self, condition: str, observation: Any) -> bool:
        return True

    def question(self, node: Node, slots: dict[str, Any]) -> str:
        return self.inner.question(node, slots)

    def correct(self, text: str) -> str:
        return self.inner.correct(text)


def _graded(ws: Workspace, plans: list[Any], broken: bool) -> SyntheticReport:
    with tempfile.TemporaryDirectory() as tmp:
        store = open_state_store(f"sqlite:///{tmp}/s.sqlite")
        memory = LocalPreferenceMemory(Path(tmp) / "p.sqlite")
        orch = build_orchestrator(ws.files.root, store=store, memory=memory, loaded=ws)
        if broken:
            blind = BranchBlindBrain(orch.brain)
            orch.brain = blind
            for agent in orch.agents.values():
                agent.env.brain = blind
        try:
            return run_plans(orch, plans)
        finally:
            store.close()
            memory.close()


def test_a_broken_brain_scores_lower_with_its_failures_named(seller_ws: Workspace) -> None:
    plans = generate_sessions(seller_ws, 18, seed=3)
    good = _graded(seller_ws, plans, broken=False)
    bad = _graded(seller_ws, plans, broken=True)
    assert bad.overall.states == good.overall.states  # the same states: expectations do not depend on the brain
    assert bad.accuracy < good.accuracy - 0.1
    categories = " | ".join(bad.categories())
    assert "API result (branch)" in categories or "doubt" in categories
    assert bad.failures and all(f.expected != f.observed for f in bad.failures)


def test_cli_json_report_and_exit_code() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["eval", "synthetic", "--workspace", str(SELLER), "--sessions", "6", "--seed", "1", "--json"])
    report = json.loads(out.getvalue())
    assert code == 0
    assert 0.0 <= report["accuracy"] <= 1.0 and report["sessions"] == 6
    with contextlib.redirect_stdout(io.StringIO()):
        strict = main(["eval", "synthetic", "--workspace", str(SELLER), "--sessions", "3", "--min-accuracy", "1.01"])
    assert strict == 1


def test_cli_rejects_a_folder_that_is_not_a_workspace(tmp_path: Path) -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["eval", "synthetic", "--workspace", str(tmp_path / "nope"), "--sessions", "2"])
    assert code == 2 and "does not exist" in err.getvalue()
