"""Whether a message answers the question the running goal waits on (:class:`PendingReader`): a well-formed
answer, an attempt at one (it names what is asked), a correction about the goal's questions, and the answer
kept from a message that also asks for something else."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.language import text as T
from core.shared.models import Goal
from core.sop.graph import Sop
from core.understanding.answers import AnswerReader, AnswerReading
from core.understanding.brains.base import Brain
from core.understanding.commands import Answer
from core.understanding.executor import FlowExecutor
from core.understanding.signals import corrects, names_asked, one_value


@dataclass
class PendingReader:
    """A message read against the pending question of a goal of one workspace's SOPs."""

    sops: dict[str, Sop]
    agent_of: Callable[[str], FlowExecutor | None]
    brain: Brain
    answers: AnswerReader

    def clear_answer(self, goal: Goal | None, text: str) -> bool:
        """A short reply that is plainly an answer to the pending ask needs no intent embedding: at most
        four words, or at most eight with no question, request, cancel or correction words in them
        ("Lenovo Legion, freezes when gaming.")."""
        n = len(T.words(text))
        if n > 8:
            return False
        if n > 4 and any(T.is_question(said) or T.is_request(said) or T.is_cancel(said)
                         or T.corrects(said) or T.is_go_back(said) or T.wants_it_now(said)
                         for said in (text, self.brain.correct(text))):  # "sure, i wuold like to book this cabin"
            return False
        return self.answers_pending(goal, text)

    def corrects_filled(self, goal: Goal, text: str) -> bool:
        """Whether a message says it corrects something ("scratch that, I meant 85") and gives a new value
        for a slot the goal already holds: a correction, which outranks a cancel its words may hold."""
        sop = self.sops.get(goal.type)
        if sop is None or not T.corrects(text):
            return False
        found = self.answers.extract_volunteered(goal, sop, text, opening=False)
        return any(goal.slots.get(k) not in (None, "") and v != goal.slots.get(k) for k, v in found.items())

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
