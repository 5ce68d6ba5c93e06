"""A message to the running goal (:class:`ReplyReader`): read whole before anything changes
(:class:`ReplyReading`: a go-back, a question the customer cannot answer, a side question, slots they cannot
give, the answer, corrections), then written as commands."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from core.language import text as T
from core.language.measures import without_quantities
from core.shared.models import Goal
from core.sop.graph import Node, Sop
from core.understanding.answers import AnswerReader, AnswerReading
from core.understanding.brains.base import Perception
from core.understanding.commands import (
    Answer,
    Command,
    CorrectSlot,
    GoBack,
    SetSlots,
    Skip,
    SmallTalk,
    value_words,
)
from core.understanding.executor import FlowExecutor
from core.understanding.go_back import go_back_target
from core.understanding.reading.context import ReadContext
from core.understanding.reading.pending import PendingReader
from core.understanding.reading.side_questions import SideQuestions
from core.understanding.reading.volunteered import VolunteeredValues
from core.understanding.signals import (
    asks_choice,
    choice_words,
    confirms,
    corrects,
    describing,
    explained_by,
    free_text,
    gives_values,
    one_value,
    part_of,
    social_act,
    what_stands,
)
from core.workspace.slots import IDENTIFYING_KINDS


@dataclass(frozen=True)
class ReplyReading:
    """The rules' reading of a message to the running goal (:meth:`ReplyReader.read_reply`)."""

    go_back: Node | None = None  # the earlier question the customer wants to redo
    unable: bool = False  # the customer cannot answer the pending question
    doubt: bool = False  # a side question, to answer from the knowledge base
    unavailable: tuple[str, ...] = ()  # slots the customer says they cannot give
    answer: AnswerReading | None = None  # the reply to the pending question, when it is one
    corrections: dict[str, Any] = field(default_factory=dict)  # values for other slots of the goal
    fixes: dict[str, Any] = field(default_factory=dict)  # ... those that replace a filled value


@dataclass
class ReplyReader:
    """Messages to a running goal of one workspace's SOPs, read with what answers the pending question
    (``pending``), the values kept for other SOPs (``given``) and side questions (``side``)."""

    sops: dict[str, Sop]
    agent_of: Callable[[str], FlowExecutor | None]
    answers: AnswerReader
    pending: PendingReader
    given: VolunteeredValues
    side: SideQuestions

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
                              for sop_id, kept in self.given.kept_for_later(goal, said).items()]
        r = self.read_reply(goal, p)
        fixed = list(r.fixes.values())  # "I meant 80 euros" corrects this goal: not a value for another SOP as well
        out = [c for c in out if not isinstance(c, SetSlots) or not any(v in fixed for v in c.values.values())]
        if r.answer is not None and r.answer.ok:  # "April 2nd" answering this goal's question is not kept for another
            used = list(r.answer.values.values())
            out = [c if not isinstance(c, SetSlots) else replace(c, values={k: v for k, v in c.values.items()
                                                                            if v not in used}) for c in out]
            out = [c for c in out if not isinstance(c, SetSlots) or c.values]
        if r.go_back is not None:
            return [*out, GoBack(evidence=text, target=r.go_back.label)]
        if r.unable and agent.can_skip(goal, sop):
            return [*out, Skip(evidence=text, question=goal.pending or "")]
        if r.doubt:  # a side question; the pending question's answer beside it is taken first
            given = self.pending.kept_answer(goal, text, free=True)
            return [*out, *([given] if given is not None else []), *self.side.doubt(c, goal)]
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
        shop = self.given.commerce
        narrows: dict[str, Any] = {}
        if shop is not None and shop.searches(sop):  # "a red one", "for 6 diners" narrow the search
            measured, numbers = shop.measures_said(said, goal)
            changes = shop.not_budget(changes, numbers)
            wishes = shop.features_said(without_quantities(said), self.answers.slot_words(sop), goal)
            changes.update({**measured, **wishes})
            changes.update(shop.words_for_new_category(changes, said, sop, goal))
            # "in size L?", "one in red?" ask for other items; "is it waterproof?" asks about the one shown
            narrows = {**measured, **wishes} if shop.narrows(said) else measured
        # new values for slots already filled ("I got it wrong, the address is ..."): a correction
        fixes = {k: v for k, v in changes.items() if goal.slots.get(k) not in (None, "") and goal.slots.get(k) != v}
        if not fixes and corrects(text) and said != text:  # "make that the 14th, not the 12th": the slot
            fixes = self.answers.replaced_value(goal, sop, said, text)  # holding what is ruled out takes the new value
        if fixes and corrects(text) and confirms(agent, sop, sop.node(goal.pending)):
            # "oops, make that $150, not $200" to "shall I charge $200?": the value changes, the confirmation waits
            return ReplyReading(corrections=fixes, fixes=fixes)
        if shop is not None and goal.pending and p.question and shop.asks_about_offered(goal, text):
            return ReplyReading(doubt=True)  # "how heavy is the second one?": a question on it, no pick
        answers = self.pending.answers_pending(goal, text)
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
                and not gives_values(goal, sop, agent, changes) and not narrows:  # "in size L?" narrows
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
        if not elsewhere and not fixes and goal.pending and corrects(text) and free_text(agent, sop, pending):
            fix = self.answers.corrected_text(goal, sop, text)  # "sorry, I meant the lamp, not the kettle" to a
            if fix is not None and _names_value(text, goal.slots.get(fix[0])):  # text question: the answer
                corrections, fixes = dict([fix]), dict([fix])  # given last changes, naming what it replaces
                return ReplyReading(unavailable=tuple(self.answers.unavailable_named(goal, sop, text, changes)),
                                    corrections=corrections, fixes=fixes)
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

    def go_back_target(self, goal: Goal, text: str) -> Node | None:
        """The earlier question of ``goal`` a go-back means ("wait, the arrival day was wrong"): see
        :func:`core.understanding.go_back.go_back_target`."""
        sop = self.sops.get(goal.type)
        return go_back_target(goal, sop, text) if sop is not None else None


def _names_value(text: str, value: object) -> bool:
    """Whether a message names a value a slot holds, word for word ("not the pet bed" names "the pet bed")."""
    said = str(value or "").strip().lower()
    return bool(said) and f" {said} " in f" {' '.join(T.words(text.lower()))} "
