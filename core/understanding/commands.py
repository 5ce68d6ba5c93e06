"""The commands a customer message is read into, and the reading of one turn.

A turn's message is read once into a list of commands (what the customer does: start a request,
answer the pending question, correct a slot, ask a side question, cancel, ...). Each command keeps
the words it came from (``evidence``). A command the context rules out (a "cancel it" that is really
a "yes" to "Shall I cancel it?") is kept as *dropped*, with the reason, so the trace shows both what
was read and why it was not acted on. Precedence (ARCHITECTURE.md §3a, docs/turn.md): an answer to the
pending question first, then a correction, a knowledge question, a request for another SOP, and a
cancellation only when the customer abandons the request itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True)
class Command:
    """One thing the customer's message does."""

    kind: ClassVar[str] = "command"
    hidden: ClassVar[tuple[str, ...]] = ()  # what the command carries for acting, not shown in the trace
    evidence: str = ""  # the customer's words the command was read from

    def as_dict(self) -> dict[str, Any]:
        """JSON form for the trace."""
        return {"command": self.kind, **{k: v for k, v in self.__dict__.items()
                                         if k not in self.hidden and v not in (None, "", [], {}, ())}}


@dataclass(frozen=True)
class StartGoal(Command):
    """Start (or return to) an SOP."""

    kind: ClassVar[str] = "start_goal"
    sop: str = ""
    score: float = 0.0
    deferred: tuple[str, ...] = ()  # further SOPs asked for in the same message: they wait their turn
    points_back: str = ""  # "the one you found": the new goal takes its listed values from what was found


@dataclass(frozen=True)
class SetSlots(Command):
    """Values the customer gives for slots ({slot: value}); ``words`` says where each came from."""

    kind: ClassVar[str] = "set_slots"
    values: dict[str, Any] = field(default_factory=dict)
    words: dict[str, str] = field(default_factory=dict)
    sop: str = ""  # the SOP the values are for, when it is not the running one (one started by the message)
    unavailable: tuple[str, ...] = ()  # slots the customer says they cannot give ("I can't find my membership number")


@dataclass(frozen=True)
class Answer(Command):
    """An answer to the pending question: a yes/no, an offered option, or a value of the asked type."""

    kind: ClassVar[str] = "answer"
    hidden: ClassVar[tuple[str, ...]] = ("reading",)
    question: str = ""  # the pending step
    value: Any = None
    # the answer's values as read (core.understanding.answers.AnswerReading)
    reading: Any = field(default=None, compare=False)


@dataclass(frozen=True)
class CorrectSlot(Command):
    """A filled slot replaced; the place in the flow is kept."""

    kind: ClassVar[str] = "correct_slot"
    slot: str = ""
    value: Any = None


@dataclass(frozen=True)
class GoBack(Command):
    """Back to an earlier question (its slot is asked again)."""

    kind: ClassVar[str] = "go_back"
    target: str = ""


@dataclass(frozen=True)
class Skip(Command):
    """The customer cannot answer the pending question: the SOP's way for that."""

    kind: ClassVar[str] = "skip"
    question: str = ""


@dataclass(frozen=True)
class CancelGoal(Command):
    """The customer abandons a request."""

    kind: ClassVar[str] = "cancel_goal"
    goal: str = ""


@dataclass(frozen=True)
class KnowledgeQuestion(Command):
    """A side question answered from the knowledge base (then the pending question again)."""

    kind: ClassVar[str] = "knowledge_question"
    query: str = ""


@dataclass(frozen=True)
class FollowUp(Command):
    """A follow-up on offered items or on the request finished last ("is it in stock?", "and Friday?")."""

    kind: ClassVar[str] = "follow_up"
    hidden: ClassVar[tuple[str, ...]] = ("named", "question")
    about: str = ""  # items | reopen | search
    sop: str = ""  # reopen / search: the SOP finished last, run again
    values: dict[str, Any] = field(default_factory=dict)  # ... with the values the message changes
    named: dict[str, Any] = field(default_factory=dict)  # search: listed values a result should show ("sunny")
    question: Any = field(default=None, compare=False)  # items: the question about them, as read


@dataclass(frozen=True)
class SmallTalk(Command):
    """Greeting, thanks, goodbye, frustration."""

    kind: ClassVar[str] = "small_talk"
    act: str = ""  # greeting | thanks | goodbye | hostile | declined (a wish turned down) | reaction (to our act)


@dataclass(frozen=True)
class HumanHandoff(Command):
    """The customer asks for a person."""

    kind: ClassVar[str] = "human_handoff"


@dataclass(frozen=True)
class Clarify(Command):
    """Two readings about as likely (two SOPs the message resembles alike, neither asked for by name): the
    reply asks which was meant, naming both (``options``: their SOP ids, the likelier first)."""

    kind: ClassVar[str] = "clarify"
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class Unclear(Command):
    """Nothing the engine can act on: ask to rephrase (or say what it can do)."""

    kind: ClassVar[str] = "unclear"
    why: str = ""


@dataclass
class Reading:
    """The commands of one message, in the order they are acted on, and those dropped with the reason."""

    language: str = "en"
    commands: list[Command] = field(default_factory=list)
    reader: str = "rules"  # who read the message: the rules, or a model whose reading was checked
    closes: str = ""  # a goal left with nothing but its "anything else?" that the message moves past
    dropped: list[tuple[Command, str]] = field(default_factory=list)
    considered: list[dict[str, Any]] = field(default_factory=list)  # the readings weighed, with their scores

    def add(self, command: Command) -> Command:
        self.commands.append(command)
        return command

    def drop(self, command: Command, reason: str) -> None:
        self.dropped.append((command, reason))

    def first(self, kind: type[Command]) -> Command | None:
        return next((c for c in self.commands if isinstance(c, kind)), None)

    def as_dict(self) -> dict[str, Any]:
        """JSON form for the trace."""
        out = {"language": self.language, "reader": self.reader, "commands": [c.as_dict() for c in self.commands],
               "dropped": [{**c.as_dict(), "reason": why} for c, why in self.dropped]}
        if self.closes:
            out["closes"] = self.closes
        if self.considered:
            out["considered"] = self.considered
        return out


def value_words(text: str, values: dict[str, Any]) -> dict[str, str]:
    """For each value, the customer's words it was read from, when they can be found in the message:
    the value itself ("NW-10481"), or the number as written ("$1,500" for 1500)."""
    import re

    from core.language import text as T

    out: dict[str, str] = {}
    for name, value in values.items():
        if isinstance(value, bool) or value is None or isinstance(value, list | dict):
            continue
        hit = next((a for a in T.amounts(text) if a.value == value), None) \
            if isinstance(value, int | float) else None
        m = re.search(re.escape(str(value)), text, re.I)
        if hit is not None:
            out[name] = text[hit.start:hit.end]
        elif m:
            out[name] = m.group(0)
    return out


def reading_lines(reading: dict[str, Any]) -> list[str]:
    """A trace's reading in plain lines: each command with the words it came from, then each dropped
    command with the reason ("dropped cancel_goal (goal=care.order_cancel) from 'Yes, please cancel it':
    the message answers the pending question")."""

    def one(c: dict[str, Any]) -> str:
        details = ", ".join(f"{k}={v}" for k, v in c.items() if k not in ("command", "evidence", "reason"))
        words = str(c.get("evidence") or "")
        words = words if len(words) <= 80 else words[:77] + "..."
        return f"{c.get('command')}" + (f" ({details})" if details else "") + (f" from {words!r}" if words else "")

    lines = [one(c) for c in reading.get("commands") or []]
    lines += [f"dropped {one(c)}: {c.get('reason')}" for c in reading.get("dropped") or []]
    return lines
