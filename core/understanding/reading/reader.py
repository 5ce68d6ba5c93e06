"""The rule reader: what a customer message says, read against the workspace's SOPs and the goal in hand.

The orchestrator asks it, before acting, what a message does: whether it answers the pending question
(a value of the asked type, a yes/no, a choice among offered options), names what that question asks
for, corrects a value the goal holds, or asks for another SOP (by its subject, by a value only that SOP
lists, or by a clear lead in the intent scores). Every method here reads; none changes a session, runs a
tool or writes a reply. Language knowledge comes from the language files (core/language/lexicons) through
:mod:`core.language.text`; what each SOP is about comes from its title, short triggers and listed values, never
from a store's or an evaluation's names. Thresholds: ARCHITECTURE.md §3a and docs/turn.md.

:class:`RuleReader` puts the message's commands in their order of precedence; each judgement is made by a
reader of its own in this package: the lead command (:mod:`.lead`), the SOP asked for (:mod:`.intents`, with
:mod:`.naming`), the pending question (:mod:`.pending`), the values given unasked (:mod:`.volunteered`), a reply
to the running goal (:mod:`.replies`), side questions (:mod:`.side_questions`), messages while no goal runs
(:mod:`.follow_ups`) and a model's commands made whole (:mod:`.completion`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from core.language import text as T
from core.shared.models import Goal
from core.sop.graph import Sop
from core.understanding.answers import AnswerReader
from core.understanding.brains.base import Brain, Perception
from core.understanding.commands import CancelGoal, Clarify, Command, SetSlots, StartGoal, value_words
from core.understanding.commerce import Commerce
from core.understanding.executor import FlowExecutor
from core.understanding.reading.completion import ModelCompletion
from core.understanding.reading.considered import considered
from core.understanding.reading.context import ReadContext
from core.understanding.reading.follow_ups import FollowUps
from core.understanding.reading.intents import IntentReader
from core.understanding.reading.lead import lead_command
from core.understanding.reading.naming import SopNames
from core.understanding.reading.pending import PendingReader
from core.understanding.reading.replies import ReplyReader
from core.understanding.reading.side_questions import SideQuestions
from core.understanding.reading.volunteered import VolunteeredValues


class RuleReader:
    """The rules' reading of messages for one workspace: its SOPs, the agents that type their slots, and
    the brain's spelling correction."""

    def __init__(self, sops: dict[str, Sop], agent_of: Callable[[str], FlowExecutor | None], brain: Brain,
                 commerce: Commerce | None = None, answers: AnswerReader | None = None) -> None:
        self.sops = sops
        self.agent_of = agent_of
        self.answers = answers or AnswerReader(brain, {})  # the values a message gives each SOP's slots
        self.names = SopNames(sops, agent_of, brain)
        self.pending = PendingReader(sops, agent_of, brain, self.answers)
        self.given = VolunteeredValues(sops, agent_of, self.answers, commerce)
        self.intents = IntentReader(sops, agent_of, brain, self.answers, self.names, self.pending, self.given)
        self.side = SideQuestions(sops, commerce)
        self.replies = ReplyReader(sops, agent_of, self.answers, self.pending, self.given, self.side)
        self.follow_ups = FollowUps(sops, agent_of, self.answers, self.side)
        self.completion = ModelCompletion(sops, agent_of, self.answers, self.replies, self.side, self.follow_ups)

    def clear_answer(self, goal: Goal | None, text: str) -> bool:
        """A short reply that is plainly an answer to the pending ask (:meth:`PendingReader.clear_answer`)."""
        return self.pending.clear_answer(goal, text)

    def doubt_query(self, p: Perception, goal: Goal | None) -> str:
        """The message as a knowledge-base query (:meth:`SideQuestions.doubt_query`)."""
        return self.side.doubt_query(p, goal)

    def complete(self, commands: list[Command], c: ReadContext) -> list[Command]:
        """A model's checked commands made whole (:meth:`ModelCompletion.complete`)."""
        return self.completion.complete(commands, c)

    # ------------------------------------------------------------------ the whole message, as commands
    def read_weighed(self, c: ReadContext) -> list[Command]:
        """:meth:`read`, with the readings it weighed written to ``c.reading.considered`` (their scores and
        why the chosen ones won: :mod:`.considered`)."""
        commands = self.read(c)
        c.reading.considered = considered(c, commands)
        return commands

    def read(self, c: ReadContext) -> list[Command]:
        """The rules' reading of a message: its commands, in the order of precedence (ARCHITECTURE.md §3a,
        docs/turn.md). A command the context rules out is written to ``c.reading`` as dropped; a goal
        left with nothing but its "anything else?" that the message moves past is named in
        ``c.reading.closes`` and the message is read as one to the goal below it."""
        p, active = c.p, c.active
        lead = lead_command(c, self.pending)
        if isinstance(lead, CancelGoal) and active is not None:
            then = self.intents.asked_after_cancel(p, active, lead.evidence)
            if then is None:
                return [lead]
            # "forget it then. How are the trails on Friday?": the new request next, with what it gives
            after = replace(c, active=c.below, below=None)
            return [lead, StartGoal(evidence=p.text, sop=then.id, score=round(p.score(then.id), 3)),
                    *self._values_for_start(after, then)]
        if lead is not None:
            return [lead]
        if active is None and T.asks_when(p.text):
            searched = self.follow_ups.search_follow_up(c)
            if searched is not None:
                return [searched]
        close = self.intents.close_call(c)
        if close is not None:  # "two SOPs alike": ask which was meant, naming both
            c.notes.append(f"{close[0]} and {close[1]} score alike: asking which was meant")
            return [Clarify(evidence=p.text, options=close)]
        wanted = self.intents.new_intent(c)
        if wanted is not None and active is not None and T.replaces(p.text) \
                and (c.below is None or c.below.type != wanted[0]) and not self.pending.answers_pending(active, p.text):
            # "actually forget the return, I need to change my address instead": the new request replaces it
            after = replace(c, active=c.below, below=None)
            then = self.sops[wanted[0]]
            return [CancelGoal(evidence=p.text, goal=active.type),
                    StartGoal(evidence=p.text, sop=then.id, score=round(wanted[1], 3)),
                    *self._values_for_start(after, then)]
        if wanted is not None:
            return self._start(c, self.sops[wanted[0]])
        if active is None:
            return self.follow_ups.no_goal(c)
        if not active.pending and self.intents.moves_on(p, active) and self.only_offers_left(active):
            c.notes.append(f"{active.type} done: the customer asks for more before it could offer it")
            c.reading.closes = active.type
            return self.read(replace(c, active=c.below, below=None, last=active, just_finished=True))
        return self.replies.reply(c, active)

    def _start(self, c: ReadContext, target: Sop) -> list[Command]:
        """A request for ``target``: the start (with the further SOPs asked for in the same message, when
        no goal runs), an answer to the pending question the message also gives ("2pm is good. Also, what's
        the weather?"), and the values it gives the new goal."""
        p, active = c.p, c.active
        deferred: tuple[str, ...] = ()
        if active is None:
            now, deferred = self.intents.several_requests(p.text, target.id)
            target = self.sops[now]
        pointer = T.REFERS_BACK.search(p.text)
        out: list[Command] = []
        kept = self.pending.kept_answer(active, p.text) if active is not None else None
        if kept is not None:
            out.append(kept)
        out.append(StartGoal(evidence=p.text, sop=target.id, score=round(p.score(target.id), 3), deferred=deferred,
                             points_back=pointer.group(0).strip() if pointer else ""))
        return out + self._values_for_start(c, target)

    def _values_for_start(self, c: ReadContext, sop: Sop) -> list[Command]:
        """The values a message gives an SOP it starts or resumes (and the slots it says it cannot give)."""
        goal = c.prepared(sop)
        found, unavailable = self.given.values_for(goal, c.p.text, opening=not goal.id)
        if not (found or unavailable):
            return []
        return [SetSlots(evidence=c.p.text, values=found, words=value_words(c.p.text, found), sop=sop.id,
                         unavailable=tuple(unavailable))]

    def only_offers_left(self, goal: Goal) -> bool:
        """Whether all a goal still has to do is offer more help ("Is there anything else?"): its steps run on
        a copy."""
        sop, agent = self.sops.get(goal.type), self.agent_of(goal.type)
        if sop is None or agent is None:
            return False
        return agent.only_offers_left(goal, sop)
