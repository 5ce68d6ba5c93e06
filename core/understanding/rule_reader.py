"""The rule reader: what a customer message says, read against the workspace's SOPs and the goal in hand.

The orchestrator asks it, before acting, what a message does: whether it answers the pending question
(a value of the asked type, a yes/no, a choice among offered options), names what that question asks
for, corrects a value the goal holds, or asks for another SOP (by its subject, by a value only that SOP
lists, or by a clear lead in the intent scores). Every method here reads; none changes a session, runs a
tool or writes a reply. Language knowledge comes from the language files (core/language/lexicons) through
:mod:`core.language.text`; what each SOP is about comes from its title, short triggers and listed values, never
from a store's or an evaluation's names. Thresholds: ARCHITECTURE.md §3a and docs/turn.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from core.language import text as T
from core.language.lexicons import segment
from core.shared.models import Goal
from core.sop.graph import Node, Sop
from core.tools.kb import KB_TOOL
from core.understanding.answers import AnswerReader, AnswerReading
from core.understanding.brains.base import Brain, Perception
from core.understanding.commands import (
    Answer,
    CancelGoal,
    Command,
    CorrectSlot,
    FollowUp,
    GoBack,
    HumanHandoff,
    KnowledgeQuestion,
    Reading,
    SetSlots,
    Skip,
    SmallTalk,
    StartGoal,
    Unclear,
    value_words,
)
from core.understanding.domain.commerce import Commerce
from core.understanding.executor import FlowExecutor
from core.understanding.go_back import go_back_target
from core.understanding.mentions import find_option
from core.understanding.signals import (
    CLEAR_MARGIN,
    LOW_INTENT,
    NOT_KEPT,
    asks_choice,
    choice_words,
    clear_lead,
    confirms,
    corrects,
    describing,
    explained_by,
    free_text,
    gives_values,
    kin_words,
    names_asked,
    one_value,
    only_social,
    part_of,
    search_query,
    social_act,
    subjects,
    what_stands,
)
from core.workspace.slots import IDENTIFYING_KINDS

INTENT_MARGIN = 0.05  # a request for another SOP must score this much above the running one
STRONG_INTENT = 0.75  # from here a score asks for an SOP whatever else the message does
NAMED_INTENT = 0.2  # naming a value only one SOP lists is enough from this score on


@dataclass
class ReadContext:
    """What the rule reader knows of the turn besides the message: the running goal, where the reading is
    written (commands it drops, with the reason), the trace's decision notes, and what it may ask of the
    session (a goal finished last turn, the SOP completed last, whether the knowledge base answers)."""

    p: Perception
    active: Goal | None
    reading: Reading
    notes: list[str]
    threshold: float = 0.5  # the intent score from which a message asks for an SOP
    just_finished: bool = False  # a goal ended last turn (the customer may be answering its result)
    last: Goal | None = None  # the goal completed last in the session
    below: Goal | None = None  # the goal that comes back when the running one ends
    offered_more: bool = False  # our last message asked "anything else?"
    kb_tool: bool = False  # the workspace has a knowledge base to answer questions from
    kb_knows: Callable[[], bool] = lambda: False
    kb_similarity: Callable[[], float] = lambda: 0.0  # how close the knowledge base's best passage is (0 when none)
    prepared: Callable[[Sop], Goal] = lambda sop: Goal(id="", type=sop.id)  # a goal of an SOP as it would start

    @property
    def finished(self) -> str:
        """The SOP completed last ('' when none)."""
        return self.last.type if self.last is not None else ""


@dataclass(frozen=True)
class ReplyReading:
    """The rules' reading of a message to the running goal (:meth:`RuleReader.read_reply`)."""

    go_back: Node | None = None  # the earlier question the customer wants to redo
    unable: bool = False  # the customer cannot answer the pending question
    doubt: bool = False  # a side question, to answer from the knowledge base
    unavailable: tuple[str, ...] = ()  # slots the customer says they cannot give
    answer: AnswerReading | None = None  # the reply to the pending question, when it is one
    corrections: dict[str, Any] = field(default_factory=dict)  # values for other slots of the goal
    fixes: dict[str, Any] = field(default_factory=dict)  # ... those that replace a filled value


class RuleReader:
    """The rules' reading of messages for one workspace: its SOPs, the agents that type their slots, and
    the brain's spelling correction."""

    def __init__(self, sops: dict[str, Sop], agent_of: Callable[[str], FlowExecutor | None], brain: Brain,
                 commerce: Commerce | None = None, answers: AnswerReader | None = None) -> None:
        self.sops = sops
        self.agent_of = agent_of
        self.brain = brain
        self.answers = answers or AnswerReader(brain, {})  # the values a message gives each SOP's slots
        self.commerce = commerce  # a store's items: the attribute words customers use ("a wireless one")
        self._subjects = subjects(list(sops.values()))
        self._title_words = {s.id: {T.stem(w) for w in T.words(s.title) if len(w) > 2 and w not in T.STOPWORDS}
                             for s in sops.values()}
        self._kin = {sid: kin_words(sid, self._title_words) for sid in self._title_words}

    def clear_answer(self, goal: Goal | None, text: str) -> bool:
        """A short reply that is plainly an answer to the pending ask needs no intent embedding: at most
        four words, or at most eight with no question, request, cancel or correction words in them
        ("Lenovo Legion, freezes when gaming.")."""
        n = len(T.words(text))
        if n > 8:
            return False
        if n > 4 and any(T.is_question(said) or T.is_request(said) or T.is_cancel(said)
                         or T.CORRECTION.search(said) or T.is_go_back(said) or T.wants_it_now(said)
                         for said in (text, self.brain.correct(text))):  # "sure, i wuold like to book this cabin"
            return False
        return self.answers_pending(goal, text)

    def answers_pending(self, goal: Goal | None, text: str) -> bool:
        """Whether a message is a well-formed answer to the pending ask (typed slots only)."""
        if goal is None or not goal.pending:
            return False
        sop = self.sops.get(goal.type)
        agent = self.agent_of(goal.type)
        if sop is None or agent is None:
            return False
        values = self.answers.answer_values(goal, sop, text, typed_only=True)
        if T.is_question(text):  # "what's the weather in Pittsburgh?" still names one of the listed answers
            types = agent.types(sop)
            values = {k: v for k, v in values.items() if k in types and types[k].kind == "option"}
        return bool(values)

    def about_pending(self, goal: Goal, text: str) -> bool:
        """Whether a message names what the pending question asks for ("my request id is 8532"):
        an attempt at an answer, even a wrong one, not a new request."""
        sop = self.sops.get(goal.type)
        node = sop.node(goal.pending) if sop else None
        if sop is None or node is None:
            return False
        said = set(T.words(text)) | set(T.words(self.brain.correct(text)))  # "my reqeust id"
        if names_asked(node, said):  # "my request id is 8532", "where do I find my order number?"
            return True
        # "I need to correct my order number": going back to a value this goal already holds
        if not corrects(text):
            return False
        held = {k for k, v in goal.slots.items() if v not in (None, "")}
        return any(names_asked(n, said) for n in sop.nodes.values() if {p.name for p in n.fills} & held)

    def corrects_goal(self, goal: Goal, text: str) -> bool:
        """A correction or a go-back about this goal's questions ("wrong product category, let me fix
        it"): whatever request words it has, it is about this goal."""
        return corrects(text) and self.about_pending(goal, text)

    def request_part(self, active: Goal, text: str, sop_id: str) -> str | None:
        """The part of a message that asks for ``sop_id`` by name and is not an answer to the pending
        question ("2pm is good. Also, can you tell me the weather?" -> its second sentence)."""
        for clause in T.clauses(text, min_tokens=1) or [text]:
            # "yes, book that cabin for me" to "look for another cabin?": the request after the yes
            for part in dict.fromkeys((clause, T.YES.sub("", clause, count=1).lstrip(" ,.!"))):
                if not part or not (T.is_question(part) or T.is_request(self.brain.correct(part))) \
                        or self.named_sops(T.main_clause(part), near=active.type) != {sop_id}:
                    continue
                if active.pending and (self.answers_pending(active, part) or self.about_pending(active, part)):
                    continue
                return part
        return None

    def moves_on(self, p: Perception, goal: Goal) -> bool:
        """Whether a message asks for something new rather than reacting to what was just said: a
        question, a request, or words that point to another SOP."""
        other = p.intents[0][0] != goal.type and p.intents[0][1] >= LOW_INTENT if p.intents else False
        return p.question or T.is_request(p.text) or other or bool(self.named_sops(p.text) - {goal.type})

    def clear_winner(self, p: Perception, active: Goal | None, notes: list[str], *, just_finished: bool = False,
                     kb_knows: Callable[[], bool] = lambda: False) -> tuple[str, float] | None:
        """With no goal active, an SOP a message plainly points to though it scores under the threshold
        ("there is a charge on my card I never made" for a dispute): at least LOW_INTENT and CLEAR_MARGIN
        above every other SOP, or a request naming what only that SOP deals with ("can you book Tamarind
        for 9", "how much is in my savings?") from NAMED_INTENT on. Small talk and reactions to a result just given
        never count (``just_finished``: a goal ended last turn). While a goal is active the threshold
        stands (see :meth:`asked_by_name`)."""
        if active is not None or not p.intents or p.greeting or only_social(p) or len(T.tokens(p.text)) < 2:
            return None
        named = self.named_sops(p.text)
        if len(named) > 1:  # "check my account to see if I can afford dinner": the request, not its purpose
            named = self.named_sops(T.main_clause(p.text)) or named
        sop_id, score = p.intents[0]
        if len(named) == 1 and (p.question or T.is_request(p.text) or sop_id in named):
            sop_id = next(iter(named))
            score = p.score(sop_id)
            if score < NAMED_INTENT or (p.question and not T.is_request(p.text) and kb_knows()):
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
        if active is None or not p.intents or self.corrects_goal(active, p.text):
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
            sibling = bool(self._kin.get(active.type, {}).get(sop_id, set()) & {T.stem(w) for w in T.tokens(part)})
            if score < LOW_INTENT and not sibling:
                continue
            if lead is not None and lead - score >= CLEAR_MARGIN and not sibling \
                    and sop_id not in self.named_sops(part, values=False):
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
        if sop_id == active.type or not clear_lead(p) or self.about_pending(active, p.text):
            return None
        sop, agent = self.sops.get(active.type), self.agent_of(active.type)
        if sop is None or agent is None or self.answers.answer_values(active, sop, p.text):
            return None  # an answer to the pending question first
        notes.append(f"{sop_id} scores {score:.2f}, under the threshold, but plainly asked for and "
                                 f"the message does not answer the pending question")
        return sop_id, score

    def listed_values(self, sop: Sop, text: str) -> dict[str, str]:
        """The values a message names for the SOP's questions that list their answers."""
        agent = self.agent_of(sop.id)
        types = agent.types(sop) if agent is not None else {}
        found = {name: find_option(text, st.vocab) for name, st in types.items() if st.kind == "option"}
        return {k: v for k, v in found.items() if v}

    def topic_sops(self, text: str) -> set[str]:
        """SOPs whose subject the message names ("my balance", "a trail report", "book a canoe")."""
        said = {T.stem(w) for w in T.tokens(text) + T.tokens(self.brain.correct(text))}
        return {sid for sid, words in self._subjects.items() if words & said}

    def named_sops(self, text: str, near: str = "", *, values: bool = True) -> set[str]:
        """SOPs one of whose questions lists a value the message names ("a table at Lucca"), or whose
        subject it names. ``near``: the SOP the conversation is in; an SOP sharing a title word with it
        is also named by its own other title words, and when several are named those kin to it are
        meant ("reserve the one you found" while searching cabins: the cabin booking, not the canoe booking). A
        title word of ``near`` that the other SOPs named lack names ``near`` too, so a value another SOP
        lists does not take a message about ``near`` away from it. ``values=False``: by words only, not
        by the values the SOPs' questions list."""
        named = self.topic_sops(text)
        if values:  # values several SOPs list ("Friday"): the SOP given the most ("the Summit Trail on Friday")
            given = {sop.id: set(map(str, found.values())) for sop in self.sops.values()
                     if (found := self.listed_values(sop, text))}
            most = [sid for sid, vals in given.items() if all(vals > v for k, v in given.items() if k != sid)]
            named |= set(most) if len(most) == 1 else set(given)
        kin = self._kin.get(near)
        if not kin:
            return named
        said = {T.stem(w) for w in T.tokens(text)}
        named |= {sid for sid, own in kin.items() if own & said}
        near_named = named & set(kin)
        named = near_named if len(named) > 1 and near_named else named
        own = self._title_words.get(near, set())
        others = named - {near}  # "book the room at the Old Town Inn" while booking: still this SOP
        if others and all((own - self._title_words.get(k, set())) & said for k in others):
            named.add(near)
        return named

    def values_name(self, p: Perception, active: Goal | None, notes: list[str], *, finished: str = "",
                    kb_knows: Callable[[], bool] = lambda: False) -> tuple[str, float] | None:
        """A message that gives listed values only one SOP asks for ("we'd arrive on the 4th and leave
        on the 9th" while searching cabins: the booking's days; "and on Saturday?" after a forecast), and
        nothing the active SOP can use: that SOP is what the customer is after. A question counts only
        when the knowledge base has no answer to it (``kb_knows``; then it is a doubt to answer). ``finished``:
        the SOP of the goal completed last."""
        if active is not None and (active.type not in self.sops or self.answers_pending(active, p.text)
                                   or self.listed_values(self.sops[active.type], p.text)):
            return None
        current = active.type if active is not None else ""
        given = {sop.id: set(map(str, found.values())) for sop in self.sops.values()
                 if sop.id != current and (found := self.listed_values(sop, p.text))}
        # values several SOPs list ("Friday"): the SOP given the most of them ("the Falls Path on Friday"),
        # else the one finished last ("and on Saturday?" after its report)
        named = [sid for sid, vals in given.items() if all(vals > v for k, v in given.items() if k != sid)]
        if not named and finished in given:
            named = [finished]
        if len(named) != 1 or (p.question and kb_knows()):
            return None
        if active is not None and (active.type in self.named_sops(p.text, near=active.type)
                                   or p.score(active.type) - p.score(named[0]) >= CLEAR_MARGIN):
            return None  # "book the canoe for the Summit Trail" while booking a canoe: about this SOP
        if active is None and finished == named[0] and (p.question or T.is_request(p.text)):
            return None  # "any free slot at noon instead?" after a booking failed: a follow-up (see _reopen)
        notes.append(f"{named[0]}: the message gives values only it asks for")
        return named[0], p.score(named[0])

    def go_back_target(self, goal: Goal, text: str) -> Node | None:
        """The earlier question of ``goal`` a go-back means ("wait, the arrival day was wrong"): see
        :func:`core.understanding.go_back.go_back_target`."""
        sop = self.sops.get(goal.type)
        return go_back_target(goal, sop, text) if sop is not None else None

    def read_reply(self, goal: Goal, p: Perception) -> ReplyReading:
        """A message to the running goal, read before anything changes: a go-back (to which question), a
        question the customer cannot answer, a side question, slots they say they cannot give, the
        answer to the pending question, and values for other slots (corrections of filled ones among
        them: "I got it wrong, the address is 14 Elm St" while a phone is asked)."""
        sop, agent = self.sops.get(goal.type), self.agent_of(goal.type)
        if sop is None or agent is None:
            return ReplyReading()
        text = p.text
        said = what_stands(text)  # "I meant 80 euros, not 95": not the 95
        changes = self.answers.extract_volunteered(goal, sop, said, opening=False)
        # new values for slots already filled ("I got it wrong, the address is ..."): a correction
        fixes = {k: v for k, v in changes.items() if goal.slots.get(k) not in (None, "") and goal.slots.get(k) != v}
        if not fixes and corrects(text) and said != text:  # "make that the 14th, not the 12th": the slot
            fixes = self.answers.replaced_value(goal, sop, said, text)  # holding what is ruled out takes the new value
        if fixes and corrects(text) and confirms(agent, sop, sop.node(goal.pending)):
            # "oops, make that $150, not $200" to "shall I charge $200?": the value changes, the confirmation waits
            return ReplyReading(corrections=fixes, fixes=fixes)
        answers = self.answers_pending(goal, text)
        choice = asks_choice(goal, sop, agent)
        if goal.pending and p.go_back and not fixes and (choice or not answers):
            target = self.go_back_target(goal, text)
            if target is not None:
                return ReplyReading(go_back=target)
        default = self.answers.default_answer(goal, sop, text) if not answers else None
        if default is not None:  # "no idea, whatever is normal" to a question that names its default
            return ReplyReading(answer=default)
        unable = bool(goal.pending) and T.is_unable(text) and not answers
        if goal.pending and p.question and not answers and not (choice and choice_words(text)) \
                and not gives_values(goal, sop, agent, changes):
            return ReplyReading(unable=unable, doubt=True)
        pending = sop.node(goal.pending)
        pending_slots = {f.name for f in pending.fills} if pending else set()
        other = {k: v for k, v in changes.items() if k not in pending_slots and goal.slots.get(k) != v}
        # "My member number is 4410273" while a free-text question waits: it answers another question
        # ... unless its other values are labelled and words of its own answer the question ("fine, kwame88 then.
        # my email is ...")
        own_words = bool(self.answers.labelled(sop, text)[0]) and bool(self.answers.answer_values(goal, sop, text))
        elsewhere = bool(other) and free_text(agent, sop, pending) and explained_by(text, other) and not own_words
        # "sorry, wrong card, it's 2123...": a correction of a filled slot is not the answer to a text question
        elsewhere = elsewhere or bool(fixes) and corrects(text) and free_text(agent, sop, pending)
        answer = [] if elsewhere else list(self.answers.answer_values(goal, sop, text).values())  # one slot, not two
        corrections = {k: v for k, v in other.items() if not part_of(v, answer)}
        if answer and describing(agent, sop, pending):  # "it stopped working since yesterday" to "what is wrong?":
            types = agent.types(sop)  # a day or an amount inside a description is part of it, not an answer
            corrections = {k: v for k, v in corrections.items() if k in fixes or types[k].kind in IDENTIFYING_KINDS}
        if goal.pending and not answer and not corrections and corrects(text):  # "sorry, I meant Spain"
            fix = self.answers.corrected_text(goal, sop, text)
            if fix is not None:
                corrections, fixes = dict([fix]), dict([fix])
        # "I got it wrong, the address is 14 Elm St" while a phone is asked: a correction, not an answer
        correcting = bool(set(corrections) & set(fixes)) and not answer
        return ReplyReading(unable=unable, unavailable=tuple(self.answers.unavailable_named(goal, sop, text, changes)),
                            answer=None if elsewhere or correcting else self.answers.read_answer(goal, sop, text),
                            corrections=corrections, fixes=fixes)

    def values_for(self, goal: Goal, text: str, *, opening: bool) -> tuple[dict[str, Any], list[str]]:
        """The values a message gives ``goal``'s slots unasked (a budget up front, a brand, an order id;
        ``opening``: the message that starts the goal, whose words may describe the problem), and the
        slots it says the customer cannot give."""
        sop, agent = self.sops.get(goal.type), self.agent_of(goal.type)
        if sop is None or agent is None:
            return {}, []
        found = self.answers.extract_volunteered(goal, sop, text, opening=opening)
        unavailable = self.answers.unavailable_named(goal, sop, text, found)
        if self.commerce is not None:
            found.update(self.commerce.features_said(text, self.answers.slot_words(sop)))
        return found, unavailable

    def kept_for_later(self, active: Goal, text: str) -> dict[str, dict[str, Any]]:
        """Per other SOP, the typed values (listed options, dates, numbers, ids) a message gives for
        questions only that SOP asks: what the session keeps for the goal that will ask for them."""
        if active.type not in self.sops:
            return {}
        own = set(self.sops[active.type].slot_names())
        out: dict[str, dict[str, Any]] = {}
        for sop in self.sops.values():
            agent = self.agent_of(sop.id)
            if sop.id == active.type or agent is None:
                continue
            types = agent.types(sop)
            found = self.answers.extract_volunteered(Goal(id="", type=sop.id), sop, text, opening=False)
            kept = {k: v for k, v in found.items() if k not in own and k in types
                    and types[k].kind not in NOT_KEPT}
            if kept:
                out[sop.id] = kept
        return out

    def lead(self, c: ReadContext) -> Command | None:
        """The command that comes before any other when the message holds one (ARCHITECTURE.md §3a): a
        cancellation (not when the message answers the pending question: "Yes, please cancel it" to
        "Shall I cancel it?" drops it), a goodbye while a goal runs, or a request for a person (unless an
        SOP written for that scores as an exact match)."""
        p, active = c.p, c.active
        farewell = active is not None and T.is_farewell(p.text)
        person = T.asks_for_person(p.text)
        if not ((p.cancel and active is not None) or farewell or person):
            return None
        answers = active is not None and self.answers_pending(active, p.text)  # read only when it matters
        if p.cancel and active is not None:
            cancel = CancelGoal(evidence=T.cancel_phrase(p.text) or p.text, goal=active.type)
            if not answers:
                return cancel
            c.reading.drop(cancel, "the message answers the pending question")
        if farewell and not answers:
            return SmallTalk(evidence=p.text, act="goodbye")
        if person and not answers:
            best = p.best_intent(STRONG_INTENT)
            if best is None or (active is not None and best[0] == active.type):  # an SOP written for it wins
                return HumanHandoff(evidence=person)
        return None

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
        if by_name is None and best[1] < p.score(active.type) + INTENT_MARGIN and (
                self.request_part(active, text, best[0]) is None or self.corrects_goal(active, text)):
            return None  # close to the active SOP, and not asked for by name ("wrong category, let me fix it")
        if active.pending and best[1] < STRONG_INTENT and not T.wants_it_now(text) and (
                self.answers_pending(active, text) or self.about_pending(active, text)) \
                and self.request_part(active, text, best[0]) is None:
            c.reading.drop(StartGoal(evidence=text, sop=best[0], score=round(best[1], 3)),
                           "the message answers the pending question")
            return None
        return best

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
        given = self.values_for(c.prepared(sop), p.text, opening=True)[0] if agent is not None else {}
        if any(k in types and types[k].kind not in ("text", "boolean") for k in given):
            return False  # "where is that repair? RT-9999": a question carrying the SOP's own values asks for it
        similarity = c.kb_similarity()
        if similarity < best[1]:
            return False
        c.notes.append(f"{best[0]} scores {best[1]:.2f}; the knowledge base's best passage {similarity:.2f}: "
                       "a question for the knowledge base")
        return True

    def several_requests(self, text: str, target: str) -> tuple[str, tuple[str, ...]]:
        """A message asking for two things ("I'd like a canoe on Sunday. But first, how are the trails?"): the SOP
        to start now (the one wanted first, else ``target``) and the others asked for, in order."""
        asked: list[str] = []
        first = None
        for part in T.clauses(T.main_clause(text)):  # not a subject named as the purpose or time
            if not (T.is_question(part) or T.is_request(part) or T.wants_it_now(part)):
                continue
            named = self.named_sops(part)
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
            if sop_id in self.named_sops(T.main_clause(rest)) or (p.intents[0][0] == sop_id and clear_lead(p)):
                return self.sops[sop_id]
        return None

    # ------------------------------------------------------------------ the whole message, as commands
    def read(self, c: ReadContext) -> list[Command]:
        """The rules' reading of a message: its commands, in the order of precedence (ARCHITECTURE.md §3a,
        docs/turn.md). A command the context rules out is written to ``c.reading`` as dropped; a goal
        left with nothing but its "anything else?" that the message moves past is named in
        ``c.reading.closes`` and the message is read as one to the goal below it."""
        p, active = c.p, c.active
        lead = self.lead(c)
        if isinstance(lead, CancelGoal) and active is not None:
            then = self.asked_after_cancel(p, active, lead.evidence)
            if then is None:
                return [lead]
            # "forget it then. How are the trails on Friday?": the new request next, with what it gives
            after = replace(c, active=c.below, below=None)
            return [lead, StartGoal(evidence=p.text, sop=then.id, score=round(p.score(then.id), 3)),
                    *self._values_for_start(after, then)]
        if lead is not None:
            return [lead]
        if active is None and T.asks_when(p.text):
            searched = self.search_follow_up(c)
            if searched is not None:
                return [searched]
        wanted = self.new_intent(c)
        if wanted is not None and active is not None and T.replaces(p.text) \
                and (c.below is None or c.below.type != wanted[0]) and not self.answers_pending(active, p.text):
            # "actually forget the return, I need to change my address instead": the new request replaces it
            after = replace(c, active=c.below, below=None)
            then = self.sops[wanted[0]]
            return [CancelGoal(evidence=p.text, goal=active.type),
                    StartGoal(evidence=p.text, sop=then.id, score=round(wanted[1], 3)),
                    *self._values_for_start(after, then)]
        if wanted is not None:
            return self._start(c, self.sops[wanted[0]])
        if active is None:
            return self.no_goal(c)
        if not active.pending and self.moves_on(p, active) and self.only_offers_left(active):
            c.notes.append(f"{active.type} done: the customer asks for more before it could offer it")
            c.reading.closes = active.type
            return self.read(replace(c, active=c.below, below=None, last=active, just_finished=True))
        return self.reply(c, active)

    def _start(self, c: ReadContext, target: Sop) -> list[Command]:
        """A request for ``target``: the start (with the further SOPs asked for in the same message, when
        no goal runs), an answer to the pending question the message also gives ("2pm is good. Also, what's
        the weather?"), and the values it gives the new goal."""
        p, active = c.p, c.active
        deferred: tuple[str, ...] = ()
        if active is None:
            now, deferred = self.several_requests(p.text, target.id)
            target = self.sops[now]
        pointer = T.REFERS_BACK.search(p.text)
        out: list[Command] = []
        kept = self.kept_answer(active, p.text) if active is not None else None
        if kept is not None:
            out.append(kept)
        out.append(StartGoal(evidence=p.text, sop=target.id, score=round(p.score(target.id), 3), deferred=deferred,
                             points_back=pointer.group(0).strip() if pointer else ""))
        return out + self._values_for_start(c, target)

    def _values_for_start(self, c: ReadContext, sop: Sop) -> list[Command]:
        """The values a message gives an SOP it starts or resumes (and the slots it says it cannot give)."""
        goal = c.prepared(sop)
        found, unavailable = self.values_for(goal, c.p.text, opening=not goal.id)
        if not (found or unavailable):
            return []
        return [SetSlots(evidence=c.p.text, values=found, words=value_words(c.p.text, found), sop=sop.id,
                         unavailable=tuple(unavailable))]

    def kept_answer(self, goal: Goal, text: str, *, free: bool = False) -> Answer | None:
        """A message that answers the pending question and asks for something else: its answer (typed
        values only, not a yes or no, complete), kept so the question is not asked again when the goal
        comes back. ``free``: a free-text answer counts too (its statement beside a side question: "the
        brakes squeak; how long does a service take?")."""
        sop, agent = self.sops.get(goal.type), self.agent_of(goal.type)
        node = sop.node(goal.pending) if sop is not None else None
        if sop is None or agent is None or node is None:
            return None
        types = agent.types(sop)
        # from the parts that ask for nothing ("2pm is good. Also, what's the weather?": its first part), and
        # never a yes or no: "sure, please book this one" agrees to the request, not to "search for another?";
        # a confirmation is not assumed from a message whose business is another request (asked again later)
        head, tail = T.statement_and_question(text) if free else ("", text)
        parts = [head, tail] if head else T.clauses(text, min_tokens=1) or [text]
        said = " ".join(part for part in parts if not (T.is_question(part) or T.is_request(self.brain.correct(part))
                                                        or T.wants_it_now(part)))
        if free and said and said != text and all(p.name in types and types[p.name].kind == "text"
                                                  for p in node.fills if not p.optional) and node.fills:
            values = {p.name: said.strip(" ,;.") for p in node.fills if not p.optional}
        else:
            values = {k: v for k, v in self.answers.answer_values(goal, sop, said, typed_only=True).items()
                      if k in types and types[k].kind not in ("text", "boolean")} if said else {}
        merged = {**goal.slots, **values}
        if not values or any(merged.get(p.name) in (None, "") for p in node.fills if not p.optional):
            return None
        return Answer(evidence=text, question=node.label, value=one_value(values),
                      reading=AnswerReading(node.id, values, True, heard=values))

    def reply(self, c: ReadContext, goal: Goal) -> list[Command]:
        """A message to the running goal (:meth:`read_reply`) as commands: values kept for SOPs that will ask
        later, then a go-back, a question the customer cannot answer, a side question, or slots they
        cannot give, the answer, corrections and values for later questions (and, when that is all the
        message is, its greeting, thanks or frustration)."""
        p, text = c.p, c.p.text
        sop, agent = self.sops.get(goal.type), self.agent_of(goal.type)
        if sop is None or agent is None:
            return []
        said = what_stands(text)  # what a correction rules out is kept for nobody
        out: list[Command] = [SetSlots(evidence=text, values=kept, words=value_words(text, kept), sop=sop_id)
                              for sop_id, kept in self.kept_for_later(goal, said).items()]
        r = self.read_reply(goal, p)
        fixed = list(r.fixes.values())  # "I meant 80 euros" corrects this goal: not a value for another SOP as well
        out = [c for c in out if not isinstance(c, SetSlots) or not any(v in fixed for v in c.values.values())]
        if r.go_back is not None:
            return [*out, GoBack(evidence=text, target=r.go_back.label)]
        if r.unable and agent.can_skip(goal, sop):
            return [*out, Skip(evidence=text, question=goal.pending or "")]
        if r.doubt:  # a side question; the pending question's answer beside it is taken first
            given = self.kept_answer(goal, text, free=True)
            return [*out, *([given] if given is not None else []), *self.doubt(c, goal)]
        if r.unavailable:
            out.append(SetSlots(evidence=text, unavailable=r.unavailable))
        if r.answer is not None:
            node = sop.nodes[r.answer.ask]
            out.append(Answer(evidence=text, question=node.label, value=one_value(r.answer.values), reading=r.answer))
        for k, v in r.corrections.items():  # a filled slot changed, or a later step's slot given early
            out.append(CorrectSlot(evidence=text, slot=k, value=v) if k in r.fixes
                       else SetSlots(evidence=text, values={k: v}, words=value_words(text, {k: v})))
        social = social_act(p)
        if social and not r.corrections and (r.answer is None or not r.answer.ok):
            out.append(SmallTalk(evidence=text, act=social))
        return out

    def doubt(self, c: ReadContext, goal: Goal | None) -> list[Command]:
        """A question asked instead of an answer: about the offered items (or a category or brand the store
        carries) when it is one, and as a knowledge-base query, 'it' read as what the pending question
        asks for."""
        p = c.p
        out: list[Command] = []
        question = self.commerce.read(goal, p.text) if self.commerce is not None and goal is not None else None
        if question is not None:
            out.append(FollowUp(evidence=p.text, about="items", question=question))
        return [*out, KnowledgeQuestion(evidence=p.text, query=self.doubt_query(p, goal))]

    def doubt_query(self, p: Perception, goal: Goal | None) -> str:
        """The message as a knowledge-base query, 'it' read as what the pending question asks for."""
        sop = self.sops.get(goal.type) if goal is not None else None
        pending = sop.node(goal.pending) if sop is not None and goal is not None and goal.pending else None
        return p.search_query or search_query(p.text, pending)

    def no_goal(self, c: ReadContext) -> list[Command]:
        """A message while no goal runs and none is asked for: frustration, a goodbye (or a "no, thanks" to
        "anything else?"), a follow-up to the request finished last, a greeting, thanks, a question for
        the knowledge base, a reaction to what was just done, or nothing the engine can act on."""
        p = c.p
        if T.is_hostile(p.text):
            return [SmallTalk(evidence=p.text, act="frustration")]
        if T.is_farewell(p.text) or (c.offered_more and (p.thanks or T.declines_more(p.text))):
            return [SmallTalk(evidence=p.text, act="goodbye")]
        again = self.reopen(c)
        if again is not None:
            return [again]
        if T.only_declines(p.text):  # "nah, I don't want the upgrade" while nothing runs
            return [SmallTalk(evidence=p.text, act="declined")]
        if p.greeting or T.GREETING.match(p.text):  # "Good evening, could you assist?": no request yet
            return [SmallTalk(evidence=p.text, act="greeting")]
        if p.thanks:
            return [SmallTalk(evidence=p.text, act="thanks")]
        if p.question and c.kb_tool:
            return [KnowledgeQuestion(evidence=p.text, query=self.doubt_query(p, None))]
        if not p.question and c.just_finished:  # a reaction to what we just did ("Good idea.")
            return [SmallTalk(evidence=p.text, act="reaction")]
        return [Unclear(evidence=p.text, why="asks for nothing the SOPs do")]

    def reopen(self, c: ReadContext) -> FollowUp | None:
        """A follow-up that changes what the goal finished last used ("and for Friday?", "what about
        Detroit?"): that SOP again with the change and everything else it knew."""
        p, last = c.p, c.last
        sop = self.sops.get(last.type) if last is not None else None
        agent = self.agent_of(last.type) if last is not None else None
        if last is None or sop is None or agent is None or p.greeting or p.thanks:
            return None
        if agent.changed_world(last, sop):  # a booking made is not made again because a message names a day
            return None
        said = self.answers.extract_volunteered(last, sop, p.text, opening=False)
        if not (p.question or T.is_request(p.text) or explained_by(p.text, said)):
            return None  # "well at least it's better in LA tomorrow": a comment, not a new request
        types = agent.types(sop)
        changed = sorted(k for k, v in said.items() if last.slots.get(k) != v and (
            last.slots.get(k) not in (None, "") or (k in types and types[k].kind not in ("text", "boolean"))))
        if not changed:
            return None
        return FollowUp(evidence=p.text, about="reopen", sop=sop.id, values=said)

    def search_follow_up(self, c: ReadContext) -> FollowUp | None:
        """"When is it going to clear up?" after a result: the SOP finished last, run again from its tool over
        the next days or times until a result answers (``FlowExecutor.start_search``, tried on a copy)."""
        last = c.last
        sop = self.sops.get(last.type) if last is not None else None
        agent = self.agent_of(last.type) if last is not None else None
        if last is None or sop is None or agent is None:
            return None
        said = self.answers.extract_volunteered(last, sop, c.p.text, opening=False)
        named = self.answers.named_values(sop, c.p.text)
        trial = Goal(id="", type=sop.id, slots={k: v for k, v in last.slots.items() if not k.startswith("_")})
        if agent.start_search(trial, sop, named, given=said) is None:
            return None
        return FollowUp(evidence=c.p.text, about="search", sop=sop.id, values=said, named=named)

    def only_offers_left(self, goal: Goal) -> bool:
        """Whether all a goal still has to do is offer more help ("Is there anything else?"): its steps run on
        a copy."""
        sop, agent = self.sops.get(goal.type), self.agent_of(goal.type)
        if sop is None or agent is None:
            return False
        return agent.only_offers_left(goal, sop)

    # ------------------------------------------------------------------ a model's reading, made whole
    def complete(self, commands: list[Command], c: ReadContext) -> list[Command]:
        """A model's checked commands, with what acting on them needs read the rules' way: the values of an
        answer (the model's own proposals among them), the question a go-back returns to, a side question's
        query (and whether it is about the offered items), the request a follow-up reopens; small talk or a
        follow-up while no goal runs is read as the rules read such a message."""
        p, active = c.p, c.active
        sop = self.sops.get(active.type) if active is not None else None
        agent = self.agent_of(active.type) if active is not None else None
        out: list[Command] = []
        done: set[str] = set()
        for cmd in commands:
            if isinstance(cmd, Answer) and active is not None and sop is not None and agent is not None:
                read = self.answers.read_answer(active, sop, p.text)
                out.append(replace(cmd, reading=read) if read is not None else cmd)
            elif isinstance(cmd, GoBack) and active is not None and sop is not None:
                node = next((n for n in sop.nodes.values() if n.asks and cmd.target in (n.id, n.label)), None) \
                    if cmd.target else None
                node = node or self.go_back_target(active, cmd.evidence or p.text)
                out.append(replace(cmd, target=node.label) if node is not None else replace(cmd, target=""))
            elif isinstance(cmd, KnowledgeQuestion | FollowUp) and active is not None and active.pending:
                if "doubt" not in done:
                    out += self.doubt(c, active)
                done.add("doubt")
            elif isinstance(cmd, KnowledgeQuestion) and (active is not None or c.kb_tool):
                out.append(replace(cmd, query=self.doubt_query(p, active)))
            elif isinstance(cmd, KnowledgeQuestion | FollowUp | SmallTalk | Unclear) and active is None:
                found = (self.search_follow_up(c) or self.reopen(c)) if isinstance(cmd, FollowUp) else None
                if found is not None:
                    out.append(found)
                elif "no_goal" not in done:
                    out += self.no_goal(c)
                done.add("no_goal")
            else:
                out.append(cmd)
        return out

