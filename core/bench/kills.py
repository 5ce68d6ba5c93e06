"""``python -m core bench --soak-kills N``: kill -9 at random moments of processes opening tickets, then count.

One worker process at a time builds the engine on a shared SQLite store and sends two-turn conversations that
open tickets through a side-effecting Python tool (the benchmarks' ticket desk, :mod:`core.bench.processes`),
on one of a few sessions in turn. Once it is ready it runs for a random time and is killed with SIGKILL,
wherever it is: reading a message, inside the tool, between the tool and the commit, in the commit. The next
worker takes up another session, or the same one. After the last kill the store is opened once more (which
settles what the killed turns left) and every run the tool wrote down is matched with its record
(:mod:`core.bench.ledger`): runs with no record in a final state, and runs filed under a turn not theirs.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from core.bench.ledger import check_ledger, read_runs
from core.bench.processes import TOOL, write_workspace

READY = "ready"
START_WAIT_S = 180.0

WORKER = """import sys, uuid
from core.engine.build import build_orchestrator
orch = build_orchestrator(sys.argv[1], state_url=sys.argv[2])
orch.handle_message("warm-up", "hello")
print("ready", flush=True)
while True:
    orch.handle_message(sys.argv[3], "I need to open a ticket")
    orch.handle_message(sys.argv[3], f"printer {uuid.uuid4().hex[:8]} on floor 3 is jammed")
"""
SLOW_TOOL = '''
import random as _random
import time as _time

_open = open_ticket


def open_ticket(issue: str, idempotency_key: str = "", session_id: str = "") -> dict[str, str]:
    _time.sleep(_random.random() * 0.03)  # a call that takes a moment: kills land inside it too
    out = _open(issue, idempotency_key, session_id)
    _time.sleep(_random.random() * 0.03)
    return out
'''


def run_kill_soak(kills: int = 30, sessions: int = 3, *, min_s: float = 0.2, max_s: float = 2.5,
                  seed: int | None = None) -> dict[str, Any]:
    """Kill ``kills`` worker processes with SIGKILL, each after a random ``min_s``..``max_s`` seconds of
    conversations on session ``k % sessions``; return the ledger's figures and the kills' count."""
    from core.engine.build import build_orchestrator

    rng = random.Random(seed)  # noqa: S311 - when to kill, not secrecy
    with tempfile.TemporaryDirectory(prefix="sop-kills-") as tmpdir:
        root = write_workspace(Path(tmpdir) / "ws", extra_tool=SLOW_TOOL)
        url = f"sqlite:///{tmpdir}/sessions.sqlite"
        names = [f"s{i}" for i in range(sessions)]
        killed, started = 0, time.time()
        for k in range(kills):
            killed += _one_kill(root, url, names[k % sessions], rng.uniform(min_s, max_s))
        orch = build_orchestrator(root, state_url=url)  # the next open: what the killed turns left is settled
        ledger = check_ledger(read_runs(root / "runs.log"), orch.store, names, TOOL)
        turns = sum(len(orch.store.traces(s)) for s in names)
        orch.close()
        orch.store.close()
    return {"kills": killed, "sessions": sessions, "turns_committed": turns,
            "seconds": round(time.time() - started, 1), **ledger.as_dict()}


def _one_kill(root: Path, url: str, session: str, after_s: float) -> int:
    """Start a worker, let it run ``after_s`` seconds once ready, kill it with SIGKILL; 1 if it was killed."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    child = subprocess.Popen([sys.executable, "-c", WORKER, str(root), url, session], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, env=env, text=True)
    try:
        line = _ready(child)
        if line != READY:
            raise RuntimeError(f"a worker did not start (it said {line!r})")
        time.sleep(after_s)
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(30)
        if child.stdout is not None:
            child.stdout.close()
    return int(child.returncode == -signal.SIGKILL)


def _ready(child: subprocess.Popen[str]) -> str:
    """The worker's first line (``ready`` once it is warm), or what it said before it ended."""
    assert child.stdout is not None
    deadline = time.monotonic() + START_WAIT_S
    line = ""
    while time.monotonic() < deadline:
        line = child.stdout.readline()
        if line.strip() == READY or not line:  # ready, or the worker ended
            break
    return line.strip()


def format_soak(r: dict[str, Any]) -> str:
    """The soak's figures in two lines."""
    return (f"{r['kills']} kill -9s over {r['sessions']} sessions ({r['seconds']} s, {r['turns_committed']} turns "
            f"committed): {r['tool_runs']} tool runs, {r['recorded']} recorded (done, failed or unknown), "
            f"{r['unrecorded']} unrecorded, {r['wrong_turn']} filed under the wrong turn\n"
            f"  {r['lost_turns']} run(s) of turns the kills cut off, each under its own turn; {r['unknown']} "
            f"unknown for a person to check; {r['records_not_run']} recorded as started but cut off before the "
            "tool was reached")
