"""The checks a simulated run is judged by (listed in :mod:`core.evaluation.simulate`): read from its traces,
its final state and the persona's goal."""

from __future__ import annotations

import re
from typing import Any

from core.evaluation.persona_goals import Goal
from core.evaluation.sim_report import Run
from core.evaluation.synthetic import _same_value
from core.shared.models import GoalStatus, SessionState

PLACEHOLDER = re.compile(r"\{\s*(?:context\.)?[A-Za-z_][\w.]*\s*\}")  # a template reference left in a reply


def judge(run: Run, goal: Goal, state: SessionState | None, *, hit_limit: bool, taken_up: bool) -> None:
    """Fill a run's checks and problems from its traces and final state."""
    mine = state.latest_goal(goal.sop) if state is not None else None
    run.checks["started"] = mine is not None
    if mine is None:
        run.problems.append(f"{goal.sop} was never started")
    ended = mine is not None and mine.status == GoalStatus.DONE and (mine.outcome or "completed") == goal.end
    run.checks["end"] = ended
    if mine is not None and not ended:
        run.problems.append(f"{goal.sop} is {mine.status.value}" + (f" ({mine.outcome})" if mine.outcome else "")
                            + f" at the end; the goal wants it {goal.end}")
    actions = [a for t in run.traces for a in t.get("actions") or []]
    missing = _not_in_order(goal.steps, actions)
    run.checks["steps"] = not missing
    if missing:
        run.problems.append(f"step not reached in order: {missing}")
    run.checks["tools"] = _check_tools(run, goal)
    others = sorted({g.type for g in state.goals.values() if g.type != goal.sop}) if state is not None else []
    run.checks["on_goal"] = taken_up and not others
    if not taken_up:
        run.problems.append(f"the first message did not start {goal.sop}")
    if others:
        run.problems.append(f"started {', '.join(others)}, which the customer did not ask for")
    run.checks["no_loop"] = _check_loops(run, hit_limit)


def _not_in_order(wanted: list[str], seen: list[str]) -> str:
    """The first wanted step that ``seen`` does not run after the ones before it ('' when all do)."""
    i = 0
    for step in wanted:
        while i < len(seen) and seen[i] != step:
            i += 1
        if i == len(seen):
            return step
        i += 1
    return ""


def _check_tools(run: Run, goal: Goal) -> bool:
    calls = [c for t in run.traces for c in t.get("tool_calls") or [] if c.get("agent") != "orchestrator"]
    ok = True
    for tool, want in goal.calls:
        made = [c for c in calls if c.get("tool") == tool]
        if not made:
            run.problems.append(f"{tool} was never called")
            ok = False
            continue
        args = made[-1].get("args") or {}
        wrong = {p: args.get(p) for p, v in want.items() if not _matches(goal.kinds.get(p, "id"), args.get(p), v)}
        if wrong:
            run.problems.append(f"{tool} was called with {_shown(wrong)}; the customer's values are "
                                f"{_shown({p: want[p] for p in wrong})}")
            ok = False
    return ok


def _matches(kind: str, got: Any, want: Any) -> bool:
    if got is None:
        return False
    if kind in ("money", "number"):
        try:
            return abs(float(got) - float(want)) < 1e-6
        except (TypeError, ValueError):
            return False
    if kind in ("category", "option", "model"):
        g, w = str(got).strip().lower(), str(want).strip().lower()
        return g == w or (kind == "model" and (g in w or w in g))
    return _same_value(got, want)


def _shown(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in values.items())


def _check_loops(run: Run, hit_limit: bool) -> bool:
    ok = True
    if hit_limit:
        run.problems.append(f"the conversation was still going after {len(run.turns)} messages")
        ok = False
    unclear = [any(c.get("command") == "unclear" for c in (t.get("reading") or {}).get("commands") or [])
               for t in run.traces]
    for i in range(1, len(unclear)):
        if unclear[i] and unclear[i - 1]:
            run.problems.append(f"messages {i} and {i + 1} in a row were not understood")
            ok = False
            break
    replies = [r for _, r in run.turns]
    unfilled = next(((i, m.group(0)) for i, r in enumerate(replies) if (m := PLACEHOLDER.search(r))), None)
    if unfilled is not None:
        run.problems.append(f"reply {unfilled[0] + 1} shows the placeholder {unfilled[1]} unfilled")
        ok = False
    for i in range(2, len(replies)):
        if replies[i] == replies[i - 1] == replies[i - 2]:
            run.problems.append(f"the same reply three times in a row (turns {i - 1}-{i + 1})")
            ok = False
            break
    return ok
