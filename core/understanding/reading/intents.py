"""Which SOP a message asks for (:class:`IntentReader`): over the threshold, or under it when it clearly leads,
is asked for by name, by values only it lists, or plainly while the message does not answer the pending
question; the part of a message that asks for it, several SOPs asked for at once, and the request after a
cancellation. Thresholds: ARCHITECTURE.md §3a and docs/turn.md."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.language import text as T
from core.language.lexicons import segment
from core.shared.models import Goal
from core.sop.graph import Sop
from core.tools.kb import KB_TOOL
from core.understanding.answers import AnswerReader
from core.understanding.brains.base import Brain, Perception
from core.understanding.commands import StartGoal
from core.understanding.executor import FlowExecutor
from core.understanding.reading.context import ReadContext
from core.understanding.reading.naming import SopNames
from core.understanding.reading.pending import PendingReader
from core.understanding.reading.volunteered import VolunteeredValues
from core.understanding.signals import CLEAR_MARGIN, LOW_INTENT, clear_lead, only_social

INTENT_MARGIN = 0.05  # a request for another SOP must score this much above the running one
STRONG_INTENT = 0.75  # from here a score asks for an SOP whatever else the message does
NAMED_INTENT = 0.2  # naming a value only one SOP lists is enough from this score on


@dataclass
class IntentReader:
    """The SOP a message asks for among one workspace's SOPs, read with what names them (``names``), what
    answers the pending question (``pending``) and the values a message gives (``given``)."""

    sops: dict[str, Sop]
    agent_of: Callable[[str], FlowExecutor | None]
    brain: Brain
    answers: AnswerReader
    names: SopNames
    pending: PendingReader
    given: VolunteeredValues

    def new_intent(self, c: ReadContext) -> tuple[str, float] | None:
        """The SOP a message asks for (with its score), other than the running one; None when it asks for
        none. Under the threshold an SOP still counts when it clearly leads, is asked for by name, by
        values only it lists, or plainly while the message does not answer the pending question; close
        to the running SOP it needs a request naming it; a message that answers the pending question
        stays an answer (the start is dropped, with the reason)."""
        p, active, notes = c.p, c.active, c.notes
        if only_social(p):  # "thanks, that report helps!" (but "Lovely! Now I'd like a canoe" asks)
            return None
        if T.only_declines(p.text):  # "nah, I don't want the upgrade" names an SOP only to turn it down
            if p.intents and p.intents[0][1] >= LOW_INTENT:
                notes.append(f"the message turns {p.intents[0][0]} down: not a request for it")
            return None
        best = p.best_intent(c.threshold) or self.clear_winner(p, active, notes, just_finished=c.just_finished,
                                                               kb_knows=c.kb_knows)
        by_name = None
        if best is None or (active is not None and best[0] == active.type):
            best = by_name = self.asked_by_name(p, active, notes) \
                or self.values_name(p, active, notes, finished=c.finished, kb_knows=c.kb_knows) \
                or self.plain_switch(p, active, notes)
        if best is None or (active is not None and best[0] == active.type):
            return None
        if active is None and by_name is None and self.kb_beats(c, best):
            return None
        if active is None:
            return best
        text = p.text
        if by_name is None and p.question and not T.is_request(text) and best[1] < STRONG_INTENT and c.kb_knows():
            c.reading.drop(StartGoal(evidence=text, sop=best[0], score=round(best[1], 3)),
                           "a question the knowledge base answers while a goal runs is a side question, not a "
                           "request for another SOP")
            return None
        if by_name is None and best[1] < p.score(active.type) + INTENT_MARGIN and (
                self.request_part(active, text, best[0]) is None or self.pending.corrects_goal(active, text)):
            return None  # close to the active SOP, and not asked for by name ("wrong category, let me fix it")
        if active.pending and by_name is None and best[1] < STRONG_INTENT and not p.question \
                and not T.is_request(text) and not T.wants_it_now(text) and len(T.words(text)) <= 3:
            c.reading.drop(StartGoal(evidence=text, sop=best[0], score=round(best[1], 3)),
                           "a goal waits on its question: a few words that resemble another SOP are no request")
            return None
        if active.pending and best[1] < STRONG_INTENT and not T.wants_it_now(text) and (
                self.pending.answers_pending(active, text) or self.pending.about_pending(active, text)) \
                and self.request_part(active, text, best[0]) is None:
            c.reading.drop(StartGoal(evidence=text, sop=best[0], score=round(best[1], 3)),
                           "the message answers the pending question")
            return None
        return best

    def close_call(self, c: ReadContext) -> tuple[str, str] | None:
        """With no goal running, two SOPs a message resembles about alike (ARCHITECTURE.md §3a: ask when
        unsure): the best one asks for its SOP (the threshold) without a trigger matched outright
        (STRONG_INTENT), the runner-up is within CLEAR_MARGIN of it and at least LOW_INTENT, and the message
        names neither by its words or values (nor is a question, a follow-up, or a rule-out). Their ids, the
        likelier first; None otherwise."""
        p = c.p
        if c.active is not None or c.just_finished or len(p.intents) < 2 or p.greeting or p.question \
                or only_social(p) or T.only_declines(p.text) or T.ruled_out(p.text) != p.text:
            return None  # a follow-up, a question, or a message that rules something out is read otherwise
        (first, s1), (second, s2) = p.intents[0], p.intents[1]
        if not (c.threshold <= s1 < STRONG_INTENT and s2 >= LOW_INTENT and s1 - s2 < CLEAR_MARGIN):
            return None
        named = self.names.named_sops(p.text) & {first, second}
        valued = {sid for sid in (first, second)
                  if sid in self.sops and self.given.values_for(c.prepared(self.sops[sid]), p.text, opening=True)[0]}
        if len(named) == 1 or valued:
            return None  # a subject names one of them alone, or the message gives values: evidence enough
        return first, second

    def clear_winner(self, p: Perception, active: Goal | None, notes: list[str], *, just_finished: bool = False,
                     kb_knows: Callable[[], bool] = lambda: False) -> tuple[str, float] | None:
        """With no goal active, an SOP a message plainly points to though it scores under the threshold
        ("there is a charge on my card I never made" for a dispute): at least LOW_INTENT and CLEAR_MARGIN
        above every other SOP, or a request naming what only that SOP deals with ("can you book Tamarind
        for 9", "how much is in my savings?") from NAMED_INTENT on. Small talk and reactions to a result just given
        never count (``just_finished``: a goal ended last turn). While a goal is active the threshold
        stands (see :meth:`asked_by_name`)."""
        if active is not None or not p.intents or p.greeting or only_social(p):
            return None
        shop = self.given.commerce
        # "I need a <model>", "anything by <maker>?": the store's own product words name its search
        products = shop.names_products(p.text, list(self.sops.values())) if shop is not None else set()
        if len(T.tokens(p.text)) < 2 and not (products and (p.question or T.is_request(p.text))):
            return None
        named = self.names.named_sops(p.text) or products
        if len(named) > 1:  # "check my account to see if I can afford dinner": the request, not its purpose
            named = self.names.named_sops(T.main_clause(p.text)) or named
        sop_id, score = p.intents[0]
        if len(named) == 1 and (p.question or T.is_request(p.text) or sop_id in named):
            sop_id = next(iter(named))
            score = p.score(sop_id)
            if (score < NAMED_INTENT and sop_id not in products) \
                    or (p.question and not T.is_request(p.text) and kb_knows()):
                return None  # a question the knowledge base answers ("what time do you open?") stays a question
        else:
            if just_finished and not (p.question or T.is_request(p.text)):
                return None  # "Oh, that's lovely": a reaction to the result, not a new request
            if not clear_lead(p):
                return None
        notes.append(f"{sop_id} scores {score:.2f}, under the threshold but clearly asked for")
        return sop_id, score

    def asked_by_name(self, p: Perception, active: Goal | None, notes: list[str]) -> tuple[str, float] | None:
        """While a goal is active, a request that names another SOP ("can you tell me my balance first?")
        though the message scores under the threshold for it, or highest for the active SOP: at least
        LOW_INTENT, or NAMED_INTENT for a sibling of the running SOP named by the title word that tells them
        apart ("book the one you found" while searching cabins), and not an answer to the pending question."""
        if active is None or not p.intents or self.pending.corrects_goal(active, p.text):
            return None
        lead = p.intents[0][1] if p.intents[0][0] == active.type else None
        for sop_id, score in p.intents:
            if sop_id == active.type or score < NAMED_INTENT:
                continue
            part = self.request_part(active, p.text, sop_id)
            if part is None:
                continue
            # a sibling of the running SOP named by the title word that tells them apart ("book" while
            # searching cabins): their other words are the same, so the scores cannot tell them apart
            sibling = bool(self.names.kin.get(active.type, {}).get(sop_id, set()) & {T.stem(w) for w in T.tokens(part)})
            if score < LOW_INTENT and not sibling:
                continue
            if lead is not None and lead - score >= CLEAR_MARGIN and not sibling \
                    and sop_id not in self.names.named_sops(part, values=False):
                continue  # the message reads plainly as the running SOP; a value the other lists is not enough
            notes.append(f"{sop_id} scores {score:.2f}, under the threshold, but the request names it")
            return sop_id, score
        return None

    def plain_switch(self, p: Perception, active: Goal | None, notes: list[str]) -> tuple[str, float] | None:
        """While a goal waits for an answer, a request that is no answer to it and plainly points to
        another SOP ("let me sort out my login before that" while a booking asks for a name): at least
        LOW_INTENT and CLEAR_MARGIN above every other SOP, the active one included."""
        if active is None or not active.pending or not p.intents or only_social(p) \
                or not (p.question or T.is_request(self.brain.correct(p.text))):
            return None
        sop_id, score = p.intents[0]
        if sop_id == active.type or not clear_lead(p) or self.pending.about_pending(active, p.text):
            return None
        sop, agent = self.sops.get(active.type), self.agent_of(active.type)
        if sop is None or agent is None or self.answers.answer_values(active, sop, p.text):
            return None  # an answer to the pending question first
        notes.append(f"{sop_id} scores {score:.2f}, under the threshold, but plainly asked for and "
                                 f"the message does not answer the pending question")
        return sop_id, score

    def values_name(self, p: Perception, active: Goal | None, notes: list[str], *, finished: str = "",
                    kb_knows: Callable[[], bool] = lambda: False) -> tuple[str, float] | None:
        """A message that gives listed values only one SOP asks for ("we'd arrive on the 4th and leave
        on the 9th" while searching cabins: the booking's days; "and on Saturday?" after a forecast), and
        nothing the active SOP can use: that SOP is what the customer is after. A question counts only
        when the knowledge base has no answer to it (``kb_knows``; then it is a doubt to answer). ``finished``:
        the SOP of the goal completed last."""
        if active is not None and (active.type not in self.sops or self.pending.answers_pending(active, p.text)
                                   or self.names.listed_values(self.sops[active.type], p.text)):
            return None
        current = active.type if active is not None else ""
        given = {sop.id: set(map(str, found.values())) for sop in self.sops.values()
                 if sop.id != current and (found := self.names.listed_values(sop, p.text))}
        # values several SOPs list ("Friday"): the SOP given the most of them ("the Falls Path on Friday"),
        # else the one finished last ("and on Saturday?" after its report)
        named = [sid for sid, vals in given.items() if all(vals > v for k, v in given.items() if k != sid)]
        if not named and finished in given:
            named = [finished]
        if len(named) != 1 or (p.question and kb_knows()):
            return None
        if active is not None and (active.type in self.names.named_sops(p.text, near=active.type)
                                   or p.score(active.type) - p.score(named[0]) >= CLEAR_MARGIN):
            return None  # "book the canoe for the Summit Trail" while booking a canoe: about this SOP
        if active is None and finished == named[0] and (p.question or T.is_request(p.text)):
            return None  # "any free slot at noon instead?" after a booking failed: a follow-up (see FollowUps.reopen)
        notes.append(f"{named[0]}: the message gives values only it asks for")
        return named[0], p.score(named[0])

    def kb_beats(self, c: ReadContext, best: tuple[str, float]) -> bool:
        """An information question the knowledge base answers at least as closely as the SOP's triggers match
        it ("Is delivery free?" beside an order-status SOP) is a knowledge question, not a start; a request
        ("can you check my order?"), or an SOP that itself answers from the knowledge base, still starts."""
        p = c.p
        if not c.kb_tool or best[1] >= STRONG_INTENT or not p.question or T.is_request(p.text):
            return False  # a trigger matched this closely asks for its SOP whatever the knowledge base holds
        sop = self.sops.get(best[0])
        if sop is None or any(n.tool == KB_TOOL for n in sop.nodes.values()):
            return False
        agent = self.agent_of(sop.id)
        types = agent.types(sop) if agent is not None else {}
        given = self.given.values_for(c.prepared(sop), p.text, opening=True)[0] if agent is not None else {}
        if any(k in types and types[k].kind not in ("text", "boolean") for k in given):
            return False  # "where is that repair? RT-9999": a question carrying the SOP's own values asks for it
        similarity = c.kb_similarity()
        if similarity < best[1]:
            return False
        c.notes.append(f"{best[0]} scores {best[1]:.2f}; the knowledge base's best passage {similarity:.2f}: "
                       "a question for the knowledge base")
        return True

    def request_part(self, active: Goal, text: str, sop_id: str) -> str | None:
        """The part of a message that asks for ``sop_id`` by name and is not an answer to the pending
        question ("2pm is good. Also, can you tell me the weather?" -> its second sentence)."""
        for clause in T.clauses(text, min_tokens=1) or [text]:
            # "yes, book that cabin for me" to "look for another cabin?": the request after the yes
            for part in dict.fromkeys((clause, T.YES.sub("", clause, count=1).lstrip(" ,.!"))):
                if not part or not (T.is_question(part) or T.is_request(self.brain.correct(part))) \
                        or self.names.named_sops(T.main_clause(part), near=active.type) != {sop_id}:
                    continue
                if active.pending and (self.pending.answers_pending(active, part)
                                       or self.pending.about_pending(active, part)):
                    continue
                return part
        return None

    def moves_on(self, p: Perception, goal: Goal) -> bool:
        """Whether a message asks for something new rather than reacting to what was just said: a
        question, a request, or words that point to another SOP."""
        other = p.intents[0][0] != goal.type and p.intents[0][1] >= LOW_INTENT if p.intents else False
        return p.question or T.is_request(p.text) or other or bool(self.names.named_sops(p.text) - {goal.type})

    def several_requests(self, text: str, target: str) -> tuple[str, tuple[str, ...]]:
        """A message asking for two things ("I'd like a canoe on Sunday. But first, how are the trails?"): the SOP
        to start now (the one wanted first, else ``target``) and the others asked for, in order."""
        asked: list[str] = []
        first = None
        for part in T.clauses(T.main_clause(text)):  # not a subject named as the purpose or time
            if not (T.is_question(part) or T.is_request(part) or T.wants_it_now(part)):
                continue
            named = self.names.named_sops(part)
            if len(named) == 1:
                sop_id = next(iter(named))
                asked.append(sop_id)
                if first is None and T.wants_it_now(part):
                    first = sop_id
        asked = list(dict.fromkeys(asked))
        if len(asked) < 2 or target not in asked:
            return target, ()
        now = first if first is not None else target
        return now, tuple(a for a in asked if a != now)

    def asked_after_cancel(self, p: Perception, goal: Goal, phrase: str) -> Sop | None:
        """The SOP the words after a cancellation ask for ("Just forget it then. What's the weather like
        on Tuesday?"): a question or request scoring at least LOW_INTENT for an SOP other than the one
        cancelled, which names it or leads every other SOP clearly."""
        said = segment(p.text)
        at = said.find(phrase)
        rest = said[at + len(phrase):] if at >= 0 else ""
        if len(T.tokens(rest)) < 2 or not any(T.is_question(c) or T.is_request(self.brain.correct(c))
                                              for c in T.clauses(rest) or [rest]):
            return None
        for sop_id, score in p.intents:
            if sop_id == goal.type or score < LOW_INTENT or self.agent_of(sop_id) is None:
                continue
            if sop_id in self.names.named_sops(T.main_clause(rest)) or (p.intents[0][0] == sop_id and clear_lead(p)):
                return self.sops[sop_id]
        return None
