"""A persona played by rules (``python -m core simulate`` offline): every message from the goal, the manner and
the ``simulation`` section of the language files; and what the customer sees after each reply."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from core.evaluation.inputs import Phrasebook, opening
from core.evaluation.persona_goals import Answer, bare, decoy_answer, up_front, whole_word
from core.evaluation.personas import Persona
from core.evaluation.sop_context import SopContext
from core.language.lexicons import lexicons
from core.sop.graph import Node


def wording(language: str) -> dict[str, tuple[str, ...]]:
    """The ``simulation`` section of a language file (English for the keys it lacks)."""
    found = {lx.language: lx.section("simulation") for lx in lexicons()}
    return {**found.get("en", {}), **found.get(language, {})}


@dataclass
class Heard:
    """What the customer sees after the agent's reply: the question of their SOP waiting for them, another
    SOP the agent went to instead, or the end of the conversation (nothing active)."""

    pending: Node | None = None
    elsewhere: str | None = None
    over: bool = False
    done: bool = False  # the customer's SOP has ended


@dataclass
class ScriptedCustomer:
    """A persona played by rules: every message from the goal, the manner and the language file's wording."""

    persona: Persona
    ctx: SopContext
    rng: random.Random
    kb_titles: list[str] = field(default_factory=list)
    queue: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)  # asks already put to the customer once
    puzzled: set[str] = field(default_factory=set)  # asks a confused customer asked about first
    redirects: int = 0
    decoy: Answer | None = None
    decoy_text: str = ""
    decoy_said: bool = False
    corrected: bool = False

    def __post_init__(self) -> None:
        self.book = Phrasebook(self.rng)
        self.words = wording(self.persona.goal.language)
        if self.persona.manner == "changes_mind":
            self.decoy = decoy_answer(self.persona.goal)

    def pick(self, key: str) -> str:
        return self.book.pick(list(self.words.get(key) or ("{v}",)))

    def first(self) -> str:
        """The opening message."""
        goal, manner = self.persona.goal, self.persona.manner
        if manner in ("terse", "thai"):
            return goal.request
        request = goal.request
        if self.decoy is not None and self.decoy.opened:  # says another value first, takes it back later
            request = whole_word(bare(self.decoy)).sub(self._decoy_value(self.decoy), request, count=1)
        said = opening(self.rng, goal.title, [request])
        if self.decoy is not None and self.decoy.opened and whole_word(self._decoy_value(self.decoy)).search(said):
            self.decoy_said = True
        if manner == "chatty":
            return f"{self.pick('chatty_lead')} {said}. {self.pick('chatty_tail')}"
        if manner == "up_front":
            parts = [self.pick("up_front").replace("{s}", a.subject).replace("{v}", bare(a))
                     for a in goal.answers if up_front(a)]
            return said.rstrip("!?.") + ". " + self.pick("up_front_join").join(parts)
        return said

    def next(self, heard: Heard, reply: str = "") -> str | None:
        """The next message, or None when the customer has nothing more to say (``reply``, the agent's last
        message, is not read: what the customer hears is in ``heard``)."""
        if heard.done or (heard.over and heard.pending is None and self.redirects >= 2):
            return None
        if heard.elsewhere or (heard.over and not heard.done):
            if self.redirects >= 2:
                return None
            self.redirects += 1
            return self.pick("redirect").replace("{t}", self.persona.goal.request)
        if heard.pending is None:
            return None
        if self.queue:
            return self.queue.pop(0)
        return self._answer(heard.pending)

    def _answer(self, node: Node) -> str:
        manner, first_time = self.persona.manner, node.id not in self.seen
        self.seen.add(node.id)
        answer = self.persona.goal.answer(node.id)
        if answer is None:  # a question the goal did not expect: any valid answer
            return self.book.valid(self.ctx.spec(node), {})[0]
        if manner == "confused" and node.id not in self.puzzled:
            self.puzzled.add(node.id)
            return self.pick("confused").replace("{s}", answer.subject)
        if manner == "side_questions" and first_time and self.kb_titles and len(self.seen) <= 2:
            self.queue.append(self._say(answer))
            topic = self.book.pick(self.kb_titles).rstrip("?.").lower()
            return self.pick("side_question").replace("{q}", topic)
        if manner == "changes_mind" and self.decoy is not None and not self.corrected:
            if answer is self.decoy and not self.decoy_said:
                self.decoy_said = True
                return self._say(answer, self._decoy_value(answer))
            if answer is not self.decoy and self.decoy_said:
                self.corrected = True
                self.queue.append(self._say(answer))
                return (self.pick("mind_change").replace("{s}", self.decoy.subject)
                        .replace("{v}", bare(self.decoy)).replace("{old}", self._decoy_value(self.decoy)))
        return self._say(answer)

    def _say(self, answer: Answer, value: str | None = None) -> str:
        """An answer worded in the persona's manner."""
        manner, v = self.persona.manner, value if value is not None else bare(answer)
        if answer.kind == "yesno":
            return self.pick("yes" if answer.value is not False else "no")
        if answer.kind == "choice":
            return self.pick("decline") if answer.value is False else self.pick("pick").replace("{v}", v)
        if manner in ("terse", "up_front"):
            return v
        if manner == "confused":
            return self.pick("confused_answer").replace("{v}", v)
        text = self.pick("answer").replace("{s}", answer.subject).replace("{v}", v)
        if manner == "chatty":
            return f"{self.pick('chatty_lead')} {text}. {self.pick('chatty_tail')}"
        return text

    def _decoy_value(self, answer: Answer) -> str:
        """Another value of the same kind (first given, then taken back); the same one each time."""
        if not self.decoy_text:
            spec = self.ctx.spec(self.ctx.sop.nodes[answer.node])
            others = [v for v in spec.vocab if str(v).lower() != str(answer.value).lower()]
            text = bare(answer)
            for _ in range(8):
                text = self.book.pick(others) if others else self.book.value(spec, {})[0]
                if text.lower() != bare(answer).lower():
                    break
            self.decoy_text = text.lower() if answer.kind == "category" else text
        return self.decoy_text
