"""Simulated customers for ``python -m core simulate``: a persona is a goal and a manner.

The goal is what the customer wants from one SOP and the values they know. It comes from the synthetic
evaluation's reference walk (:mod:`core.evaluation.walk`) with every answer valid and every tool call
succeeding: the values are the generator's (from the SOP's hints, slot types and the workspace's data), the
tool results it scripts are the world the customer lives in, and the steps it runs are the end the goal
wants. The manner is how the customer talks: its wording comes from the ``simulation`` section of the
language files (``core/language/lexicons/<language>.yaml``), never from a store's or an SOP's words.

The goal is made in :mod:`core.evaluation.persona_goals`; a persona played by rules is
:mod:`core.evaluation.scripted_customer`'s, one played by a language model :mod:`core.evaluation.sim_llm`'s.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from core.engine.build import Workspace
from core.evaluation.data import DataIndex
from core.evaluation.persona_goals import Goal, decoy_answer, goal_for, up_front
from core.evaluation.sop_context import SopContext
from core.sop.graph import SESSION_SLOTS

MANNERS: dict[str, str] = {
    "terse": "answers each question with the bare value and nothing else",
    "chatty": "wraps every message in pleasantries and thanks",
    "confused": "asks what each question means before answering it, then answers hesitantly",
    "changes_mind": "gives one value, then corrects it at the next question",
    "up_front": "gives every value it knows in its first message",
    "side_questions": "asks about something else the shop may know before answering",
    "thai": "writes in Thai",
}
THAI_SCRIPT = re.compile(r"[\u0E00-\u0E7F]")


@dataclass
class Persona:
    """A simulated customer: a goal and a manner."""

    name: str
    manner: str
    goal: Goal

    @property
    def description(self) -> str:
        return MANNERS[self.manner]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "manner": self.manner, "description": self.description, "goal": self.goal.to_dict()}


def _requests(triggers: list[str], language: str) -> list[str]:
    thai = [t for t in triggers if THAI_SCRIPT.search(t)]
    return thai if language == "th" else [t for t in triggers if t not in thai]


def make_personas(ws: Workspace, sops: list[str] | None = None, manners: list[str] | None = None,
                  seed: int = 7) -> tuple[list[Persona], list[str]]:
    """One persona per manner for each SOP (``sops``: ids, default every SOP), with one goal per SOP and
    language shared by its personas; and notes on the manners that do not apply (Thai for a store that
    does not take Thai, or an SOP with no Thai request; a change of mind with a single question).

    Raises:
        ValueError: an unknown SOP id or manner.
    """
    by_id = {s.id: s for s in ws.sops}
    wanted = sops or sorted(by_id)
    unknown = [s for s in wanted if s not in by_id]
    if unknown:
        raise ValueError(f"no SOP {unknown[0]!r} in this workspace (there are: {', '.join(sorted(by_id))})")
    chosen = manners or list(MANNERS)
    bad = [m for m in chosen if m not in MANNERS]
    if bad:
        raise ValueError(f"no manner {bad[0]!r} (there are: {', '.join(MANNERS)})")
    data = DataIndex(ws)
    titles = sorted({c.title for c in ws.kb.chunks}) if ws.kb is not None else []
    budget = int(ws.files.config.settings.get("max_steps_per_turn", 8))
    accepts = ws.files.config.languages
    personas: list[Persona] = []
    notes: list[str] = []
    for index, sop_id in enumerate(wanted):
        ctx = SopContext(by_id[sop_id], ws, data, titles)
        customer = f"sim-customer-{index:03d}" if any(SESSION_SLOTS & {p.name for p in n.params}
                                                      for n in ctx.sop.nodes.values()) else None
        goals: dict[str, Goal | None] = {}
        for manner in chosen:
            language = "th" if manner == "thai" else "en"
            if language not in goals:
                goals[language] = _goal(ctx, language, seed, budget, customer, accepts)
            goal = goals[language]
            why = _not_applicable(manner, goal, language, accepts)
            if why:
                notes.append(f"{manner} on {sop_id}: {why}")
                continue
            assert goal is not None
            personas.append(Persona(f"{manner}/{sop_id}", manner, goal))
    return personas, notes


def _goal(ctx: SopContext, language: str, seed: int, budget: int, customer: str | None,
          accepts: tuple[str, ...]) -> Goal | None:
    requests = _requests(ctx.sop.triggers, language)
    if language != "en" and (not requests or (accepts and language not in accepts)):
        return None
    rng = random.Random(f"{seed}:goal:{ctx.sop.id}:{language}")
    request = rng.choice(requests) if requests else f"I need help: {(ctx.sop.title or ctx.sop.id).lower()}"
    return goal_for(ctx, request.rstrip("?.!"), language, rng, budget, customer)


def _not_applicable(manner: str, goal: Goal | None, language: str, accepts: tuple[str, ...]) -> str:
    if goal is None:
        return ("the store does not take Thai (store.yaml languages)" if accepts and language not in accepts
                else "the SOP has no request written in Thai among its triggers")
    if manner == "changes_mind" and decoy_answer(goal) is None:
        return "no value is asked for before another question, so there is nothing to take back"
    if manner == "up_front" and not [a for a in goal.answers if up_front(a)]:
        return "the SOP asks for nothing that can be given up front"
    return ""


def side_topics(ws: Workspace) -> list[str]:
    """Topics of the knowledge base a customer may ask about on the side: its document titles that share no
    word with any SOP's triggers (a side question, not a request for another SOP); all of them when none is
    apart."""
    titles = sorted({c.title for c in ws.kb.chunks}) if ws.kb is not None else []
    said = {w[:5] for s in ws.sops for t in s.triggers for w in re.findall(r"[a-z]{4,}", t.lower())}
    apart = [t for t in titles if not {w[:5] for w in re.findall(r"[a-z]{4,}", t.lower())} & said]
    return apart or titles
