"""Asides: what a message says beside a request's values. A question asked instead of an answer (answered from
the knowledge base, or from the items offered, then the pending question is asked again), a knowledge question
while no question waits, small talk with no request running, and a message nothing could be made of (the
store's capabilities are said)."""

from __future__ import annotations

from collections.abc import Callable

from core.engine.flow import SpecialistAgent
from core.engine.processor.knowledge import EXTERNAL_KNOWLEDGE, KnowledgeAnswers
from core.engine.processor.new_goals import NewGoals
from core.engine.processor.running import GoalRunner
from core.engine.processor.tool_calls import ToolCaller
from core.engine.processor.turn import Turn, say_to
from core.language.replies import say
from core.shared.models import Goal
from core.sop.graph import Sop
from core.tools.gateway import ToolGateway
from core.tools.kb import KB_TOOL
from core.understanding import Clarify, Command, Commerce, FollowUp, KnowledgeQuestion, SmallTalk, Unclear

SOCIAL = {"frustration": "sorry_frustrating", "greeting": "hello_short", "thanks": "welcome_short"}
"""Small talk answered before the pending question is asked again: its sentence in the reply catalogue."""


class Asides:
    """Answers a message's questions and small talk, beside (or without) a running request."""

    def __init__(self, *, sops: dict[str, Sop], agent_of: Callable[[str], SpecialistAgent | None],
                 gateway: ToolGateway, tools: ToolCaller, knowledge: KnowledgeAnswers, runner: GoalRunner,
                 commerce: Commerce | None, greeting: str) -> None:
        self.sops = sops
        self.agent_of = agent_of
        self.gateway = gateway
        self.tools = tools
        self.knowledge = knowledge
        self.runner = runner
        self.commerce = commerce
        self.greeting = greeting

    def doubt(self, t: Turn, goal: Goal, sop: Sop, side: list[Command]) -> None:
        """Paper §3: answer a question asked instead of an answer, then ask the pending question again."""
        agent = self.agent_of(goal.type)
        pending = sop.node(goal.pending)
        items = next((c for c in side if isinstance(c, FollowUp) and c.question is not None), None)
        question = next((c for c in side if isinstance(c, KnowledgeQuestion)), None)
        evidence = (items or question or side[0]).evidence
        if items is not None and not (self.commerce is not None and agent is not None
                                      and self.gateway.allowed(agent.name, self.commerce.search_tool)):
            t.reading.drop(items, "the agent may not search the items")
            items = None
        if items is not None and agent is not None and self.commerce is not None:
            t.reading.add(items)
            if question is not None:
                t.reading.drop(question, "the question is about the items offered")
            t.trace.actions.append(f"follow-up: {self.commerce.search_tool}")
            t.messages.append(self.commerce.answer(
                items.question, lambda tool, args: self.tools.call(t, agent.name, tool, args), t.reading.language))
            step = ""
        else:
            query = question.query if question is not None and question.query else evidence
            t.reading.add(KnowledgeQuestion(evidence=evidence, query=query))
            self.knowledge.answer(t, query, agent_name="orchestrator")
            t.trace.actions.append(EXTERNAL_KNOWLEDGE)
            step = EXTERNAL_KNOWLEDGE
        if agent is not None:
            agent.note_detour(goal, sop, evidence, t.state.turn, step)
        t.trace.decisions.append("doubt answered; pending question asked again")
        if pending is not None and goal.next_question:
            t.trace.actions.append(pending.label)
        self.runner.reprompt(t, goal)

    def knowledge_question(self, t: Turn, side: list[Command], goal: Goal | None) -> None:
        """A knowledge question while no question waits: answered from the knowledge base when there is one."""
        question = next((c for c in side if isinstance(c, KnowledgeQuestion)), None)
        if question is None or self.gateway.tools.get(KB_TOOL) is None:
            t.reading.add(side[0])
            if goal is not None:
                self.runner.run_active(t)
            else:
                self.unclear(t)
            return
        t.reading.add(question)
        t.trace.act = "kb_answer"
        self.knowledge.answer(t, question.query or question.evidence, "orchestrator")

    def no_goal(self, t: Turn, commands: list[Command]) -> None:
        """Small talk, a question for the knowledge base, or nothing to act on, while no goal runs."""
        c = next((c for c in commands if isinstance(c, SmallTalk | KnowledgeQuestion | Unclear | FollowUp | Clarify)),
                 None)
        if isinstance(c, Clarify):  # two requests about as likely: which was meant, naming both
            t.reading.add(c)
            t.trace.act = "clarify"
            titles = [self.sops[o].title if o in self.sops else o for o in c.options[:2]]
            t.messages.append(say_to(t, "clarify", a=_lowered(titles[0]), b=_lowered(titles[-1])))
            return
        if isinstance(c, KnowledgeQuestion | FollowUp):
            self.knowledge_question(t, [c], None)
            return
        if c is not None:
            t.reading.add(c)
        act = c.act if isinstance(c, SmallTalk) else ""
        if act == "frustration":
            t.trace.act = "capabilities"
            t.messages.append(say_to(t, "frustrated", capabilities=self.capabilities(t)))
        elif act == "goodbye":
            t.trace.act = "goodbye"
            t.messages.append(say_to(t, "goodbye"))
        elif act == "greeting":
            t.trace.act = "greeting"
            t.messages.append(f"{self.greeting} {self.capabilities(t)}" if self.greeting
                              else say_to(t, "hello", capabilities=self.capabilities(t)))
        elif act == "thanks" and NewGoals.just_finished(t.state):  # the request is done and offered nothing more
            t.trace.act = "goodbye"
            t.messages.append(say_to(t, "welcome_bye"))
        elif act == "thanks":
            t.trace.act = "thanks"
            t.messages.append(say_to(t, "welcome_more"))
        elif act == "declined":  # "nah, I don't want the upgrade": nothing is done, something else may be
            t.trace.act = "offer_more"
            t.messages.append(say_to(t, "declined_more"))
        elif act == "reaction" and NewGoals.just_finished(t.state):  # a reaction to what we just did ("Good idea.")
            t.trace.act = "offer_more"
            t.messages.append(say_to(t, _closing(NewGoals.finished_last(t.state))))
        else:
            self.unclear(t)

    def unclear(self, t: Turn) -> None:
        """Nothing to act on: say what the store can do."""
        t.trace.act = "capabilities"
        t.messages.append(say_to(t, "not_sure", capabilities=self.capabilities(t)))

    def capabilities(self, t: Turn | None = None) -> str:
        """What the store can do (its SOPs' titles), as a sentence in the customer's language."""
        titles = [s.title[0].lower() + s.title[1:] for s in self.sops.values() if s.title]
        lang = t.reading.language if t is not None else "en"
        if not titles:
            return say("capabilities_none", lang)
        listed = ", ".join(titles[:-1]) + (f" {say('list_or', lang)} " if len(titles) > 1 else "") + titles[-1]
        return say("capabilities", lang, titles=listed)


def _lowered(title: str) -> str:
    """An SOP's title inside a sentence: its first letter small unless the first word is a name or an acronym
    ("Transfer money" -> "transfer money", "ABCD refunds" stays)."""
    first = title.split(" ", 1)[0]
    return title if len(first) > 1 and first[1:2].isupper() else title[:1].lower() + title[1:]


def _closing(goal: Goal | None) -> str:
    """The sentence answering a reaction to the request that just ended: glad to have helped only when it was
    done; sorry when it failed (never a claim that it helped); else (cancelled, handed to the team) an offer."""
    outcome = goal.outcome if goal is not None else ""
    return {"completed": "glad_more", "failed": "sorry_more"}.get(outcome, "more_plain")
