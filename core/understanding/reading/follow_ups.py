"""A message while no goal runs and none is asked for (:class:`FollowUps`): a follow-up that changes what the
goal finished last used, a search run again over the next days ("when is it going to clear up?"), or what
else such a message is (a goodbye, a greeting, thanks, a question for the knowledge base, a reaction)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.language import text as T
from core.shared.models import Goal
from core.sop.graph import Sop
from core.understanding.answers import AnswerReader
from core.understanding.commands import Command, FollowUp, KnowledgeQuestion, SmallTalk, Unclear
from core.understanding.executor import FlowExecutor
from core.understanding.reading.context import ReadContext
from core.understanding.reading.side_questions import SideQuestions
from core.understanding.signals import explained_by


@dataclass
class FollowUps:
    """Messages to one workspace's SOPs while no goal runs, read with side questions' queries (``side``)."""

    sops: dict[str, Sop]
    agent_of: Callable[[str], FlowExecutor | None]
    answers: AnswerReader
    side: SideQuestions

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
            return [KnowledgeQuestion(evidence=p.text, query=self.side.doubt_query(p, None))]
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
