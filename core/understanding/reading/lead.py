"""The command that comes before any other when a message holds one (ARCHITECTURE.md §3a): a cancellation,
a goodbye while a goal runs, or a request for a person."""

from __future__ import annotations

from core.language import text as T
from core.understanding.commands import CancelGoal, Command, HumanHandoff, SmallTalk
from core.understanding.reading.context import ReadContext
from core.understanding.reading.intents import STRONG_INTENT
from core.understanding.reading.pending import PendingReader


def lead_command(c: ReadContext, pending: PendingReader) -> Command | None:
    """The command that comes before any other when the message holds one (ARCHITECTURE.md §3a): a
    cancellation (not when the message answers the pending question: "Yes, please cancel it" to
    "Shall I cancel it?" drops it; nor when it gives a new value for a filled slot with words of correction:
    "scratch that, I meant 40"), a goodbye while a goal runs, or a request for a person (unless an
    SOP written for that scores as an exact match)."""
    p, active = c.p, c.active
    farewell = active is not None and T.is_farewell(p.text)
    person = T.asks_for_person(p.text)
    if not ((p.cancel and active is not None) or farewell or person):
        return None
    answers = active is not None and pending.answers_pending(active, p.text)  # read only when it matters
    if p.cancel and active is not None:
        cancel = CancelGoal(evidence=T.cancel_phrase(p.text) or p.text, goal=active.type)
        if not answers and not pending.corrects_filled(active, p.text):
            return cancel
        c.reading.drop(cancel, "the message answers the pending question" if answers else
                       "a new value for a filled slot outranks a cancel")
    if farewell and not answers:
        return SmallTalk(evidence=p.text, act="goodbye")
    if person and not answers:
        best = p.best_intent(STRONG_INTENT)
        if best is None or (active is not None and best[0] == active.type):  # an SOP written for it wins
            return HumanHandoff(evidence=person)
    return None
