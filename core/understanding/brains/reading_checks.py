"""A model's reading of one message checked (:func:`check_reading`): each wire command
(``core.understanding.brains.commands``) as the typed command it stands for (``core.understanding.commands``),
against what the message may refer to (:class:`ReadingScope`: the SOPs, the pending question, the slots and
their kinds, the offered items, the tools), its slot values checked by
:mod:`core.understanding.brains.value_checks`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.sop.graph import Node
from core.tools.kb import KB_TOOL
from core.understanding.brains.cleaning import normalise_code
from core.understanding.brains.commands import Abstain, InvalidProposal, Reading, SlotValue, WireCommand
from core.understanding.brains.value_checks import check_value
from core.understanding.commands import (
    Answer,
    CancelGoal,
    Command,
    CorrectSlot,
    FollowUp,
    GoBack,
    HumanHandoff,
    KnowledgeQuestion,
    SetSlots,
    Skip,
    SmallTalk,
    StartGoal,
    Unclear,
    value_words,
)
from core.workspace.slots import SlotType, hints_per_slot

MAX_QUERY_CHARS = 300


@dataclass
class ReadingScope:
    """What a reading of one message may refer to."""

    text: str
    sop_ids: list[str]
    pending: Node | None = None
    slot_types: dict[str, SlotType] = field(default_factory=dict)  # the running SOP's slots
    candidates: list[dict[str, Any]] = field(default_factory=list)
    tools: frozenset[str] = frozenset()
    running: str | None = None  # the running SOP's id
    filled: frozenset[str] = frozenset()  # slots of the running goal that hold a value
    all_types: dict[str, dict[str, SlotType]] = field(default_factory=dict)  # every SOP's slots


@dataclass
class ReadingResult:
    """A checked reading: typed commands (``core.understanding.commands``) and the language."""

    commands: list[Command]
    language: str | None

    @property
    def act(self) -> str:
        """The kinds read, for the trace ("answer+start_goal")."""
        return "+".join(dict.fromkeys(c.kind for c in self.commands)) or "unclear"

    @property
    def slots(self) -> dict[str, Any]:
        """The values that answer the pending question."""
        return {k: v for c in self.commands if isinstance(c, Answer) for k, v in dict(c.value or {}).items()}

    @property
    def start(self) -> str | None:
        return next((c.sop for c in self.commands if isinstance(c, StartGoal)), None)

    @property
    def search_query(self) -> str:
        return next((c.query for c in self.commands if isinstance(c, KnowledgeQuestion)), "")


def check_reading(reading: Reading, scope: ReadingScope) -> ReadingResult:
    """The typed commands a reading stands for, after every check.

    Raises:
        Abstain: the model could not tell (nothing but "unclear").
        InvalidProposal: an unknown SOP, a slot the command may not set, a value of the wrong form or one
            the customer never wrote, an answer when nothing is pending, a cancel or correction with no
            request running, a query too long.
    """
    wanted = [c for c in reading.commands if c.command != "unclear"]
    if not wanted:
        raise Abstain()
    starts = [c.sop for c in wanted if c.command == "start_goal"]
    if len(starts) > 1:
        raise InvalidProposal("start at most one SOP per message (the first the customer wants)")
    commands = [_check_command(c, scope, starts[0] if starts else None) for c in wanted]
    return ReadingResult(commands, normalise_code(reading.language))


def _check_command(c: WireCommand, scope: ReadingScope, started: str | None) -> Command:
    """One wire command as the typed command it stands for, or why it cannot be one."""
    if c.command == "set_slots" and c.sop and c.sop != scope.running:
        return _values_for_started(c, scope, started)
    if c.slots and c.command not in ("answer", "set_slots", "correct_slot"):
        raise InvalidProposal(f"slots belong to answer, set_slots or correct_slot, not to {c.command!r}")
    if c.command in ("set_slots", "correct_slot", "go_back", "skip", "cancel_goal") and scope.running is None:
        raise InvalidProposal(f"no SOP is running, so {c.command} has nothing to act on; use start_goal")
    check = _CHECKS.get(c.command)
    return check(c, scope) if check is not None else Unclear(evidence=scope.text, why="the model could not tell")


def _start(c: WireCommand, scope: ReadingScope) -> Command:
    if not c.sop or c.sop not in scope.sop_ids:
        known = ", ".join(scope.sop_ids) or "(none)"
        raise InvalidProposal(f"sop {c.sop!r} is not one of the SOPs: {known}")
    return StartGoal(evidence=scope.text, sop=c.sop, score=1.0)


def _answer(c: WireCommand, scope: ReadingScope) -> Command:
    node = scope.pending
    if node is None or not node.fills:
        raise InvalidProposal("no question is pending, so the message cannot be an answer; use start_goal, "
                              "knowledge_question, small_talk or another command")
    values = check_slots(c.slots, scope, {p.name for p in node.fills}, "the pending question fills")
    return Answer(evidence=scope.text, question=node.label, value=values)


def _slot_values(c: WireCommand, scope: ReadingScope) -> Command:
    own = set(scope.slot_types)
    if c.command == "correct_slot":
        allowed, what = own & scope.filled, "slots with a value to correct"
    else:
        pending = {p.name for p in scope.pending.fills} if scope.pending is not None else set()
        allowed, what = own - pending, "slots of later questions (the pending one takes answer)"
    if not c.slots:
        raise InvalidProposal(f"{c.command} needs at least one slot")
    values = check_slots(c.slots, scope, allowed, what)
    if c.command == "correct_slot":
        [(name, value)] = list(values.items())[:1]
        return CorrectSlot(evidence=scope.text, slot=name, value=value)
    return SetSlots(evidence=scope.text, values=values, words=value_words(scope.text, values))


def _skip(c: WireCommand, scope: ReadingScope) -> Command:
    if scope.pending is None:
        raise InvalidProposal("no question is pending, so there is nothing to skip")
    return Skip(evidence=scope.text, question=scope.pending.label)


def _question(c: WireCommand, scope: ReadingScope) -> Command:
    query = " ".join((c.query or scope.text).split())
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidProposal(f"query is longer than {MAX_QUERY_CHARS} characters; write a short search query")
    return KnowledgeQuestion(evidence=scope.text, query=query if KB_TOOL in scope.tools else "")


_CHECKS: dict[str, Callable[[WireCommand, ReadingScope], Command]] = {
    "start_goal": _start,
    "answer": _answer,
    "set_slots": _slot_values,
    "correct_slot": _slot_values,
    "go_back": lambda c, scope: GoBack(evidence=scope.text),
    "skip": _skip,
    "cancel_goal": lambda c, scope: CancelGoal(evidence=scope.text, goal=scope.running or ""),
    "knowledge_question": _question,
    "follow_up": lambda c, scope: FollowUp(evidence=scope.text, about="items" if scope.candidates else "reopen"),
    "small_talk": lambda c, scope: SmallTalk(evidence=scope.text, act=c.act or "other"),
    "human_handoff": lambda c, scope: HumanHandoff(evidence=scope.text),
}


def _values_for_started(c: WireCommand, scope: ReadingScope, started: str | None) -> SetSlots:
    """Values the message gives for the SOP it starts ("a refund for order NW-10483")."""
    if started is None or c.sop != started:
        raise InvalidProposal(f"set_slots for {c.sop!r}: values go to the running SOP (sop null) or to the SOP "
                              f"this message starts ({started or 'none'})")
    types = scope.all_types.get(started, {})
    values = check_slots(c.slots, scope, set(types), f"the slots of {started}", types)
    return SetSlots(evidence=scope.text, values=values, words=value_words(scope.text, values), sop=started)


def check_slots(values: list[SlotValue], scope: ReadingScope, allowed: set[str], what: str,
                 types: dict[str, SlotType] | None = None) -> dict[str, Any]:
    """Each proposed value in its slot's form, checked the way the rules check theirs: a slot the command
    may set, a value of the slot's kind, copied from the customer's words. Every value is checked; the
    refused ones are listed together (the model is told all of them at once, the trace names each)."""
    out: dict[str, Any] = {}
    refused: list[dict[str, str]] = []
    node = scope.pending if types is None else None
    for sv in values:
        if sv.name not in allowed:
            listed = ", ".join(sorted(allowed)) or "nothing"
            raise InvalidProposal(f"slot {sv.name!r} cannot be set here; {what}: {listed}")
        st = (scope.slot_types if types is None else types).get(sv.name) or SlotType(sv.name, "text")
        try:
            out[sv.name] = check_value(st, sv.value, scope.text, scope.candidates, _expects(node, sv.name))
        except InvalidProposal as exc:
            refused.append({"slot": sv.name, "value": " ".join(str(sv.value).split()), "why": str(exc)})
    if refused:
        raise InvalidProposal("; ".join(r["why"] for r in refused), refused=refused)
    return out


def _expects(node: Node | None, name: str) -> str:
    """What a valid value of one slot of the pending question looks like: the question's hint, or, for a
    question asking several values, that slot's own part of it ("the member id like ana_ruiz_2281")."""
    names = [p.name for p in node.fills] if node is not None else []
    if node is None or name not in names:
        return ""
    if len(names) < 2:
        return node.expects
    parts = hints_per_slot(node.expects, len(names))
    return parts[names.index(name)] if parts else ""
