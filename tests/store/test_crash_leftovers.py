"""kill -9 between a tool that changes the world and the turn's commit: the change was recorded as
started before it ran, the next open of the session lists it to check, the next turn's trace says it may have
gone through, and the message sent again calls the tool with the same idempotency key (so the backend can
refuse to do it twice)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from core import build_orchestrator
from core.bench.processes import write_workspace
from tests.conftest import trusted

ROOT = Path(__file__).resolve().parents[2]
TOOL = '''import os, signal
from pathlib import Path


def open_ticket(issue: str, idempotency_key: str = "") -> dict[str, str]:
    here = Path(__file__).parent
    with (here / "keys.log").open("a", encoding="utf-8") as fh:
        fh.write(idempotency_key + "\\n")
    if (here / "die").exists():
        (here / "die").unlink()
        os.kill(os.getpid(), signal.SIGKILL)  # the process dies after the change, before the commit
    return {"ticket_id": "T-" + idempotency_key[:6].upper()}
'''
CHAT = ("import sys; sys.path.insert(0, sys.argv[1]); from core import build_orchestrator\n"
        "orch = build_orchestrator(sys.argv[2], state_url=sys.argv[3])\n"
        "orch.handle_message('s', 'I need to open a ticket')\n"
        "orch.handle_message('s', 'the printer on floor 2 is jammed')\n")


def test_a_change_made_before_a_crash_is_reported_and_not_made_twice(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    (ws / "tools.py").write_text(TOOL, encoding="utf-8")
    trusted(ws)  # its own tool: trusted as it is now
    (ws / "die").write_text("", encoding="utf-8")
    url = f"sqlite:///{tmp_path}/s.sqlite"
    run = subprocess.run([sys.executable, "-c", CHAT, str(ROOT), str(ws), url], capture_output=True, timeout=120)
    assert run.returncode == -9  # killed inside the tool call
    orch = build_orchestrator(ws, state_url=url)
    state = orch.load_state("s")
    assert state is not None and state.turn == 1  # the second turn never committed
    left = orch.store.side_effects_to_check("s")  # settled on opening: cut off inside the call
    assert [(e["turn"], e["tool"], e["state"]) for e in left] == [(2, "desk.open_ticket", "unknown")]
    reply = orch.handle_message("s", "the printer on floor 2 is jammed")  # the customer sends it again
    keys = (ws / "keys.log").read_text(encoding="utf-8").split()
    assert len(keys) == 2 and keys[0] == keys[1] == left[0]["key"]  # the same key: the backend can dedupe
    assert f"T-{keys[0][:6].upper()}" in reply
    trace = orch.last_trace("s")
    assert trace is not None and any("may have gone through" in d for d in trace["decisions"])
    assert orch.store.unconfirmed_side_effects("s") == []  # every turn settled
    runs = orch.store.side_effect_runs("s")  # two runs of one key, each under its own turn
    assert [(r["turn"], r["state"], r["turn_state"]) for r in runs] == [(2, "unknown", "lost"), (2, "done", "committed")]
    assert runs[1]["turn_id"] == trace["turn_id"] != runs[0]["turn_id"]


SAVE_DIES = ("import os, signal, sys; sys.path.insert(0, sys.argv[1])\n"
             "from core import build_orchestrator\n"
             "from core.state.sessions import SqliteStateStore\n"
             "class Dies(SqliteStateStore):\n"
             "    def save(self, *a, **k):\n"
             "        os.kill(os.getpid(), signal.SIGKILL)  # the process dies at the commit\n"
             "orch = build_orchestrator(sys.argv[2], store=Dies(sys.argv[3]))\n"
             "orch.handle_message('s', 'I like Logitech, please keep it short', customer_id='c1')\n")


def test_a_preference_learned_before_a_crash_at_the_commit_is_kept_once(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws")
    db = tmp_path / "s.sqlite"
    run = subprocess.run([sys.executable, "-c", SAVE_DIES, str(ROOT), str(ws), str(db)], capture_output=True,
                         timeout=120)
    assert run.returncode == -9
    orch = build_orchestrator(ws, state_url=f"sqlite:///{db}")
    assert orch.load_state("s") is None  # the turn never committed
    assert orch.preferences("c1")["communication_style"] == "short"  # what it learned was kept
    before = orch.memory.entries("c1")
    orch.handle_message("s", "I like Logitech, please keep it short", customer_id="c1")  # sent again
    assert [(e.field, e.value) for e in orch.memory.entries("c1")] == [(e.field, e.value) for e in before]
