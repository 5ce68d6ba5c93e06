"""What an opening message tells the agent about the problem (the demo's troubleshooting SOP)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.engine.build import Workspace, build_orchestrator
from core.engine.orchestrator import Orchestrator

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def orch(demo_ws: Workspace, tmp_path: Path) -> Orchestrator:
    return build_orchestrator(ROOT, loaded=demo_ws, state_url=f"sqlite:///{tmp_path}/s.sqlite")


def symptom(orch: Orchestrator, session: str) -> object:
    state = orch.load_state(session)
    assert state is not None and state.active_goal is not None
    return state.active_goal.slots.get("symptom")


@pytest.mark.parametrize("text", ["My laptop keeps freezing.", "good morning, my screen is frozen",
                                  "my headset has no sound since yesterday"])
def test_an_opening_that_describes_the_problem_fills_it(orch: Orchestrator, text: str) -> None:
    orch.handle_message("s", text)
    assert symptom(orch, "s") == text


@pytest.mark.parametrize("text", ["I need help: fix a device problem",
                                  "good morning, I need help: fix a device problem",
                                  "I ned help: fix a device probblem"])
def test_an_opening_that_only_names_the_request_describes_nothing(orch: Orchestrator, text: str) -> None:
    orch.handle_message("s", text)
    assert symptom(orch, "s") is None
    trace = orch.handle_message("s", "It's a Dell XPS 13") and orch.last_trace("s")
    assert trace is not None and trace["actions"] == ["ask user to describe the problem"]
    assert trace["tool_calls"] == []
