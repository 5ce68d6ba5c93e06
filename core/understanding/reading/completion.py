"""A model's reading made whole (:class:`ModelCompletion`): its checked commands, with what acting on them needs
read the rules' way."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from core.sop.graph import Sop
from core.understanding.answers import AnswerReader
from core.understanding.commands import Answer, Command, FollowUp, GoBack, KnowledgeQuestion, SmallTalk, Unclear
from core.understanding.executor import FlowExecutor
from core.understanding.reading.context import ReadContext
from core.understanding.reading.follow_ups import FollowUps
from core.understanding.reading.replies import ReplyReader
from core.understanding.reading.side_questions import SideQuestions


@dataclass
class ModelCompletion:
    """A model's commands for one workspace's SOPs completed with the rules' readers: the questions a go-back
    may return to (``replies``), side questions (``side``) and what a message means while no goal runs
    (``follow_ups``)."""

    sops: dict[str, Sop]
    agent_of: Callable[[str], FlowExecutor | None]
    answers: AnswerReader
    replies: ReplyReader
    side: SideQuestions
    follow_ups: FollowUps

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
                node = node or self.replies.go_back_target(active, cmd.evidence or p.text)
                out.append(replace(cmd, target=node.label) if node is not None else replace(cmd, target=""))
            elif isinstance(cmd, KnowledgeQuestion | FollowUp) and active is not None and active.pending:
                if "doubt" not in done:
                    out += self.side.doubt(c, active)
                done.add("doubt")
            elif isinstance(cmd, KnowledgeQuestion) and (active is not None or c.kb_tool):
                out.append(replace(cmd, query=self.side.doubt_query(p, active)))
            elif isinstance(cmd, KnowledgeQuestion | FollowUp | SmallTalk | Unclear) and active is None:
                found = (self.follow_ups.search_follow_up(c)
                         or self.follow_ups.reopen(c)) if isinstance(cmd, FollowUp) else None
                if found is not None:
                    out.append(found)
                elif "no_goal" not in done:
                    out += self.follow_ups.no_goal(c)
                done.add("no_goal")
            else:
                out.append(cmd)
        return out
