"""kill -9 in the middle of a turn that runs a tool changing the world: the run was recorded as started before it
was sent, and the next open of the session files it under its own turn (never the next, unrelated one): unknown
when the process died inside the call, done when it died after the call returned but before the turn committed.

The child process is killed at a fixed point (inside the call, which waits on a FIFO no one writes to; or by the
tool itself once it has written its ticket), never after a guessed delay."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from core import build_orchestrator
from core.bench.processes import write_workspace
from tests.conftest import trusted

ROOT = Path(__file__).resolve().parents[2]
TOOL = '''from pathlib import Path


def open_ticket(issue: str, idempotency_key: str = "") -> dict[str, str]:
    here = Path(__file__).parent
    with (here / "runs.log").open("a", encoding="utf-8") as fh:
        fh.write(idempotency_key + "\\n")
    if (here / "block").exists():  # the call hangs until its process is killed
        (here / "entered").write_text(idempotency_key)
        with open(here / "block", encoding="utf-8") as fifo:
            fifo.read()
    return {"ticket_id": "T-" + idempotency_key[:6].upper()}
'''
CHAT = ("import sys; sys.path.insert(0, sys.argv[1]); from core import build_orchestrator\n"
        "orch = build_orchestrator(sys.argv[2], state_url=sys.argv[3])\n"
        "orch.handle_message('s', 'I need to open a ticket')\n"
        "orch.handle_message('s', 'the printer on floor 2 is jammed')\n")
SAVE_DIES = ("import os, signal, sys; sys.path.insert(0, sys.argv[1])\n"
             "from core import build_orchestrator\n"
             "from core.state.sessions import SqliteStateStore\n"
             "class Dies(SqliteStateStore):\n"
             "    def save(self, state, expected, trace=None):\n"
             "        if trace is not None and trace.tool_calls:\n"
             "            os.kill(os.getpid(), signal.SIGKILL)  # the call returned; the turn never commits\n"
             "        super().save(state, expected, trace)\n"
             "orch = build_orchestrator(sys.argv[2], store=Dies(sys.argv[3].removeprefix('sqlite:///')))\n"
             "orch.handle_message('s', 'I need to open a ticket')\n"
             "orch.handle_message('s', 'the printer on floor 2 is jammed')\n")
ISSUE = "the printer on floor 2 is jammed"


def _desk(tmp_path: Path) -> tuple[Path, str]:
    ws = write_workspace(tmp_path / "ws")
    (ws / "tools.py").write_text(TOOL, encoding="utf-8")
    return trusted(ws), f"sqlite:///{tmp_path}/s.sqlite"


def _killed_inside_the_call(ws: Path, url: str) -> None:
    os.mkfifo(ws / "block")
    child = subprocess.Popen([sys.executable, "-c", CHAT, str(ROOT), str(ws), url],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        waited = time.monotonic() + 180
        while not (ws / "entered").exists():  # the tool is inside its call, blocked on the FIFO
            assert child.poll() is None, child.stderr.read().decode() if child.stderr else ""
            assert time.monotonic() < waited, "the tool was never called"
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(30)
        if child.stderr is not None:
            child.stderr.close()
    assert child.returncode == -9
    (ws / "block").unlink()


def test_a_run_cut_off_inside_its_call_is_unknown_under_its_own_turn(tmp_path: Path) -> None:
    ws, url = _desk(tmp_path)
    _killed_inside_the_call(ws, url)
    orch = build_orchestrator(ws, state_url=url)  # the next open: the run of the killed turn settled
    runs = orch.store.side_effect_runs("s")
    assert [(r["turn"], r["state"], r["turn_state"], r["args"]) for r in runs] == \
        [(2, "unknown", "lost", {"issue": ISSUE})]
    assert [r["key"] for r in orch.store.side_effects_to_check("s")] == [runs[0]["key"]]
    orch.handle_message("s", "I need to open a ticket")  # the next, unrelated turn: turn 2 as well
    trace = orch.last_trace("s")
    assert trace is not None and trace["turn"] == 2 and trace["user"] == "I need to open a ticket"
    after = orch.store.side_effect_runs("s")
    assert [(r["turn_id"], r["state"], r["turn_state"]) for r in after] == \
        [(runs[0]["turn_id"], "unknown", "lost")]  # still its own turn's: not marked done under this one
    assert runs[0]["turn_id"] != trace["turn_id"]
    assert (ws / "runs.log").read_text(encoding="utf-8").split() == [runs[0]["key"]]


def test_a_run_cut_off_after_its_call_is_done_under_its_own_turn_and_told_to_the_next(tmp_path: Path) -> None:
    ws, url = _desk(tmp_path)
    run = subprocess.run([sys.executable, "-c", SAVE_DIES, str(ROOT), str(ws), url], capture_output=True, timeout=180)
    assert run.returncode == -9
    orch = build_orchestrator(ws, state_url=url)
    orch.handle_message("s", "I need to open a ticket")  # a new request, in the killed turn's number
    runs = orch.store.side_effect_runs("s")
    assert [(r["turn"], r["state"], r["turn_state"]) for r in runs] == [(2, "done", "lost")]
    assert [r["key"] for r in orch.store.side_effects_to_check("s")] == [runs[0]["key"]]  # never told
    orch.handle_message("s", "the scanner on floor 3 is broken")
    runs = orch.store.side_effect_runs("s")
    assert [(r["turn"], r["state"], r["turn_state"], r["args"]["issue"]) for r in runs] == \
        [(2, "done", "lost", ISSUE), (3, "done", "committed", "the scanner on floor 3 is broken")]
    traces = {t["turn"]: t for t in orch.store.traces("s")}
    assert [c["key"] for c in traces[3]["tool_calls"]] == [runs[1]["key"]]
    assert traces[3]["turn_id"] == runs[1]["turn_id"] and traces[2]["turn_id"] != runs[0]["turn_id"]
    assert not traces[2]["tool_calls"]
