"""The model proposes, the code decides: what a model may answer, and the checks its answer must pass.

Three wire schemas (pydantic models sent as ``response_format``): ``Reading`` (one customer message),
``BranchPick`` (one decision of the SOP) and ``Wording`` (the reply in the customer's language).

A reading is a list of commands of the same kinds the rule reader produces (``core.understanding``:
start_goal, answer, set_slots, correct_slot, go_back, skip, cancel_goal, knowledge_question, follow_up,
small_talk, human_handoff, unclear); each wire command becomes exactly one of those typed commands,
nothing is flattened, after it passed the checks against the compiled SOPs, the GAR's slot definitions
and the tools the workspace has. A proposed slot value is a candidate like the rules' own: it must be of
the slot's kind (for a question asking several values, the kind and example of that slot's part of the
hint) and, for ids, emails, codes, phone numbers and amounts, written by the customer. A failed check
raises ``InvalidProposal`` with a message the model gets once to correct itself (every refused value named,
and listed in ``InvalidProposal.refused`` for the trace); a reading that is only "unclear" raises
``Abstain``. Either way the rule reader decides. Which checked command the engine acts on, and which it
drops (with the reason), is the orchestrator's command processor's business (precedence, docs/turn.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from core.language import text as T
from core.sop.expr_templates import TEMPLATE_REF as PLACEHOLDER
from core.sop.graph import Node
from core.tools.kb import KB_TOOL
from core.understanding.brains.cleaning import clean_reply, normalise_code
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
from core.workspace.slots import (
    DECLINE,
    IDENTIFYING_KINDS,
    SlotType,
    extract,
    hints_per_slot,
    resolve_reference,
    validate,
)

# ---------------------------------------------------------------------------- wire schemas

Kind = Literal["start_goal", "answer", "set_slots", "correct_slot", "go_back", "skip", "cancel_goal",
               "knowledge_question", "follow_up", "small_talk", "human_handoff", "unclear"]
Social = Literal["greeting", "thanks", "goodbye", "frustration", "other"]


def _bare(schema: dict[str, Any]) -> None:
    """Drop titles and descriptions from a wire schema: the prompt explains the fields, and every
    character of the schema is sent (and paid for) with every request."""
    schema.pop("title", None)
    schema.pop("description", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)


class _Wire(BaseModel):
    model_config = ConfigDict(json_schema_extra=_bare)


class SlotValue(_Wire):
    """One value the message gives for a slot."""

    name: str
    value: str


class WireCommand(_Wire):
    """One thing the message does, as the model reads it."""

    command: Kind
    sop: str | None  # start_goal: the SOP asked for
    slots: list[SlotValue]  # answer, set_slots, correct_slot
    query: str | None  # knowledge_question: a short search query
    act: Social | None  # small_talk


class Reading(_Wire):
    """How a customer message reads against the running SOP: its commands, in the order said."""

    commands: list[WireCommand]
    language: str | None


class BranchPick(_Wire):
    """Which branch of a decision the observation satisfies."""

    choice: int | None


class Wording(_Wire):
    """The reply as the customer should read it."""

    reply: str


# ---------------------------------------------------------------------------- outcomes


class InvalidProposal(Exception):  # noqa: N818 - a control-flow signal, not an error of the engine
    """A model's answer broke a rule; the message is sent back to the model once.

    ``refused`` lists the slot values that failed their checks, each as {"slot", "value", "why"} (for the
    trace: which of the model's values were refused and why)."""

    def __init__(self, message: str, *, refused: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.refused: list[dict[str, str]] = list(refused or [])


class Abstain(Exception):  # noqa: N818 - a control-flow signal
    """The model says it cannot tell: the rules decide, without a retry."""


@dataclass(frozen=True)
class ChooseBranch:
    """A checked branch pick: the next step after a decision."""

    kind: ClassVar[str] = "choose_branch"
    node: str
    target: str
    condition: str | None

    def as_dict(self) -> dict[str, Any]:
        """JSON form for the trace."""
        return {"command": self.kind, "node": self.node, "target": self.target, "condition": self.condition}


@dataclass(frozen=True)
class Say:
    """A checked wording (checked against the tool results by the grounding guard afterwards)."""

    kind: ClassVar[str] = "say"
    text: str


# ---------------------------------------------------------------------------- checking a reading

NUMERIC_KINDS = {"money", "number"}
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
    values = _check_slots(c.slots, scope, {p.name for p in node.fills}, "the pending question fills")
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
    values = _check_slots(c.slots, scope, allowed, what)
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
    values = _check_slots(c.slots, scope, set(types), f"the slots of {started}", types)
    return SetSlots(evidence=scope.text, values=values, words=value_words(scope.text, values), sop=started)


def _check_slots(values: list[SlotValue], scope: ReadingScope, allowed: set[str], what: str,
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


def check_value(st: SlotType, raw: str, message: str, candidates: list[dict[str, Any]] | None = None,
                expects: str = "") -> Any:
    """A proposed slot value in the slot's own form, if the customer's message supports it.

    Raises:
        InvalidProposal: the value is empty, of the wrong form (not "a 6-digit OTP"), not among the
            offered choices, or (ids, emails, codes, phone numbers, amounts) not in the message.
    """
    value = " ".join(str(raw).split())
    what = expects or st.kind
    candidates = candidates or []
    if not value:
        raise InvalidProposal(f"the value for {st.name!r} is empty")
    if st.kind == "boolean":
        yn = T.yes_no(value)
        if yn is None:
            raise InvalidProposal(f"{st.name!r} takes yes or no, not {value!r}")
        return yn
    if st.kind == "choice":
        return _check_choice(st, value, candidates)
    if st.kind == "text":
        return value[:500]
    got = extract(st, value, asked=True, candidates=candidates)
    if not validate(st, got):
        raise InvalidProposal(f"{value!r} is not a valid {st.name} ({what})")
    if st.kind in IDENTIFYING_KINDS and not _written(st, value, got, message):
        raise InvalidProposal(f"{got!r} does not appear in the customer's message; copy values, never invent them")
    if st.kind in NUMERIC_KINDS and round(float(got), 2) not in T.number_forms(message):
        raise InvalidProposal(f"{got!r} is not an amount the customer wrote")
    return got


def _check_choice(st: SlotType, value: str, candidates: list[dict[str, Any]]) -> Any:
    if DECLINE.match(value):
        return False
    picked = resolve_reference(value, candidates, pronouns=False) if candidates else None
    if picked is None:
        names = ", ".join(str(c.get("name") or c.get("sku")) for c in candidates) or "(nothing was offered)"
        raise InvalidProposal(f"{value!r} is not one of the offered items: {names}")
    return picked.get("name") or picked.get("sku")


def _alnum(text: str) -> str:
    return re.sub(r"[^0-9a-z@.]", "", text.lower())


def _written(st: SlotType, raw: str, got: Any, message: str) -> bool:
    """Whether the customer wrote this value: as the model copied it, or in the slot's form (a phone number
    in its national digits too: "415 555 0199" is written where the slot's form is "+1 415-555-0199")."""
    said = _alnum(message)
    forms = {_alnum(raw), _alnum(str(got))}
    if st.kind == "phone":
        forms.add(_national_digits(str(got)))
    return any(form and form in said for form in forms)


def _national_digits(number: str) -> str:
    """A phone number's national digits ("+1 415-555-0199" -> "4155550199"); "" when it is not international."""
    if not number.startswith("+"):
        return ""
    import phonenumbers

    try:
        return str(phonenumbers.parse(number, None).national_number)
    except phonenumbers.NumberParseException:
        return ""


# ---------------------------------------------------------------------------- decisions and wording


def check_branch(pick: BranchPick, node: Node) -> ChooseBranch:
    """The branch a pick names.

    Raises:
        Abstain: the pick is null.
        InvalidProposal: the number is not one of the decision's branches.
    """
    if pick.choice is None:
        raise Abstain()
    n = len(node.branches)
    if not 1 <= pick.choice <= n:
        raise InvalidProposal(f"choice {pick.choice} is not one of the branches 1-{n}")
    b = node.branches[pick.choice - 1]
    return ChooseBranch(node.id, b.target, b.condition)




def check_wording(wording: Wording, draft: str) -> Say:
    """A reworded reply after cleaning: not empty, not JSON, no unfilled template, not a novel.

    Facts are checked afterwards by the engine's grounding guard (``core.engine.grounding``).

    Raises:
        InvalidProposal: what is wrong with it.
    """
    text = clean_reply(wording.reply)
    if not text:
        raise InvalidProposal("the reply is empty once thinking and meta-talk are removed")
    if text.startswith("{") or PLACEHOLDER.search(text) and not PLACEHOLDER.search(draft):
        raise InvalidProposal("the reply must be plain text for the customer, with no JSON or {placeholders}")
    if len(text) > max(3 * len(draft), len(draft) + 400):
        raise InvalidProposal("the reply is much longer than the draft; say the same, no more")
    return Say(text)
