"""Branches of a synthetic session: for the decisions that read an observation or a question's answer, the
branch the session goes down and what the observation (or answer) must satisfy for it."""

from __future__ import annotations

import random
from typing import Any

from core.evaluation import conditions as C
from core.evaluation.data import Table
from core.evaluation.sop_context import SopContext
from core.sop.graph import Node, Sop


class BranchPlanner:
    """Chooses the branches a walk (:class:`core.evaluation.walk.Walk`) takes; it shares the walk's random
    source, its plan of decisions and its notes."""

    def __init__(self, ctx: SopContext, rng: random.Random, plan: dict[str, int], notes: list[str]) -> None:
        self.ctx = ctx
        self.sop = ctx.sop
        self.rng = rng
        self.plan = plan  # decision id -> branch index the latest observation leads to
        self.notes = notes

    def plan_chain(self, start: str | None, source: Node, answer: Any = None) -> dict[str, C.Constraint]:
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

    def plan_answer(self, node: Node) -> tuple[bool | None, list[str] | None]:
        """For a question a branch depends on: the polarity its answer must have (yes/no, choose/decline)
        and, for a question with listed values, those that lead down the chosen branch (None: any)."""
        merged = self.plan_chain(node.next, node)
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
