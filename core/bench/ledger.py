"""Tool runs matched with the store's records of them: how many ran, how many are recorded in a final state
(done, failed or unknown), and how many are filed under a turn that is not theirs.

The benchmarks' ticket desk (:data:`core.bench.processes.WORKSPACE`) writes one JSON line per run, as it is
sent: its idempotency key, session and issue. A run is recorded when the session's store has a run of that key
and issue in a final state. A recorded run is filed under the wrong turn when the store says its turn committed
but the trace stored under that turn number is another turn's (another turn id, or no call of that key), or when
it says its turn never committed while a stored trace carries its turn id.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.state.sessions import StateStore

FINAL = ("done", "failed", "unknown")


@dataclass(frozen=True)
class Ledger:
    """What the runs log and the store say together."""

    tool_runs: int  # runs the tool itself wrote down
    recorded: int  # of those, with a record in a final state
    unrecorded: int  # runs with no record in a final state (none, or one still 'started')
    wrong_turn: int  # recorded runs filed under a turn that is not theirs
    lost_turns: int  # recorded runs of turns that never committed (cut off), each under its own turn
    unknown: int  # recorded runs whose outcome a person has to check
    records_not_run: int  # records of runs the tool never wrote down (cut off before it was reached)

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def read_runs(log: Path) -> list[dict[str, Any]]:
    """The runs the ticket desk wrote down (a line cut short by a kill is not a run: the write is one call)."""
    if not log.exists():
        return []
    out = []
    for line in log.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def check_ledger(runs: list[dict[str, Any]], store: StateStore, sessions: list[str], tool: str) -> Ledger:
    """Match ``runs`` (from :func:`read_runs`) with the records of ``tool`` in ``sessions``."""
    records = [r for s in sessions for r in ({**x, "session": s} for x in store.side_effect_runs(s))
               if r["tool"] == tool]
    traces = {(s, t["turn"]): t for s in sessions for t in store.traces(s)}
    turn_ids = {t.get("turn_id") for t in traces.values()}
    ran = Counter((r.get("session", ""), r.get("key", ""), str(r.get("issue", ""))) for r in runs)
    kept = Counter((r["session"], r["key"], str(r["args"].get("issue", ""))) for r in records if r["state"] in FINAL)
    recorded = sum((ran & kept).values())
    wrong = 0
    for r in records:
        if r["state"] not in FINAL:
            continue
        trace = traces.get((r["session"], r["turn"]))
        if r["turn_state"] == "committed":
            keys = {c.get("key") for c in (trace or {}).get("tool_calls", [])}
            wrong += trace is None or trace.get("turn_id") != r["turn_id"] or r["key"] not in keys
        else:
            wrong += r["turn_id"] in turn_ids
    return Ledger(tool_runs=len(runs), recorded=recorded, unrecorded=len(runs) - recorded, wrong_turn=wrong,
                  lost_turns=sum(1 for r in records if r["turn_state"] == "lost"),
                  unknown=sum(1 for r in records if r["state"] == "unknown"),
                  records_not_run=sum((kept - ran).values()))
