"""Synthetic sessions (paper §4): walk an SOP with sampled customer inputs and API outcomes, and
write down the agent's expected next action at every state.

The expected actions come from three things only: the compiled SOP graph, the failure rules
below, and the generator's own labels (which kind of input it wrote, which API outcome and which
branch it scripted). The brain's interpretation code is never consulted, so a brain cannot agree
with itself into a good score.

Failure rules (ARCHITECTURE.md §3 and the paper §3), the reference the agent is graded against:

- A valid answer fills the step's slots; the flow continues (a branch that reads the answer
  follows the label the answer was written for).
- An invalid answer (wrong format, gibberish, off-topic chit-chat) fails validation: the same
  question is asked again, and that counts as another run of the step.
- Greetings, thanks and frustration get a social reply and the question again (not a run).
- A question instead of an answer is a doubt: seek external knowledge, then the pending
  question again (not a run).
- A request to go back returns to the named earlier question (else the latest answered one);
  its slots and those of every step after it are cleared and those steps count afresh.
- An API failure or a timeout: the same call again, at once (another run).
- An "invalid input" error: back to the question that filled the named param (else the latest
  answered one), forgetting what it and every later question collected; the call's run count is
  kept, and when the call has already run three times the goal ends gracefully instead.
- A step about to run a fourth time without the flow getting past it ends the goal gracefully.
- The opening message fills the free-text slots it describes (when it says more than the SOP's
  title: two words beyond it, or one in a question; "I need help: fix a device problem" describes
  nothing) and any self-identifying value it contains (an amount, a listed category or brand, an
  email, an id of the expected shape).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from core.engine.build import Workspace
from core.evaluation.data import DataIndex
from core.evaluation.sop_context import SopContext
from core.evaluation.walk import HARD_TURN_LIMIT, TurnPlan, Walk
from core.sop.graph import SESSION_SLOTS, Sop


@dataclass
class SessionPlan:
    """A whole synthetic session for one SOP."""

    index: int
    sop: str
    customer_id: str | None
    turns: list[TurnPlan] = field(default_factory=list)
    outcome: str = ""  # completed | graceful
    notes: list[str] = field(default_factory=list)

    @property
    def states(self) -> int:
        return sum(len(t.expected) for t in self.turns)


# ---------------------------------------------------------------------------- sessions


def generate_sessions(ws: Workspace, sessions: int, seed: int) -> list[SessionPlan]:
    """``sessions`` synthetic sessions spread evenly over the workspace's SOPs, reproducible by seed."""
    if not ws.sops:
        return []
    data = DataIndex(ws)
    titles = [c.title for c in ws.kb.chunks] if ws.kb is not None else []
    contexts = {s.id: SopContext(s, ws, data, sorted(set(titles))) for s in ws.sops}
    budget = int(ws.files.config.settings.get("max_steps_per_turn", 8))
    order = sorted(contexts)
    plans = []
    for i in range(sessions):
        rng = random.Random(f"{seed}:{i}")
        ctx = contexts[order[i % len(order)]]
        plans.append(_session(i, ctx, rng, budget))
    return plans


def unexercised(sops: dict[str, Sop], plans: list[SessionPlan]) -> dict[str, list[str]]:
    """Per SOP with sessions, the steps no generated session reached (in the SOP's order): what the
    evaluation says nothing about. A step behind a condition the generator cannot satisfy shows here."""
    reached: dict[str, set[str]] = {}
    for plan in plans:
        seen = reached.setdefault(plan.sop, set())
        seen.update(e.action for turn in plan.turns for e in turn.expected)
    out: dict[str, list[str]] = {}
    for sop_id, seen in sorted(reached.items()):
        sop = sops.get(sop_id)
        if sop is None:
            continue
        steps = sorted((n for n in sop.nodes.values() if n.kind == "action"), key=lambda n: (n.line, n.id))
        missing = [n.label for n in steps if n.label not in seen]
        if missing:
            out[sop_id] = list(dict.fromkeys(missing))
    return out


def _session(index: int, ctx: SopContext, rng: random.Random, budget: int) -> SessionPlan:
    customer = _customer(ctx, index)
    walk = Walk(ctx, rng, budget, customer)
    plan = SessionPlan(index, ctx.sop.id, customer)
    plan.turns.append(walk.start())
    while walk.outcome is None and walk.pending is not None and len(plan.turns) < HARD_TURN_LIMIT:
        plan.turns.append(walk.answer())
    plan.outcome = walk.outcome or "unfinished"
    plan.notes = walk.notes
    return plan


def _customer(ctx: SopContext, index: int) -> str | None:
    """The signed-in customer when a step uses it: one per session, so no preference carries over."""
    uses = any(SESSION_SLOTS & {p.name for p in n.params} for n in ctx.sop.nodes.values())
    return f"eval-customer-{index:05d}" if uses else None
