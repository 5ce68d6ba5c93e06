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

This module holds the wire schemas, the outcomes of a check and the checks of a branch pick and a wording; a
reading is checked in :mod:`core.understanding.brains.reading_checks`, its slot values in
:mod:`core.understanding.brains.value_checks`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from core.sop.expr_templates import TEMPLATE_REF as PLACEHOLDER
from core.sop.graph import Node
from core.understanding.brains.cleaning import clean_reply

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
