"""What a message does to the running goal, by precedence: a go-back, a question the customer cannot answer, a
side question, then the answer, corrections and values for later questions; a message that does not answer the
pending question is told so and the question asked again, saying once what answer fits."""

from __future__ import annotations

from collections.abc import Callable

from core.engine.flow import SpecialistAgent
from core.engine.processor.asides import SOCIAL, Asides
from core.engine.processor.knowledge import EXTERNAL_KNOWLEDGE, KnowledgeAnswers
from core.engine.processor.running import GoalRunner
from core.engine.processor.turn import Turn, first, say_to
from core.language import text as T
from core.shared.models import Goal
from core.sop.graph import Node, Sop
from core.tools.gateway import ToolGateway
from core.tools.kb import KB_TOOL
from core.understanding import (
    Answer,
    Command,
    CorrectSlot,
    FollowUp,
    GoBack,
    KnowledgeQuestion,
    SetSlots,
    Skip,
    SmallTalk,
    Unclear,
)


class RunningGoal:
    """Acts on a message's commands for the goal that is running."""

    def __init__(self, *, sops: dict[str, Sop], agent_of: Callable[[str], SpecialistAgent | None],
                 gateway: ToolGateway, knowledge: KnowledgeAnswers, runner: GoalRunner, asides: Asides) -> None:
        self.sops = sops
        self.agent_of = agent_of
        self.gateway = gateway
        self.knowledge = knowledge
        self.runner = runner
        self.asides = asides

    def act(self, t: Turn, goal: Goal, commands: list[Command]) -> None:
        """What the message does to the running goal, by precedence: a go-back, a question the customer
        cannot answer, a side question, then the answer, corrections and values for later questions."""
        sop, agent = self.sops.get(goal.type), self.agent_of(goal.type)
        if sop is None or agent is None:
            return
        for c in commands:
            if isinstance(c, GoBack):
                self.go_back(t, goal, sop, agent, c)
                return
            if isinstance(c, Skip):
                t.reading.add(c)
                if agent.skip_unanswerable(goal, sop, c.evidence, t.state.turn):
                    t.trace.decisions.append("customer cannot answer the pending question: taking the SOP's way "
                                             "for that")
                    self.runner.run_active(t)
                else:
                    self.invalid(t, goal, sop, commands)
                return
        side: list[Command] = [c for c in commands if isinstance(c, KnowledgeQuestion)
                or isinstance(c, FollowUp) and c.about == "items"]
        answer = first(commands, Answer)
        if side and goal.pending and not (answer is not None and answer.reading is not None
                                          and answer.reading.ask == goal.pending):
            self.asides.doubt(t, goal, sop, side)
            return
        if side and goal.pending:  # an answer and a side question: the side question's answer, then the flow
            if self.take_values(t, goal, sop, agent, commands):
                question = next((c for c in side if isinstance(c, KnowledgeQuestion)), None)
                if question is not None and self.gateway.tools.get(KB_TOOL) is not None:
                    t.reading.add(question)
                    self.knowledge.answer(t, question.query or question.evidence, "orchestrator")
                    t.trace.actions.append(EXTERNAL_KNOWLEDGE)
                    t.trace.decisions.append("answer taken, and the side question beside it answered")
                self.runner.run_active(t)
            else:
                self.asides.doubt(t, goal, sop, side)
            return
        accepted = self.take_values(t, goal, sop, agent, commands)
        if accepted is False or (accepted is None and goal.pending and any(
                isinstance(c, SmallTalk | Unclear) for c in commands)):
            self.invalid(t, goal, sop, commands)
            return
        if accepted is None and side:  # a side question while no question waits
            self.asides.knowledge_question(t, side, goal)
            return
        self.runner.run_active(t)

    def take_values(self, t: Turn, goal: Goal, sop: Sop, agent: SpecialistAgent,
                     commands: list[Command]) -> bool | None:
        """The answer, corrections, values for later questions and slots the customer cannot give: True when
        the goal took a value, False when the answer does not complete the pending question, None when the
        message gave the goal nothing."""
        answer = first(commands, Answer)
        accepted: bool | None = None
        changed: list[str] = []
        for c in commands:
            if isinstance(c, SetSlots) and c.sop in ("", goal.type) and c.unavailable:
                goal.unavailable += [k for k in c.unavailable if k not in goal.unavailable]
        if answer is not None and answer.reading is not None and goal.pending == answer.reading.ask:
            asked = sop.node(goal.pending)
            had = {p.name: goal.slots.get(p.name) for p in (asked.fills if asked is not None else [])}
            accepted = agent.take_answer(goal, sop, answer.reading, t.state.turn)
            t.partial = [k for k, v in had.items() if v in (None, "") and goal.slots.get(k) not in (None, "")]
            if accepted:
                t.reading.add(answer)
            elif t.partial:
                t.reading.drop(answer, f"it gives part of what the pending question asks ({', '.join(t.partial)}); "
                                       "the rest is asked for")
            else:
                t.reading.drop(answer, "its values do not complete the pending question")
        for c in commands:
            if isinstance(c, CorrectSlot):
                for k in agent.apply_correction(goal, sop, {c.slot: c.value}):
                    changed.append(k)
                    t.reading.add(CorrectSlot(evidence=c.evidence, slot=k, value=goal.slots.get(k)))
            elif isinstance(c, SetSlots) and c.sop in ("", goal.type) and c.values:
                new = {k: v for k, v in c.values.items() if goal.slots.get(k) in (None, "")}
                got = agent.apply_correction(goal, sop, new)
                changed += got
                if got:
                    t.reading.add(SetSlots(evidence=c.evidence, values={k: goal.slots.get(k) for k in got},
                                           words={k: w for k, w in c.words.items() if k in got}))
        if changed:
            t.trace.decisions.append(f"correction: {', '.join(changed)} updated")
            accepted = True
        return accepted

    def go_back(self, t: Turn, goal: Goal, sop: Sop, agent: SpecialistAgent, c: GoBack) -> None:
        target = next((n for n in sop.nodes.values() if n.asks and c.target == n.label), None) if c.target else None
        if target is None:
            t.reading.drop(c, "no earlier question to go back to")
            self.runner.reprompt(t, goal)
            return
        t.reading.add(c)
        agent.rewind(goal, sop, target, t.state.turn, c.evidence)
        t.trace.decisions.append(f"customer asked to go back: returning to {target.label!r}")
        t.messages.append(say_to(t, "go_back"))
        self.runner.run_active(t)

    def invalid(self, t: Turn, goal: Goal, sop: Sop, commands: list[Command]) -> None:
        """The message does not answer the pending question: say so (or answer its small talk) and ask
        again."""
        node = sop.node(goal.pending)
        social = next((c for c in commands if isinstance(c, SmallTalk) and c.act in SOCIAL), None)
        if social is not None:
            t.reading.add(social)
            t.messages.append(say_to(t, SOCIAL[social.act]))
            t.trace.act = "reprompt"
            t.trace.decisions.append("small talk while a question is pending: asking it again")
            self.runner.reprompt(t, goal)
            return
        if node is not None and not t.partial and T.asks_to_skip(t.perception.text):
            self.skip(t, goal, node)
            return
        if not t.partial:
            t.reading.add(next((c for c in commands if isinstance(c, Unclear)), None)
                          or Unclear(evidence=t.perception.text, why="does not answer the pending question"))
        if node is not None and t.partial:  # "ann@example.com" to "your name and email": thanks, then the rest
            t.messages.append(say_to(t, "got_part"))
            t.trace.decisions.append(f"part of the pending question answered ({', '.join(t.partial)}): "
                                     "asking for the rest")
        elif node is not None:
            t.messages.append(say_to(t, "didnt_catch"))
            t.trace.decisions.append("answer did not fit the pending question: asking again")
        else:
            t.trace.decisions.append("answer did not fit the pending question: asking again")
        if node is not None:
            goal.step = node.id
            goal.pending = None
        at = len(t.messages)
        self.runner.run_active(t)
        if node is not None and not t.partial and goal.pending == node.id:
            self.say_what_fits(t, node, at)

    def skip(self, t: Turn, goal: Goal, node: Node) -> None:
        """"Skip this one" to the question put (a question is put only for values it needs): it is asked again,
        and the request is not counted as an answer that failed (a customer who keeps asking to skip is not
        stuck, and can still cancel)."""
        t.reading.add(Unclear(evidence=t.perception.text, why="asks to skip a question the procedure needs"))
        t.messages.append(say_to(t, "skip_needed"))
        t.trace.decisions.append(f"the customer asked to skip {node.label!r}, which is needed: asking again "
                                 "(not counted as a failed answer)")
        goal.attempts[node.id] = max(0, goal.attempts.get(node.id, 0) - 1)
        goal.pending = None
        goal.step = node.id
        self.runner.run_active(t)

    def say_what_fits(self, t: Turn, node: Node, at: int) -> None:
        """A question asked again (the messages from ``at`` on; "didn't catch that" just before them) says what
        answer fits once, in a sentence: a hint the question already shows is not repeated; one that names what
        is needed ("the 8-digit account number") is said as "I need ..."; any other is shown after the
        question, as the first ask would."""
        asked = t.messages[at:]
        hint = T.flat_hint(node.expects)
        if not hint or any(_shows(q, hint) for q in asked):
            return
        if t.reading.language == "en" and not _article(hint).startswith(("a ", "an ", "the ", "one ", "your ")) \
                and asked and asked[-1].rstrip().endswith("?"):
            t.messages[-1] = f"{asked[-1].rstrip()} ({hint})"
            return
        t.messages[at - 1] = say_to(t, "didnt_catch_need", expects=_article(hint))


def _shows(question: str, hint: str) -> bool:
    """Whether a question already shows a hint: most of the hint's words are in it."""
    words = set(T.tokens(hint))
    return bool(words) and len(words & set(T.tokens(question))) >= 0.8 * len(words)


def _article(phrase: str) -> str:
    p = phrase.strip().rstrip(".")
    if p.lower().startswith(("a ", "an ", "the ", "one ", "your ")):
        return p[0].lower() + p[1:]
    return p
