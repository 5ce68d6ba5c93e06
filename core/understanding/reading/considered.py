"""The readings a message was weighed between (ARCHITECTURE.md §3a, "Shown"): each candidate reading with the
strength of its evidence, whether it was chosen, and why not when it was not. The trace lists them and "Why this
reply" says in a sentence why the winner won.

The strengths are the evidence the reader decided on, on one scale from 0 to 1: an answer that fits the pending
question is the strong prior (1.0; its values did not fit: 0.0), a start of an SOP is its similarity to the SOP's
triggers, and a side question, a cancel, a correction, thanks or a goodbye said in so many words 1.0. Weighing
runs no tool and reads nothing the reader did not already read.
"""

from __future__ import annotations

from typing import Any

from core.understanding.commands import (
    Answer,
    CancelGoal,
    Clarify,
    Command,
    CorrectSlot,
    KnowledgeQuestion,
    SetSlots,
    SmallTalk,
    StartGoal,
    Unclear,
)
from core.understanding.reading.context import ReadContext

SHOWN = 3  # SOPs a message resembles, listed at most


def considered(c: ReadContext, commands: list[Command]) -> list[dict[str, Any]]:
    """The readings weighed for one message, strongest first: ``reading`` (in words), ``score``, ``chosen`` and,
    for those not chosen, ``why``."""
    p, out = c.p, []
    chosen_sops = {x.sop for x in commands if isinstance(x, StartGoal)}
    dropped = {(type(x).__name__, getattr(x, "sop", "")): why for x, why in c.reading.dropped}

    def add(reading: str, score: float, chosen: bool, why: str = "") -> None:
        out.append({"reading": reading, "score": round(float(score), 3), "chosen": chosen,
                    **({"why": why} if why and not chosen else {})})

    if c.active is not None and c.active.pending:
        answer = next((x for x in commands if isinstance(x, Answer)), None)
        fits = answer is not None and getattr(answer.reading, "ok", True)
        add(f"an answer to {c.active.type}'s question", 1.0 if fits else 0.0, answer is not None,
            dropped.get(("Answer", ""), "its values do not fit the question"))
    for sop, score in p.intents[:SHOWN]:
        if c.active is not None and sop == c.active.type:
            continue
        why = dropped.get(("StartGoal", sop)) or _why_not_started(c, score)
        add(f"a request for {sop}", score, sop in chosen_sops, why)
    for x in commands:
        if isinstance(x, CancelGoal):
            add(f"a cancel of {x.goal}", 1.0, True)
        elif isinstance(x, CorrectSlot):
            add(f"a correction of {x.slot}", 1.0, True)
        elif isinstance(x, SetSlots) and x.values:
            add(f"values for {x.sop or 'the running request'} ({', '.join(x.values)})", 1.0, True)
        elif isinstance(x, KnowledgeQuestion):
            add("a side question for the knowledge base", 1.0, True)  # (weighing it never searches again)
        elif isinstance(x, SmallTalk):
            add(f"{x.act or 'small talk'}", 1.0, True)
        elif isinstance(x, Clarify):
            add(f"unsure between {' and '.join(x.options)}: ask which was meant", 1.0, True)
        elif isinstance(x, Unclear):
            add("nothing the SOPs do (ask again)", 0.0, True)
    for x, why in c.reading.dropped:
        if isinstance(x, CancelGoal):
            add(f"a cancel of {x.goal}", 1.0, False, why)
    return sorted(out, key=lambda r: (not r["chosen"], -r["score"]))


def _why_not_started(c: ReadContext, score: float) -> str:
    """Why a resembling SOP was not started, when no reader said so."""
    if score < c.threshold:
        return f"below the threshold of {c.threshold:g}"
    if c.active is not None and c.active.pending:
        return "the pending question comes first: switching needs an explicit request"
    return "another reading was stronger"
