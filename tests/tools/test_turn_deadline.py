"""A turn has one deadline, which its tool calls and their retries share: a read-only tool that times out is
not tried three times at its own deadline each (15 s for a 5 s tool), the retries end when the turn's time is
up, and what is not sent then is traced as such. The fault server's ``/slow`` answers after 1.5 s."""

from __future__ import annotations

from pathlib import Path

from core import build_orchestrator
from core.bench.processes import write_workspace
from core.engine.settings import Settings, settings_from
from core.language.replies import say
from tests.tools.faultserver import fault_server


def test_the_turn_deadline_is_documented_with_its_default() -> None:
    assert Settings().turn_deadline_s == 10.0 and settings_from({"turn_deadline_s": 4}).turn_deadline_s == 4.0
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert "turn_deadline_s" in readme


def test_a_timing_out_lookup_is_retried_only_within_the_turns_deadline(tmp_path: Path) -> None:
    with fault_server() as srv:
        ws = write_workspace(tmp_path / "ws")
        yaml = (ws / "store.yaml").read_text(encoding="utf-8")
        yaml = yaml.replace("    python: tools.py:open_ticket\n",
                            f"    http: {{method: GET, url: '{srv.base}/slow'}}\n    timeout_s: 1.2\n")
        (ws / "store.yaml").write_text(yaml + "settings: {turn_deadline_s: 2.0}\n", encoding="utf-8")
        orch = build_orchestrator(ws, state_url=f"sqlite:///{tmp_path}/s.sqlite")
        orch.handle_message("s", "I need to open a ticket")
        reply = orch.handle_message("s", "the printer on floor 2 is jammed")
        reached = len(srv.requests("/slow"))
    calls = (orch.last_trace("s") or {})["tool_calls"]
    assert len(calls) == 3 and [c["error_kind"] for c in calls] == ["timeout"] * 3
    assert 1 <= reached <= 2  # not three: 1.2 s + what was left of 2 s, then nothing
    assert not calls[-1]["sent"] and "turn's deadline" in calls[-1]["error"]
    assert reply.count(say("graceful_end", "en")) == 1
