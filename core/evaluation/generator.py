"""Synthetic sessions (paper §4): walk an SOP with sampled customer inputs and API outcomes, and
write down the agent's expected next action at every state.

The expected actions come from three things only: the compiled SOP graph, the failure rules
below, and the generator's own labels (which kind of input it wrote, which API outcome and which
branch it scripted). The brain's interpretation code is never consulted, so a brain cannot agree
with itself into a good score.

Failure rules (ARCHITECTURE.md §3 and the paper §3), the reference the agent is graded against:

- A valid answer fills the step's slots; the flow continues (a branch that reads the answer
  follows the label the answer was written for).
- An invalid answer (wrong format, gibberish, off-topic chit-chat) fails validation: the same
  question is asked again, and that counts as another run of the step.
- Greetings, thanks and frustration get a social reply and the question again (not a run).
- A question instead of an answer is a doubt: seek external knowledge, then the pending
  question again (not a run).
- A request to go back returns to the named earlier question (else the latest answered one);
  its slots and those of every step after it are cleared and those steps count afresh.
- An API failure or a timeout: the same call again, at once (another run).
- An "invalid input" error: back to the question that filled the named param (else the latest
  answered one), forgetting what it and every later question collected; the call's run count is
  kept, and when the call has already run three times the goal ends gracefully instead.
- A step about to run a fourth time without the flow getting past it ends the goal gracefully.
- The opening message fills the free-text slots it describes (when it says more than the SOP's
  title: two words beyond it, or one in a question; "I need help: fix a device problem" describes
  nothing) and any self-identifying value it contains (an amount, a listed category or brand, an
  email, an id of the expected shape).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from core.engine.build import Workspace
from core.evaluation import conditions as C
from core.evaluation.data import DataIndex, Table
from core.evaluation.inputs import AMBIGUOUS, InputSpec, Phrasebook, opening, read_spec, spec_from_declared
from core.sop.graph import SESSION_SLOTS, Node, Sop

PLAIN_WORDS = frozenset("""
a an the i me my we our you your it is are be to of in on at for with about and or but so this that
hi hello hey good morning there please help need want like can could would will just can you
""".split())
"""Greetings, pronouns and asking words: an opening made only of these and the SOP's title describes nothing."""

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
ROOT_REF = re.compile(r"\{\s*(?:context\.)?([A-Za-z_]\w*)")  # the slot a template reference starts with


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


@dataclass
class SessionPlan:
    """A whole synthetic session for one SOP."""

    index: int
    sop: str
    customer_id: str | None
    turns: list[TurnPlan] = field(default_factory=list)
    outcome: str = ""  # completed | graceful
    notes: list[str] = field(default_factory=list)

    @property
    def states(self) -> int:
        return sum(len(t.expected) for t in self.turns)


class SopContext:
    """What the generator knows about one SOP: input specs, branch readings, placeholders."""

    def __init__(self, sop: Sop, ws: Workspace, data: DataIndex, kb_titles: list[str]) -> None:
        self.sop = sop
        self.data = data
        self.kb_titles = kb_titles
        models = sorted({re.sub(r"\s*\(.*?\)", "", n).strip() for n in _item_names(ws)})
        categories = list(ws.vocab.categories)
        texts = [t.rstrip("?.!") for t in sop.triggers if not t.strip().endswith("?")]
        # what a valid answer is: the type the author declared, else the one lint and the studio show as
        # inferred when it is a definite kind (a date, a phone number, one of listed values); free text is
        # phrased by the generator's own reading of the step
        declared = {name: st.declared or _declaration(st) for name, st in ws.types.get(sop.id, {}).items()
                    if st.declared or st.kind in DEFINITE_KINDS}
        values: dict[str, list[str]] = {}
        if ws.catalog is not None and any(d.lower().startswith("column") for d in declared.values()):
            inv = ws.files.config.inventory
            values = ws.catalog.column_values(inv.columns if inv else None)
        values["category"] = categories

        def spec(n: Node) -> InputSpec:
            slot = n.fills[0].name if n.fills else ""
            if slot in declared:  # the author said what a valid answer is
                return spec_from_declared(n, slot, declared[slot], models, values)
            return read_spec(n, categories, models, texts)

        self.specs = {n.id: spec(n) for n in sop.nodes.values() if n.asks}
        self.conds = {n.id: [None if b.condition is None or b.expr else C.read_condition(b.condition)
                             for b in n.branches] for n in sop.nodes.values() if n.kind == "decision"}
        slots = set(sop.slot_names())
        self.placeholders = {n.id: sorted(set(ROOT_REF.findall(n.message)) - slots) for n in sop.nodes.values()}
        self.brands = [b.lower() for b in ws.vocab.brands]
        self.changing = {name for name, tool in ws.tools.items() if tool.spec.side_effects}  # never re-sent

    def spec(self, node: Node) -> InputSpec:
        return self.specs[node.id]

    def _describes(self, low: str) -> bool:
        title = {w[:5] for w in re.findall(r"[a-z]+", self.sop.title.lower())}
        shared: dict[str, int] = {}  # words most trigger examples use: how customers ask, not what happened
        for trigger in self.sop.triggers:
            for w in {w[:5] for w in re.findall(r"[a-z]+", trigger.lower())}:
                shared[w] = shared.get(w, 0) + 1
        title |= {w for w, n in shared.items() if n >= max(2, len(self.sop.triggers) / 2)}
        extra = [w for w in re.findall(r"[a-z][a-z']*", low)
                 if w not in PLAIN_WORDS and "'" not in w and w[:5] not in title]
        polite = re.match(r"\s*(can|could|would|will) you\b", low)  # a request put as a question
        return len(extra) >= 2 or (bool(extra) and "?" in low and not polite)

    def volunteered(self, text: str) -> dict[str, Any]:
        """Slots an opening message fills, by the generator's reading (see the module's rules)."""
        found: dict[str, Any] = {}
        low = text.lower()
        for nid, spec in self.specs.items():
            for p in self.sop.nodes[nid].fills:
                value = self._value_in(spec, text, low)
                if value is not None:
                    found.setdefault(p.name, value)
        return found

    def _value_in(self, spec: InputSpec, text: str, low: str) -> Any:
        if spec.kind == "text":
            return text if self._describes(low) else None
        if spec.kind == "money":
            m = re.search(r"(?<![\w-])(\d[\d,]*(?:\.\d+)?)\s*(k)?\b", low)
            return float(m.group(1).replace(",", "")) * (1000 if m.group(2) else 1) if m else None
        if spec.kind == "option":
            return next((v for v in spec.vocab if re.search(rf"\b{re.escape(v.lower())}\b", low)), None)
        if spec.kind == "category":
            return next((v for v in spec.vocab if re.search(rf"\b{re.escape(v.lower())}(e?s)?\b", low)), None)
        if spec.kind == "model":
            return next((b for b in self.brands if re.search(rf"\b{re.escape(b)}\b", low)), None)
        if spec.kind == "email":
            m = re.search(r"[\w.+-]+@[\w-]+(\.[\w-]+)+", text)
            return m.group(0) if m else None
        if spec.kind == "id" and spec.prefix:
            m = re.search(rf"\b{re.escape(spec.prefix)}[A-Z0-9]+\b", text)
            return m.group(0).upper() if m else None
        return None


DEFINITE_KINDS = frozenset({"date", "phone", "email", "money", "number", "option", "boolean", "digits", "id"})


def _declaration(st: Any) -> str:
    """A slot type the workspace inferred (lint's info line shows it to the author), written as its
    declaration would be: every listed value, an id's example, a code's length."""
    if st.kind == "option":
        return f"one_of({', '.join(st.vocab)})"
    if st.kind == "id":
        return f"id({st.example})" if st.example else "id"
    if st.kind == "digits":
        return f"code({st.digits})" if st.digits else "code"
    return "yes_no" if st.kind == "boolean" else str(st.kind)


def _item_names(ws: Workspace) -> list[str]:
    if ws.catalog is None or "name" not in ws.catalog.frame:
        return []
    return [str(v) for v in ws.catalog.frame["name"].dropna()]


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
        polarity, among = self._plan_answer(node)
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
            self._plan_chain(node.next, node, answer=self.known.get(node.fills[0].name))  # what was said decides
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
            constraints = self._plan_chain(node.next, node)
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

    # ------------------------------------------------------------------ branches

    def _plan_chain(self, start: str | None, source: Node, answer: Any = None) -> dict[str, C.Constraint]:
        """Choose a branch for every decision that reads this observation; return what it must satisfy.
        For a question, the decisions read its answer: one of the values its type lists, or ``answer``
        when it is already known."""
        chosen: list[C.Constraint] = []
        nid = start
        guess = self.ctx.data.guess(source.tool) if "api_call" in source.kinds else C.FieldGuess([], [], {}, False)
        table = self.ctx.data.table_for(source.tool) if "api_call" in source.kinds else None
        listed = self.ctx.spec(source).vocab if source.asks and "api_call" not in source.kinds else []
        while (node := self.sop.node(nid)) is not None and node.kind == "decision":
            options = []
            for i in range(len(node.branches)):
                extra = self._own_fields(source, self._branch_constraints(node, i, guess))
                merged = C.merge(chosen + extra)
                if all(_answerable(c, answer, listed) if source.asks and table is None
                       else C.feasible(c, _domain(table, c.field, self.sop)) for c in merged.values()):
                    options.append((i, extra))
            if not options:
                self.notes.append(f"no observation satisfies any branch of {node.label!r}")
                return C.merge(chosen)
            index, extra = self.rng.choice(options)
            chosen += extra
            self.plan[node.id] = index
            nid = node.branches[index].target
        return C.merge(chosen)

    def _own_fields(self, source: Node, constraints: list[C.Constraint]) -> list[C.Constraint]:
        """A text SOP's written condition names the result by its step's words (``loan.holds`` after
        "look up the loan") or ``result``: the field of the observation it is about (``holds``)."""
        if self.sop.format == "json":
            return constraints
        names = source.result_names() | {"result"}
        for c in constraints:
            head, _, rest = c.field.partition(".")
            if rest and head in names:
                c.field = rest
        return constraints

    def _branch_constraints(self, node: Node, index: int, guess: C.FieldGuess) -> list[C.Constraint]:
        """Branch ``index`` holds and every branch before it fails (the agent takes the first that holds)."""
        out: list[C.Constraint] = []
        conds = self.ctx.conds[node.id]
        for i in range(index + 1):
            want = i == index
            branch = node.branches[i]
            if branch.condition is None:
                continue
            if branch.expr:
                out += C.expression_constraints(branch.condition, want, self.rng)
            else:
                cond = conds[i]
                assert cond is not None
                out.append(C.constrain(cond, want, guess))
        return out

    def _plan_answer(self, node: Node) -> tuple[bool | None, list[str] | None]:
        """For a question a branch depends on: the polarity its answer must have (yes/no, choose/decline)
        and, for a question with listed values, those that lead down the chosen branch (None: any)."""
        merged = self._plan_chain(node.next, node)
        truths = [c.truth for c in merged.values() if c.truth is not None]
        listed = self.ctx.spec(node).vocab
        among = None
        if listed and any(c.allowed is not None or c.banned for c in merged.values()):
            among = [v for v in listed if all(_answerable(c, v, listed) for c in merged.values())]
        return (truths[0] if truths else None), among or None


def _answerable(c: C.Constraint, answer: Any, listed: list[str]) -> bool:
    """Whether an answer to a question can meet a constraint: ``answer`` itself when known (a yes/no as a
    truth, a value by its words), else some value the question lists (any, when it lists none)."""
    if c.conflict:
        return False
    if c.numeric:
        return c.low <= c.high
    if c.truth is not None:
        return answer is None or not isinstance(answer, bool) or answer == c.truth
    if answer is not None:
        return _meets(c, str(answer))
    return not listed or any(_meets(c, v) for v in listed)


def _meets(c: C.Constraint, value: str) -> bool:
    """A categorical constraint met by a value, word for word ("lost" meets "lost or stolen")."""
    key = C.norm(value)
    words = set(key.split())
    allowed = c.allowed is None or any(key == a or set(a.split()) <= words for a in c.allowed)
    return allowed and not any(key == b or set(b.split()) <= words for b in c.banned)


def _domain(table: Table | None, name: str, sop: Sop) -> list[str]:
    if table is None:
        return []
    column = name.split(".", 1)[1] if sop.format == "json" and "." in name else name
    return table.domain(column) if column in table.columns else []


def _family(kind: str) -> str:
    return {"valid": "valid", "typo": "valid", "invalid_format": "invalid", "gibberish": "invalid",
            "chitchat_offtopic": "invalid", "chitchat_social": "social", "doubt": "doubt",
            "go_back": "go_back"}[kind]


def _last(items: list[str], item: str) -> int:
    return max((i for i, x in enumerate(items) if x == item), default=-1)


def _related(titles: list[str], subject: str) -> list[str]:
    words = {w for w in re.findall(r"[a-z]+", subject.lower()) if len(w) > 3}
    return [t for t in titles if words & set(re.findall(r"[a-z]+", t.lower()))]


# ---------------------------------------------------------------------------- sessions


def generate_sessions(ws: Workspace, sessions: int, seed: int) -> list[SessionPlan]:
    """``sessions`` synthetic sessions spread evenly over the workspace's SOPs, reproducible by seed."""
    if not ws.sops:
        return []
    data = DataIndex(ws)
    titles = [c.title for c in ws.kb.chunks] if ws.kb is not None else []
    contexts = {s.id: SopContext(s, ws, data, sorted(set(titles))) for s in ws.sops}
    budget = int(ws.files.config.settings.get("max_steps_per_turn", 8))
    order = sorted(contexts)
    plans = []
    for i in range(sessions):
        rng = random.Random(f"{seed}:{i}")
        ctx = contexts[order[i % len(order)]]
        plans.append(_session(i, ctx, rng, budget))
    return plans


def unexercised(sops: dict[str, Sop], plans: list[SessionPlan]) -> dict[str, list[str]]:
    """Per SOP with sessions, the steps no generated session reached (in the SOP's order): what the
    evaluation says nothing about. A step behind a condition the generator cannot satisfy shows here."""
    reached: dict[str, set[str]] = {}
    for plan in plans:
        seen = reached.setdefault(plan.sop, set())
        seen.update(e.action for turn in plan.turns for e in turn.expected)
    out: dict[str, list[str]] = {}
    for sop_id, seen in sorted(reached.items()):
        sop = sops.get(sop_id)
        if sop is None:
            continue
        steps = sorted((n for n in sop.nodes.values() if n.kind == "action"), key=lambda n: (n.line, n.id))
        missing = [n.label for n in steps if n.label not in seen]
        if missing:
            out[sop_id] = list(dict.fromkeys(missing))
    return out


def _session(index: int, ctx: SopContext, rng: random.Random, budget: int) -> SessionPlan:
    customer = _customer(ctx, index)
    walk = Walk(ctx, rng, budget, customer)
    plan = SessionPlan(index, ctx.sop.id, customer)
    plan.turns.append(walk.start())
    while walk.outcome is None and walk.pending is not None and len(plan.turns) < HARD_TURN_LIMIT:
        plan.turns.append(walk.answer())
    plan.outcome = walk.outcome or "unfinished"
    plan.notes = walk.notes
    return plan


def _customer(ctx: SopContext, index: int) -> str | None:
    """The signed-in customer when a step uses it: one per session, so no preference carries over."""
    uses = any(SESSION_SLOTS & {p.name for p in n.params} for n in ctx.sop.nodes.values())
    return f"eval-customer-{index:05d}" if uses else None
