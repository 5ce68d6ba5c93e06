"""``python -m core bench --processes N``: several worker processes on one state store.

Each worker builds its own engine on a shared SQLite database and sends conversations that open tickets
through a side-effecting tool, on one shared session (``--same-session``) or on one session each. The
figures: errors that reached the caller, turns taken (committed with a trace), turns the engine asked the
customer to send again, turns lost (a normal reply whose turn was never stored), side-effect runs with no
record in a final state (orphans) or filed under another turn (:mod:`core.bench.ledger`), tickets the
customers were told of (each must be one run: on a shared session, conversations interleave, so a run per
conversation is not a given, but a run per ticket told is), and throughput (turns per second over all workers).
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from core.bench.ledger import check_ledger, read_runs
from core.workspace.trust import keep_trust

WORKSPACE = {
    "store.yaml": """name: Ticket desk
currency: USD
description: Opens support tickets (the multi-process benchmark's workspace).
agents:
  desk:
    goals: "desk.*"
    tools: [desk.open_ticket]
tools:
  desk.open_ticket:
    description: Open a support ticket
    params: [issue]
    python: tools.py:open_ticket
""",
    "gar.csv": """action,action_type,user_interaction_metadata,api,params
ask user to describe the issue,ask_user_input,a short description of the problem,,issue
open ticket,api_call|message_to_user,"Ticket {ticket_id} is open for you.",desk.open_ticket,issue
""",
    "sops/ticket.sop": """---
id: desk.ticket
title: Open a support ticket
agent: desk
priority: 1
triggers:
  - I need to open a ticket
  - please open a support ticket
---
ask user to describe the issue
open ticket
terminate the flow
""",
    "tools.py": '''"""A ticket desk whose every run is written down (in one write, as it is sent), so runs can be matched
with the store's records of them."""

import json
import os
import uuid
from pathlib import Path


def open_ticket(issue: str, idempotency_key: str = "", session_id: str = "") -> dict[str, str]:
    ticket = "T-" + uuid.uuid4().hex[:8].upper()
    line = json.dumps({"ticket": ticket, "pid": os.getpid(), "key": idempotency_key, "session": session_id,
                       "issue": issue}) + "\\n"
    fd = os.open(Path(__file__).parent / "runs.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)
    return {"ticket_id": ticket}
''',
}
TOOL = "desk.open_ticket"
START_WAIT_S = 180.0  # how long workers wait for each other to be loaded before the clock starts


def write_workspace(root: Path, extra_tool: str = "") -> Path:
    """The benchmark's ticket-desk workspace, written under ``root`` (``extra_tool``: Python code appended to its
    tools.py, such as a wrapper that makes each run take a moment)."""
    for name, text in WORKSPACE.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + (extra_tool if name == "tools.py" else ""), encoding="utf-8")
    keep_trust(root, was_trusted=True)  # the benchmark's own ticket desk
    return root


def _worker(args: tuple[str, str, str, int, int, Any, Any]) -> None:
    workspace, state_url, session, conversations, worker, barrier, results = args
    out: dict[str, Any] = {"sent": 0, "errors": 0, "resend": 0, "replies": 0, "told": 0, "error_text": "",
                           "started": time.time(), "ended": time.time(), "taken": []}
    try:
        from core.engine.build import build_orchestrator
        from core.language.replies import say

        busy = say("busy", "en")
        orch = build_orchestrator(workspace, state_url=state_url)
        orch.handle_message(f"warm-up-{worker}", "hello")  # the model loaded before the clock starts
    except Exception as exc:  # noqa: BLE001 - reported, never a hang of the others
        out["error_text"] = f"worker {worker} could not start: {type(exc).__name__}: {exc}"
        out["errors"] = 2 * conversations  # every turn it was to send
        results.put(out)
        barrier.abort()
        return
    try:
        barrier.wait(timeout=START_WAIT_S)
    except threading.BrokenBarrierError:
        pass  # a worker did not start in time: the others go on, unsynchronised
    out["started"] = time.time()
    for i in range(conversations):
        for text in ("I need to open a ticket", f"printer {worker}-{i} on floor {i % 7} is jammed"):
            out["sent"] += 1
            try:
                reply = orch.handle_message(session, text)
            except Exception as exc:  # noqa: BLE001 - counted: an error that reached the caller
                out["errors"] += 1
                out["error_text"] = f"{type(exc).__name__}: {exc}"
                continue
            out["resend" if reply == busy else "replies"] += 1
            out["told"] += reply.count("Ticket T-")  # the customer was told a ticket is open
            if reply != busy:
                out["taken"].append(text)  # the customer was answered: the turn must be stored, once
    out["ended"] = time.time()
    orch.close()
    results.put(out)


def run_processes(processes: int, conversations: int = 25, same_session: bool = True, *,
                  sessions: int | None = None, state_url: str | None = None) -> dict[str, Any]:
    """Run ``processes`` workers of ``conversations`` two-turn conversations each; return the figures.
    A worker that dies or never reports counts as errors, never as a hang.

    Workers send to one shared session (``same_session``), one session each, or, with ``sessions``,
    worker ``w`` to session ``w % sessions`` (some sessions shared, some not). ``state_url``: the
    store they share (default a fresh SQLite file; a PostgreSQL database is used as it is).
    Besides the counts, the final store is checked turn by turn: every answered message is stored in
    exactly one turn (``duplicated``, ``missing``) and each session's version equals its stored turns
    (``version_gaps``)."""
    from core.retrieval.embedding import one_thread_each
    from core.state.sessions import open_state_store

    one_thread_each()  # the workers share the machine's cores
    with tempfile.TemporaryDirectory(prefix="sop-procs-") as tmpdir:
        root = write_workspace(Path(tmpdir) / "ws")
        url = state_url or f"sqlite:///{tmpdir}/sessions.sqlite"
        ctx = mp.get_context("spawn")
        barrier, results = ctx.Barrier(processes), ctx.Queue()  # every worker warm before the first turn

        def session_of(w: int) -> str:
            if sessions:
                return f"s{w % sessions}"
            return "shared" if same_session else f"s{w}"

        names = {session_of(w) for w in range(processes)}
        workers = [ctx.Process(target=_worker, args=((str(root), url, session_of(w), conversations, w, barrier,
                                                      results),), daemon=True)
                   for w in range(processes)]
        for w in workers:
            w.start()
        got: list[dict[str, Any]] = []
        deadline = time.time() + START_WAIT_S + 60 + conversations * processes * 2
        while len(got) < processes and time.time() < deadline:
            try:
                got.append(results.get(timeout=1))
            except queue.Empty:
                if not any(w.is_alive() for w in workers):
                    break
        for w in workers:
            w.join(5)
            if w.is_alive():
                w.kill()
        missing = processes - len(got)
        if missing:
            got.append({"sent": 0, "errors": missing, "resend": 0, "replies": 0, "started": time.time(),
                        "ended": time.time(), "error_text": f"{missing} worker(s) died or never reported"})
        elapsed = max(r["ended"] for r in got) - min(r["started"] for r in got)
        store = open_state_store(url)
        traces = [t for s in sorted(names) for t in store.traces(s)]
        ledger = check_ledger(read_runs(root / "runs.log"), store, sorted(names), TOOL)
        incidents = sum(len(store.incidents(s)) for s in names)
        gaps = 0
        for s in names:
            state = store.load(s)
            gaps += abs((state.version if state is not None else 0) - len(store.traces(s)))
        store.close()
        answered = Counter(text for r in got for text in r.get("taken", []))
        stored = Counter(str(t.get("user", "")) for t in traces)
    replies = sum(r["replies"] for r in got)
    return {
        "processes": processes, "sessions": len(names), "sent": sum(r["sent"] for r in got),
        "duplicated": sum((stored - answered).values()), "missing": sum((answered - stored).values()),
        "version_gaps": gaps,
        "errors": sum(r["errors"] for r in got), "resend": sum(r["resend"] for r in got),
        "taken": len(traces), "lost": replies - len(traces), "incidents": incidents,
        "tool_runs": ledger.tool_runs, "orphans": ledger.unrecorded, "wrong_turn": ledger.wrong_turn,
        "tickets_told": sum(r.get("told", 0) for r in got), "seconds": round(elapsed, 2),
        "turns_per_s": round(len(traces) / elapsed, 1) if elapsed > 0 else 0.0,
        "error_text": next((r["error_text"] for r in got if r["error_text"]), ""),
    }


def format_result(r: dict[str, Any]) -> str:
    line = (f"{r['processes']} process(es) on {r['sessions']} session(s): {r['sent']} turns sent, "
            f"{r['taken']} taken, {r['resend']} asked to resend, {r['errors']} errors reached the caller, "
            f"{r['lost']} lost, {r['duplicated']} stored twice; "
            f"side-effect runs {r['tool_runs']} (tickets told {r['tickets_told']}), with no record {r['orphans']}, "
            f"filed under the wrong turn {r['wrong_turn']}; "
            f"{r['turns_per_s']} turns/s ({r['seconds']} s)")
    return line + (f"\n  first error: {r['error_text']}" if r["error_text"] else "")
