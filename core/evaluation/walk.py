"""The reference executor of a synthetic session: where the SOP is, what is known, run counts; it writes
each customer message with its scripted tool outcomes and the states it should lead to, by the failure rules
listed in :mod:`core.evaluation.generator`."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from core.evaluation import conditions as C
from core.evaluation.branches import BranchPlanner
from core.evaluation.input_spec import InputSpec
from core.evaluation.inputs import AMBIGUOUS, Phrasebook, opening
from core.evaluation.sop_context import SopContext
from core.sop.graph import SESSION_SLOTS, Node

MAX_RUNS = 3
EXTERNAL_KNOWLEDGE = "seek external knowledge"
END_COMPLETED = "END:completed"
END_GRACEFUL = "END:failed"
SOFT_TURN_LIMIT = 12  # after this many turns every answer is valid and every call succeeds
HARD_TURN_LIMIT = 40
ANSWER_KINDS = {  # weights of the input kinds at a question (paper §4: a large variation of inputs)
    "valid": 0.36, "typo": 0.14, "invalid_format": 0.10, "gibberish": 0.07, "chitchat_social": 0.04,
    "chitchat_offtopic": 0.05, "doubt": 0.12, "go_back": 0.12,
}
API_OUTCOMES = {"success": 0.72, "failure": 0.10, "timeout": 0.06, "invalid": 0.12}
FAILURE_TEXTS = ["api call failed", "HTTP 500: internal server error", "service unavailable",
                 "connection reset by peer", "upstream error 502", "the status service did not respond"]
INVALID_TEXTS = ["invalid {s}", "Invalid {s}: not found", "invalid {s} {v}", "the {s} is invalid", "{s} {v} is invalid"]


@dataclass
class Expected:
    """One state: the action the agent should take next, and what in the session called for it."""

    action: str
    cause: str


@dataclass
class TurnPlan:
    """One customer message with its scripted tool outcomes and the states it should lead to."""

    user: str
    kind: str
    tools: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    expected: list[Expected] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (tool, args it must carry)


class Walk:
    """The reference executor for one session: where the SOP is, what is known, run counts."""

    def __init__(self, ctx: SopContext, rng: random.Random, budget: int, customer_id: str | None) -> None:
        self.ctx = ctx
        self.sop = ctx.sop
        self.rng = rng
        self.book = Phrasebook(rng)
        self.budget = budget
        self.node: str | None = self.sop.start
        self.pending: str | None = None
        self.known: dict[str, Any] = {}
        if customer_id:
            self.known.update({k: customer_id for k in SESSION_SLOTS})
        self.attempts: dict[str, int] = {}
        self.answered: list[str] = []  # ask node ids, in the order they were answered
        self.plan: dict[str, int] = {}  # decision id -> branch index the latest observation leads to
        self.outcome: str | None = None
        self.turn = TurnPlan("", "")
        self.cause = ""
        self.notes: list[str] = []
        self.turn_count = 0
        self.branches = BranchPlanner(ctx, rng, self.plan, self.notes)

    # ------------------------------------------------------------------ turns

    def start(self) -> TurnPlan:
        clean = opening(self.rng, self.sop.title, self.sop.triggers)
        text = self.book.typo(clean) if self.rng.random() < 0.15 else clean
        self.known.update(self.ctx.volunteered(clean))  # what the customer meant, typos or not
        return self._turn(text, "opening", lambda: None)

    def answer(self) -> TurnPlan:
        node = self.sop.nodes[self.pending or ""]
        spec = self.ctx.spec(node)
        kind = self._answer_kind(spec)
        return getattr(self, f"_answer_{_family(kind)}")(node, spec, kind)

    def _turn(self, text: str, kind: str, act: Any) -> TurnPlan:
        self.turn_count += 1
        self.turn = TurnPlan(text, kind)
        self.cause = kind
        act()
        self.run()
        return self.turn

    def _answer_kind(self, spec: InputSpec) -> str:
        if self.turn_count >= SOFT_TURN_LIMIT:
            return "valid"
        weights = dict(ANSWER_KINDS)
        if spec.free:
            for k in ("invalid_format", "gibberish", "chitchat_social", "chitchat_offtopic"):
                weights.pop(k)
        if not self._go_back_targets():
            weights.pop("go_back")
        kinds = list(weights)
        return self.rng.choices(kinds, weights=[weights[k] for k in kinds])[0]

    def _answer_valid(self, node: Node, spec: InputSpec, kind: str) -> TurnPlan:
        polarity, among = self.branches.plan_answer(node)
        text, value = self.book.valid(spec, self.known, polarity=polarity, typos=kind == "typo", among=among)

        def act() -> None:
            for p in node.fills:
                self.known[p.name] = value
            self.answered.append(node.id)
            self.attempts.pop(node.id, None)
            self.pending, self.node = None, node.next

        return self._turn(text, kind, act)

    def _answer_invalid(self, node: Node, spec: InputSpec, kind: str) -> TurnPlan:
        if kind == "invalid_format":
            text = self.book.invalid(spec)
        elif kind == "gibberish":
            text = self.book.gibberish()
        else:
            text = self.book.chit_chat(spec, social=False)

        def act() -> None:
            self.pending, self.node = None, node.id

        return self._turn(text, kind, act)

    def _answer_social(self, node: Node, spec: InputSpec, kind: str) -> TurnPlan:
        return self._turn(self.book.chit_chat(spec, social=True), kind,
                          lambda: self.emit(node.label, "chitchat_social"))

    def _answer_doubt(self, node: Node, spec: InputSpec, kind: str) -> TurnPlan:
        titles = [t for t in self.ctx.kb_titles if not AMBIGUOUS.search(t)]
        text = self.book.doubt(spec, _related(titles, spec.subject))

        def act() -> None:
            self.emit(EXTERNAL_KNOWLEDGE, "doubt")
            self.emit(node.label, "doubt")

        return self._turn(text, kind, act)

    def _answer_go_back(self, node: Node, spec: InputSpec, kind: str) -> TurnPlan:
        targets = self._go_back_targets()
        latest = max(targets, key=lambda n: _last(self.answered, n.id))
        target = self.rng.choice(targets)
        subject = self.ctx.spec(target).subject
        named = self.rng.random() < 0.7 and subject and self._distinct(target, targets)
        if not named:
            target = latest
        text = self.book.go_back(subject if named else None)

        def act() -> None:
            for nid in self.sop.reachable(target.id):
                self.attempts.pop(nid, None)
            self._forget_from(target)
            self.pending, self.node = None, target.id

        return self._turn(text, kind, act)

    def _go_back_targets(self) -> list[Node]:
        current = self.pending
        return [self.sop.nodes[n] for n in dict.fromkeys(self.answered)
                if n != current and current in self.sop.reachable(n)]

    def _distinct(self, target: Node, targets: list[Node]) -> bool:
        """Whether the target's subject names it unmistakably among the answered questions."""
        mine = set(self.ctx.spec(target).subject.split())
        return all(not mine <= set(self.ctx.spec(o).subject.split()) for o in targets if o is not target)

    # ------------------------------------------------------------------ running the SOP

    def emit(self, action: str, cause: str = "") -> None:
        self.turn.expected.append(Expected(action, cause or self.cause))

    def run(self) -> None:
        """Execute steps until the SOP waits for the customer or ends (one turn's states)."""
        guard = 0
        while self.outcome is None and self.pending is None and guard < 200:
            guard += 1
            node = self.sop.node(self.node)
            if node is None or node.kind == "end":
                self.emit(END_COMPLETED)
                self.outcome = "completed"
                return
            if node.kind == "decision":
                self._decide(node)
                continue
            self._step(node)

    def _decide(self, node: Node) -> None:
        index = self.plan.pop(node.id, None)
        if index is None:
            index = len(node.branches) - 1
            self.notes.append(f"decision {node.label!r} reads no observation the generator wrote; took the last branch")
        self.node = node.branches[index].target

    def _step(self, node: Node) -> None:
        if node.asks and node.fills and all(p.optional or p.name in self.known for p in node.fills):
            # what was said decides
            self.branches.plan_chain(node.next, node, answer=self.known.get(node.fills[0].name))
            self.node = node.next  # already known: skipped, no state
            return
        if not self._count(node):
            return
        self.emit(node.label)
        if "api_call" in node.kinds:
            self._call(node)
            return
        if node.asks:
            self.pending = node.id
            return
        self.attempts.pop(node.id, None)
        self.node = node.next

    def _count(self, node: Node) -> bool:
        runs = self.attempts.get(node.id, 0)
        if runs >= MAX_RUNS:
            self.emit(END_GRACEFUL, "limit")
            self.outcome = "graceful"
            return False
        self.attempts[node.id] = runs + 1
        return True

    def _call(self, node: Node) -> None:
        """One call of the step's tool, its retries, and what follows from the scripted outcome."""
        while True:
            outcome = self._outcome(node)
            args = {p.name: self.known[p.name] for p in node.params if p.name in self.known}
            self.turn.calls.append((node.tool, self._exact_args(node, args)))
            if outcome == "success":
                self._success(node, args)
                return
            if outcome == "invalid":
                self._invalid(node)
                return
            self._script(node.tool, {"timeout": True} if outcome == "timeout"
                         else {"error": self.book.pick(FAILURE_TEXTS)})
            self.cause = f"api:{outcome}"
            if outcome == "timeout" and node.tool in self.ctx.changing:
                self.emit(END_GRACEFUL)  # it may have happened: never sent twice, the customer is told
                self.outcome = "graceful"
                return
            if not self._count(node):
                return
            self.emit(node.label)

    def _outcome(self, node: Node) -> str:
        weights = dict(API_OUTCOMES)
        if not self._invalid_params(node):
            weights.pop("invalid")
        calls = sum(len(v) for v in self.turn.tools.values())
        if self.turn_count >= SOFT_TURN_LIMIT or calls + 5 > self.budget:
            return "success"
        kinds = list(weights)
        return self.rng.choices(kinds, weights=[weights[k] for k in kinds])[0]

    def _invalid_params(self, node: Node) -> list[tuple[str, Node]]:
        """Params an "invalid input" error may name: exact values the customer gave, with their question."""
        out = []
        for p in node.params:
            asker = next((self.sop.nodes[a] for a in reversed(self.answered)
                          if any(f.name == p.name for f in self.sop.nodes[a].fills)), None)
            if asker is not None and self.ctx.spec(asker).exact:
                out.append((p.name, asker))
        return out

    def _success(self, node: Node, args: dict[str, Any]) -> None:
        constraints: dict[str, C.Constraint] = {}
        if not node.asks:
            constraints = self.branches.plan_chain(node.next, node)
        bound = self.ctx.data.bound_args(node.tool, args)
        if self.ctx.sop.format == "json":
            constraints = {k[len(node.result_key) + 1:]: c for k, c in constraints.items()
                           if k.startswith(node.result_key + ".")}
        wanted = {p for p in self.ctx.placeholders[node.id] if p not in self.known}  # what its message shows
        result = self.ctx.data.result(node.tool, constraints, bound, wanted, self.rng, self.known)
        self._script(node.tool, {"result": result})
        if isinstance(result, list) and result and all(isinstance(r, dict) and "name" in r for r in result):
            self.known["candidates"] = [r["name"] for r in result[:3]]
        self.cause = "api:success"
        if node.asks:
            self.pending = node.id  # api_call|ask_user_input: the question follows in the same run
            return
        self.attempts.pop(node.id, None)
        self.node = node.next

    def _invalid(self, node: Node) -> None:
        param, asker = self.rng.choice(self._invalid_params(node))
        named = self.ctx.data.bound_args(node.tool, {p.name: p.name for p in node.params if p.name in self.known})
        api_param = next((k for k, v in named.items() if v == param), param)  # the API names its own param
        words = self.book.pick([api_param, param]).replace("_", " ")
        text = self.book.pick(INVALID_TEXTS).replace("{s}", words).replace("{v}", str(self.known.get(param, "")))
        self._script(node.tool, {"error": text, "kind": "invalid_input"})
        self.cause = "api:invalid"
        if self.attempts.get(node.id, 0) >= MAX_RUNS:
            self.emit(END_GRACEFUL, "limit")
            self.outcome = "graceful"
            return
        self._forget_from(asker)
        self.node = asker.id

    def _forget_from(self, ask: Node) -> None:
        """The flow runs again from ``ask``: what it and every later question collected is forgotten."""
        for nid in self.sop.reachable(ask.id):
            later = self.sop.nodes[nid]
            for p in later.fills if later.asks else []:
                self.known.pop(p.name, None)

    def _script(self, tool: str, outcome: dict[str, Any]) -> None:
        self.turn.tools.setdefault(tool, []).append(outcome)

    def _exact_args(self, node: Node, args: dict[str, Any]) -> dict[str, Any]:
        """The args whose values the customer typed exactly (ids, emails, codes), keyed by tool param."""
        exact = {}
        for name, value in args.items():
            asker = next((n for n in self.sop.nodes.values() if n.asks and any(f.name == name for f in n.fills)), None)
            if name in SESSION_SLOTS or (asker is not None and self.ctx.spec(asker).exact):
                exact[name] = value
        return self.ctx.data.bound_args(node.tool, exact) if exact else {}


def _family(kind: str) -> str:
    return {"valid": "valid", "typo": "valid", "invalid_format": "invalid", "gibberish": "invalid",
            "chitchat_offtopic": "invalid", "chitchat_social": "social", "doubt": "doubt",
            "go_back": "go_back"}[kind]


def _last(items: list[str], item: str) -> int:
    return max((i for i, x in enumerate(items) if x == item), default=-1)


def _related(titles: list[str], subject: str) -> list[str]:
    words = {w for w in re.findall(r"[a-z]+", subject.lower()) if len(w) > 3}
    return [t for t in titles if words & set(re.findall(r"[a-z]+", t.lower()))]
