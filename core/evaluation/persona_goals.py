"""A simulated customer's goal (:mod:`core.evaluation.personas`): what they want from one SOP, the values
they know and the end it should reach, taken from one reference walk of the SOP (:mod:`core.evaluation.walk`)
with every answer valid and every tool call succeeding; and the values a manner words differently."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from core.evaluation.data import DataIndex
from core.evaluation.input_spec import InputSpec
from core.evaluation.sop_context import SopContext
from core.evaluation.walk import TurnPlan, Walk
from core.sop.graph import SESSION_SLOTS, Node
from core.workspace.params import bind_params

COMPARED = frozenset({"email", "otp", "phone", "id", "username", "money", "number", "category", "option", "model"})
CHANGEABLE = frozenset({"email", "otp", "phone", "id", "money", "number", "category", "option", "model"})


@dataclass
class Answer:
    """A value the customer knows for one ask step of the SOP."""

    node: str  # the ask step's node id
    slots: list[str]
    kind: str  # the generator's reading of a valid answer (email, money, yesno, choice, ...)
    subject: str  # what it is, in words ("budget", "order id")
    value: Any
    said: str = ""  # how the reference customer said it
    opened: bool = False  # given by the request itself, never asked for

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.node, "slots": self.slots, "kind": self.kind, "subject": self.subject,
                "value": self.value, "in_request": self.opened}


@dataclass
class Goal:
    """What a customer wants from one SOP: the request, the values they know, and the end it should reach."""

    sop: str
    title: str
    language: str
    request: str
    answers: list[Answer]
    steps: list[str]  # the steps (not questions) the SOP should run for this customer, in order
    end: str  # the goal's outcome at the end: completed | failed
    script: dict[str, list[dict[str, Any]]]  # the tool results of the customer's world, in call order
    calls: list[tuple[str, dict[str, Any]]]  # (tool, the args it must carry) for every call the SOP makes
    kinds: dict[str, str]  # tool param -> the kind of value it is compared as
    customer_id: str | None = None

    def answer(self, node_id: str) -> Answer | None:
        return next((a for a in self.answers if a.node == node_id), None)

    def to_dict(self) -> dict[str, Any]:
        return {"sop": self.sop, "language": self.language, "request": self.request,
                "values": [a.to_dict() for a in self.answers], "steps": self.steps, "end": self.end,
                "calls": [{"tool": t, "args": a} for t, a in self.calls]}


class _GoalWalk(Walk):
    """The generator's reference walk with every answer valid and every call succeeding, opened by one
    chosen request, remembering each answer and the args every call must carry."""

    def __init__(self, ctx: SopContext, rng: random.Random, budget: int, customer_id: str | None,
                 request: str) -> None:
        super().__init__(ctx, rng, budget, customer_id)
        self.request = request
        self.opened: dict[str, Any] = {}
        self.said: dict[str, str] = {}
        self.param_kinds: dict[str, str] = {}

    def start(self) -> TurnPlan:
        self.opened = self.ctx.volunteered(self.request)
        self.known.update(self.opened)
        return self._turn(self.request, "opening", lambda: None)

    def _answer_kind(self, spec: InputSpec) -> str:
        return "valid"

    def _outcome(self, node: Node) -> str:
        return "success"

    def _answer_valid(self, node: Node, spec: InputSpec, kind: str) -> TurnPlan:
        turn = super()._answer_valid(node, spec, kind)
        self.said[node.id] = turn.user
        return turn

    def _exact_args(self, node: Node, args: dict[str, Any]) -> dict[str, Any]:
        """The args a call must carry, by tool param: the values of kinds that can be compared (ids, amounts,
        listed options...; not free text, which a search joins into its query)."""
        impl = self.ctx.data.ws.tools.get(node.tool)
        mapping = bind_params(impl.spec.params, list(args)) if impl is not None else {k: k for k in args}
        out: dict[str, Any] = {}
        for param, slot in mapping.items():
            kind = "id" if slot in SESSION_SLOTS else self._kind(slot)
            named = param == slot or bool(set(param.split("_")) & set(slot.split("_")))  # not "k" <- a model
            if kind in COMPARED and named:
                out[param] = args[slot]
                self.param_kinds[param] = kind
        return out

    def _kind(self, slot: str) -> str:
        asker = next((n for n in self.sop.nodes.values() if n.asks and any(f.name == slot for f in n.fills)), None)
        return self.ctx.spec(asker).kind if asker is not None else ""


def goal_for(ctx: SopContext, request: str, language: str, rng: random.Random, budget: int,
             customer_id: str | None) -> Goal:
    """The goal of a customer who opens with ``request`` (one reference walk of the SOP)."""
    walk = _GoalWalk(ctx, rng, budget, customer_id, request)
    turns = [walk.start()]
    while walk.outcome is None and walk.pending is not None and len(turns) < 40:
        turns.append(walk.answer())
    sop = ctx.sop
    answers: list[Answer] = []
    for nid in [*dict.fromkeys(walk.answered), *(n for n in sop.nodes if n not in walk.answered)]:
        node = sop.nodes[nid]
        names = [p.name for p in node.fills if not p.optional or p.name in walk.known]
        if not node.asks or not names or not all(n in walk.known for n in names):
            continue
        spec = ctx.spec(node)
        answers.append(Answer(nid, names, spec.kind, spec.subject or names[0].replace("_", " "),
                              walk.known[names[0]], walk.said.get(nid, ""), nid not in walk.answered))
    asks = {n.label for n in sop.nodes.values() if n.asks}
    actions = [e.action for t in turns for e in t.expected]
    steps = list(dict.fromkeys(a for a in actions if a not in asks and ":" not in a))
    script: dict[str, list[dict[str, Any]]] = {}
    for t in turns:
        for tool, outcomes in t.tools.items():
            script.setdefault(tool, []).extend(_whole_row(ctx.data, tool, o) for o in outcomes)
    return Goal(sop.id, sop.title or sop.id, language, request, answers, steps,
                "failed" if walk.outcome == "graceful" else "completed", script,
                [(tool, args) for t in turns for tool, args in t.calls], walk.param_kinds, customer_id)


def _whole_row(data: DataIndex, tool: str, outcome: dict[str, Any]) -> dict[str, Any]:
    """A scripted result of a table-backed tool with the rest of a table row that has its values (the
    reference walk keeps only the fields its branches read; the customer's world has the whole row, so a
    message that shows another field shows a real one)."""
    result = outcome.get("result")
    table = data.table_for(tool) if isinstance(result, dict) else None
    if table is None or not isinstance(result, dict):
        return outcome
    fits = [r for r in table.rows if all(str(r.get(k, v)).lower() == str(v).lower() for k, v in result.items()
                                         if k in table.columns and k not in data.params_of(tool))]
    if not fits:
        return outcome
    row = {k: _typed(v) for k, v in fits[0].items() if v != "" and k not in result}
    return {**outcome, "result": {**result, **row}}


def _typed(text: str) -> Any:
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return float(text) if re.fullmatch(r"-?\d+\.\d+", text) else text


def up_front(a: Answer) -> bool:
    return not a.opened and a.kind not in ("yesno", "choice")


def decoy_answer(goal: Goal) -> Answer | None:
    """The value a mind-changing customer first gives wrongly, to take it back at the next question: one
    said in the request (where its words can be swapped) or asked for before another question."""
    said = [a for a in goal.answers if a.opened and whole_word(bare(a)).search(goal.request)]
    said += [a for a in goal.answers if not a.opened]
    asked = [i for i, a in enumerate(said) if not a.opened]
    return next((a for i, a in enumerate(said) if a.kind in CHANGEABLE and any(j > i for j in asked)), None)


def whole_word(text: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(text)}(?!\w)", re.I)


def bare(answer: Answer) -> str:
    """The value alone, as a customer types it."""
    value = answer.value
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).lower() if answer.kind == "category" else str(value)
