"""The model proposes, the code decides: what a model may answer, and the checks its answer must pass.

Three wire schemas (pydantic models sent as ``response_format``): ``Reading`` (one customer message),
``BranchPick`` (one decision of the SOP) and ``Wording`` (the reply in the customer's language). A
parsed answer becomes typed commands (``StartFlow``, ``SetSlot``, ``SearchKnowledge``, ``Dialogue``,
``ChooseBranch``, ``Say``) only after it passed the checks against the compiled SOP, the GAR's slot
definitions and the tools the workspace has. A failed check raises ``InvalidProposal`` with a message
the model gets once to correct itself; a model that says it cannot tell raises ``Abstain``. Either
way the rule brain decides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from core import text as T
from core.brains.cleaning import clean_reply, normalise_code
from core.slots import DECLINE, SlotType, extract, resolve_reference, validate
from core.sop.graph import Node

# ---------------------------------------------------------------------------- wire schemas

Act = Literal["answer", "new_request", "question", "go_back", "cancel", "greeting", "thanks", "other", "unclear"]


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
    """One value the message gives for a slot the pending question fills."""

    name: str
    value: str


class Reading(_Wire):
    """How a customer message reads against the running SOP."""

    act: Act
    sop: str | None
    slots: list[SlotValue]
    search_query: str | None
    language: str | None


class BranchPick(_Wire):
    """Which branch of a decision the observation satisfies."""

    choice: int | None


class Wording(_Wire):
    """The reply as the customer should read it."""

    reply: str


# ---------------------------------------------------------------------------- outcomes


class InvalidProposal(Exception):  # noqa: N818 - a control-flow signal, not an error of the engine
    """A model's answer broke a rule; the message is sent back to the model once."""


class Abstain(Exception):  # noqa: N818 - a control-flow signal
    """The model says it cannot tell: the rules decide, without a retry."""


@dataclass(frozen=True)
class Command:
    """A checked instruction from a model's answer (for the trace)."""

    kind: ClassVar[str] = "command"

    def as_dict(self) -> dict[str, Any]:
        """JSON form for the trace."""
        return {"command": self.kind, **{k: v for k, v in self.__dict__.items()}}


@dataclass(frozen=True)
class StartFlow(Command):
    """Start (or return to) an SOP."""

    kind: ClassVar[str] = "start_flow"
    sop: str


@dataclass(frozen=True)
class SetSlot(Command):
    """A value for a slot of the pending question."""

    kind: ClassVar[str] = "set_slot"
    name: str
    value: Any


@dataclass(frozen=True)
class SearchKnowledge(Command):
    """A tool request: search the knowledge base for the customer's question."""

    kind: ClassVar[str] = "search_knowledge"
    tool: str
    query: str


@dataclass(frozen=True)
class Dialogue(Command):
    """What the message does in the dialogue (answer, question, go_back, cancel, greeting, thanks, other)."""

    kind: ClassVar[str] = "dialogue"
    act: str


@dataclass(frozen=True)
class ChooseBranch(Command):
    """The next step after a decision."""

    kind: ClassVar[str] = "choose_branch"
    node: str
    target: str
    condition: str | None


@dataclass(frozen=True)
class Say(Command):
    """A message to the customer (checked against the tool results by the grounding guard)."""

    kind: ClassVar[str] = "say"
    text: str


# ---------------------------------------------------------------------------- checking a reading

KB_TOOL = "knowledge_base.search"
COPIED_KINDS = {"id", "email", "digits", "phone"}  # values that must appear in the customer's words
NUMERIC_KINDS = {"money", "number"}


@dataclass
class ReadingScope:
    """What a reading of one message may refer to."""

    text: str
    sop_ids: list[str]
    pending: Node | None = None
    slot_types: dict[str, SlotType] = field(default_factory=dict)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    tools: frozenset[str] = frozenset()


@dataclass
class ReadingResult:
    """A checked reading: the dialogue act, the commands, and the language."""

    act: str
    commands: list[Command]
    language: str | None

    @property
    def slots(self) -> dict[str, Any]:
        return {c.name: c.value for c in self.commands if isinstance(c, SetSlot)}

    @property
    def start(self) -> str | None:
        return next((c.sop for c in self.commands if isinstance(c, StartFlow)), None)

    @property
    def search_query(self) -> str:
        return next((c.query for c in self.commands if isinstance(c, SearchKnowledge)), "")


def check_reading(reading: Reading, scope: ReadingScope) -> ReadingResult:
    """The commands a reading stands for, after every check.

    Raises:
        Abstain: the model could not tell.
        InvalidProposal: an unknown SOP, a slot the pending question does not fill, a value of the
            wrong form or one the customer never wrote, an answer when nothing is pending.
    """
    if reading.act == "unclear":
        raise Abstain()
    commands: list[Command] = [Dialogue(reading.act)]
    if reading.act == "new_request":
        if not reading.sop or reading.sop not in scope.sop_ids:
            known = ", ".join(scope.sop_ids) or "(none)"
            raise InvalidProposal(f"sop {reading.sop!r} is not one of the SOPs: {known}")
        commands.append(StartFlow(reading.sop))
    if reading.slots:
        if reading.act != "answer":
            raise InvalidProposal(f"slots belong to an answer, not to act {reading.act!r}")
        commands += _check_slots(reading.slots, scope)
    elif reading.act == "answer" and (scope.pending is None or not scope.pending.fills):
        raise InvalidProposal("no question is pending, so the message cannot be an answer; use new_request, "
                              "question, greeting, thanks or other")
    if reading.act == "question" and reading.search_query and reading.search_query.strip():
        query = " ".join(reading.search_query.split())
        if len(query) > 300:
            raise InvalidProposal("search_query is longer than 300 characters; write a short search query")
        if KB_TOOL in scope.tools:
            commands.append(SearchKnowledge(KB_TOOL, query))
    return ReadingResult(reading.act, commands, normalise_code(reading.language))


def _check_slots(values: list[SlotValue], scope: ReadingScope) -> list[Command]:
    node = scope.pending
    fills = [p.name for p in node.fills] if node is not None else []
    out: list[Command] = []
    for sv in values:
        if sv.name not in fills:
            allowed = ", ".join(fills) or "nothing (no question is pending)"
            raise InvalidProposal(f"slot {sv.name!r} is not asked for now; the pending question fills: {allowed}")
        st = scope.slot_types.get(sv.name) or SlotType(sv.name, "text")
        out.append(SetSlot(sv.name, check_value(st, sv.value, scope.text, scope.candidates,
                                                node.expects if node is not None else "")))
    return out


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
    if st.kind in COPIED_KINDS and _alnum(str(got)) not in _alnum(message):
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


PLACEHOLDER = re.compile(r"\{(context\.)?[A-Za-z_][\w.]*\}")


def check_wording(wording: Wording, draft: str) -> Say:
    """A reworded reply after cleaning: not empty, not JSON, no unfilled template, not a novel.

    Facts are checked afterwards by the engine's grounding guard (``core.grounding``).

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
