"""Branch conditions read backwards: which observation makes a chosen branch the one to take.

The synthetic generator picks a branch first (its label), then builds an API result or a
reply that satisfies that branch and fails every branch listed before it. The expected next
step follows from the label. Nothing here decides a branch from an observation: that is the
brain's job, and the evaluator must not grade the brain with the brain's own reading.

Plain-text conditions (paper style) are read into :class:`Cond`; JSON expressions are solved
from their syntax tree (``core.sop.expr.parse``).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from dataclasses import field as default
from typing import Any

from core.sop import expr

LEAD = re.compile(r"^(?:if|when|in case|else if|elif)\s+", re.I)
FILLER = re.compile(r"^(?:its|it's|it is|it was|the status is|status is|they are|the result is)\s+", re.I)
COMPARISONS = [
    (r"less than or equal to|at most|no more than|up to|within|<=|≤", "<="),
    (r"greater than or equal to|at least|no less than|>=|≥", ">="),
    (r"less than|fewer than|under|below|<", "<"),
    (r"more than|greater than|over|above|exceeds|>", ">"),
    (r"equal to|equals|exactly|=", "=="),
]
NUMBER = r"\s*(\d+(?:\.\d+)?)\s*([a-z]+)?"
NEGATIVE = re.compile(r"\b(not|no|never|without|doesn't|does not|don't|do not|isn't|is not|can't|cannot|"
                      r"hasn't|has not|haven't|have not|didn't|did not|wasn't|was not)\b", re.I)
PROPERTY = re.compile(r"\b(has|have|had|found|exists?|available|can|could|chose|chosen|selected|picked|"
                      r"succeeded|passed|valid|verified|agreed|accepted|wants?|eligible)\b", re.I)
# Verbs of consent make a yes/no condition only with someone doing them ("if the customer confirms");
# a bare "approved" is more often a status value.
CONSENT = re.compile(r"\b(agree[sd]?|accept(?:s|ed)?|confirm(?:s|ed)?|approve[sd]?|consent(?:s|ed)?)\b", re.I)
# "if the patron says yes" / "if they answer no": what someone answered, whoever they are.
ANSWERED = re.compile(r"\b(?:says?|said|answers?|answered|repl(?:y|ies|ied)|respond(?:s|ed)?)\s+(?:with\s+)?"
                      r"(?:a\s+)?[\"']?(yes|no)\b", re.I)
# A consent verb in its third-person form has someone doing it ("the caller agrees", "the patron confirms").
CONSENTS = re.compile(r"\b(?:agrees|accepts|confirms|approves|consents)\b", re.I)
PERSON = {"it", "this", "that", "user", "customer", "seller", "buyer", "he", "she", "they", "you"}
YES_WORDS = {"yes", "true", "y"}
NO_WORDS = {"no", "false", "n"}
LIST_FIELD = "__list__"  # the observation is a list: a positive condition means non-empty


@dataclass(frozen=True)
class Cond:
    """One plain-text branch condition, read.

    ``kind`` is ``numeric`` (a comparison with a number), ``polar`` (a yes/no property,
    ``positive`` False when negated), ``field`` (``field`` is one of ``values``) or
    ``values`` (the observation is one of ``values``).
    """

    kind: str
    text: str
    op: str = ""
    number: float = 0.0
    unit: str = ""
    positive: bool = True
    values: tuple[str, ...] = ()
    field: str = ""


def read_condition(text: str) -> Cond:
    """Read a plain-text branch condition ("its active or on-hold", "less than or equal to 72 hrs")."""
    c = FILLER.sub("", LEAD.sub("", text.strip().rstrip(":").strip().lower())).strip()
    for pattern, op in COMPARISONS:
        m = re.search(rf"(?:{pattern}){NUMBER}", c)
        if m:
            return Cond("numeric", text, op=op, number=float(m.group(1)), unit=m.group(2) or "")
    if c in YES_WORDS | NO_WORDS:
        return Cond("polar", text, positive=c in YES_WORDS)
    said = ANSWERED.search(c)
    if said:
        return Cond("polar", text, positive=(said.group(1).lower() in YES_WORDS) != bool(NEGATIVE.search(c)))
    if CONSENTS.search(c):
        return Cond("polar", text, positive=not NEGATIVE.search(c))
    m = re.match(r"^(?:the\s+)?([a-z][a-z _-]*?)\s+(?:is|are|equals|was)\s+(not\s+)?(.+)$", c)
    if m and not set(m.group(1).split()) & PERSON and not PROPERTY.search(m.group(3)):
        return Cond("field", text, field=_snake(m.group(1)), values=_alternatives(m.group(3)),
                    positive=m.group(2) is None)
    if NEGATIVE.search(c) or PROPERTY.search(c) or (CONSENT.search(c) and set(c.split()) & PERSON):
        return Cond("polar", text, positive=not NEGATIVE.search(c))
    return Cond("values", text, values=_alternatives(c))


def _alternatives(text: str) -> tuple[str, ...]:
    return tuple(a.strip(" .") for a in re.split(r",|\bor\b|/", text) if a.strip(" ."))


def _snake(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.strip().lower()).strip("_")


def norm(value: Any) -> str:
    """A value compared loosely: lower case, ``_``/``-`` as spaces, single-spaced."""
    return " ".join(re.sub(r"[_\-]+", " ", str(value).lower()).split())


# ---------------------------------------------------------------------------- constraints


@dataclass
class Constraint:
    """What one field of the observation must be."""

    field: str
    allowed: set[str] | None = None  # normalised categorical values (None: any)
    banned: set[str] = default(default_factory=set)
    low: float = float("-inf")
    high: float = float("inf")
    truth: bool | None = None
    numeric: bool = False
    spellings: dict[str, str] = default(default_factory=dict)  # normalised -> as the SOP wrote it
    conflict: bool = False  # merged from constraints no value can meet (yes and no at once)


def constrain(cond: Cond, want: bool, fields: FieldGuess) -> Constraint:
    """The constraint that makes ``cond`` hold (``want``) or fail on the observation."""
    if cond.kind == "numeric":
        low, high = _interval(cond.op, cond.number, want)
        return Constraint(fields.numeric(cond.unit), low=low, high=high, numeric=True)
    if cond.kind == "polar":
        return Constraint(fields.polar(), truth=cond.positive == want)
    name = cond.field or fields.categorical(cond.values)
    spelled = {norm(v): v for v in cond.values}
    holds = want == (cond.positive if cond.kind == "field" else True)
    if holds:
        return Constraint(name, allowed=set(spelled), spellings=spelled)
    return Constraint(name, banned=set(spelled), spellings=spelled)


def _interval(op: str, n: float, want: bool) -> tuple[float, float]:
    inside = {"<=": (float("-inf"), n), "<": (float("-inf"), n - 1), ">=": (n, float("inf")),
              ">": (n + 1, float("inf")), "==": (n, n)}[op]
    if want:
        return inside
    if op == "==":
        return n + 1, float("inf")
    return (inside[1] + 1, float("inf")) if inside[0] == float("-inf") else (float("-inf"), inside[0] - 1)


def merge(constraints: list[Constraint]) -> dict[str, Constraint]:
    """Constraints on the same field combined (all must hold)."""
    out: dict[str, Constraint] = {}
    for c in constraints:
        have = out.get(c.field)
        if have is None:
            out[c.field] = Constraint(c.field, None if c.allowed is None else set(c.allowed), set(c.banned),
                                      c.low, c.high, c.truth, c.numeric, dict(c.spellings))
            continue
        have.spellings.update(c.spellings)
        if c.allowed is not None:
            have.allowed = set(c.allowed) if have.allowed is None else have.allowed & c.allowed
        have.banned |= c.banned
        have.low, have.high = max(have.low, c.low), min(have.high, c.high)
        if c.truth is not None and have.truth is not None and c.truth != have.truth:
            have.conflict = True
        have.truth = c.truth if c.truth is not None else have.truth
        have.numeric = have.numeric or c.numeric
    return out


def feasible(c: Constraint, domain: list[str]) -> bool:
    """Whether some value satisfies a merged constraint (within the data's values when known)."""
    if c.conflict:
        return False
    if c.numeric:
        return c.low <= c.high
    if c.truth is not None:
        return True
    return bool(candidates(c, domain)) or (not domain and c.allowed is None)


def candidates(c: Constraint, domain: list[str]) -> list[str]:
    """Values that satisfy a categorical constraint: the data's values when known, else the SOP's words."""
    spelled = {norm(d): str(d) for d in domain if str(d).strip()}
    if not spelled:
        spelled = {norm(v): v for v in sorted(c.spellings.values())}
    return [spelled[k] for k in sorted(spelled) if (c.allowed is None or k in c.allowed) and k not in c.banned]


def pick_number(c: Constraint, rng: random.Random) -> int:
    """A whole number inside the constraint's interval (boundaries included now and then)."""
    low = 0 if c.low == float("-inf") else int(c.low)
    high = low + 200 if c.high == float("inf") else int(c.high)
    if high < low:
        raise ValueError(f"empty interval for {c.field}")
    return rng.choice([low, high]) if rng.random() < 0.2 else rng.randint(low, high)


class FieldGuess:
    """Which observation field a condition is about, from the workspace's data (see data.py)."""

    def __init__(self, numeric_columns: list[str], yes_no_columns: list[str],
                 value_columns: dict[str, list[str]], listy: bool) -> None:
        self.numeric_columns = numeric_columns
        self.yes_no_columns = yes_no_columns
        self.value_columns = value_columns  # column -> its distinct values
        self.listy = listy

    def numeric(self, unit: str) -> str:
        for col in self.numeric_columns:
            if unit and any(_abbreviates(unit, w) for w in col.split("_")):
                return col
        return self.numeric_columns[0] if self.numeric_columns else "value"

    def polar(self) -> str:
        if self.listy:
            return LIST_FIELD
        return self.yes_no_columns[0] if self.yes_no_columns else "result"

    def categorical(self, values: tuple[str, ...]) -> str:
        wanted = {norm(v) for v in values}
        for col, domain in self.value_columns.items():
            if wanted & {norm(d) for d in domain}:
                return col
        return "status"


def _abbreviates(short: str, word: str) -> bool:
    """``hrs`` / ``hours``: same first letter and the short form's letters in order."""
    short, word = short.lower(), word.lower()
    if short == word or (len(short) >= 3 and (word.startswith(short) or short.startswith(word))):
        return True
    it = iter(word)
    return len(short) >= 2 and short[0] == word[:1] and all(ch in it for ch in short)


# ---------------------------------------------------------------------------- JSON expressions


def expression_constraints(condition: str, want: bool, rng: random.Random) -> list[Constraint]:
    """Constraints on context paths that make a JSON condition evaluate to ``want``."""
    return _solve(expr.parse(condition), want, rng)


def _solve(node: tuple, want: bool, rng: random.Random) -> list[Constraint]:
    op = node[0]
    if op == "not":
        return _solve(node[1], not want, rng)
    if op in ("and", "or"):
        both = (op == "and") == want  # and→true / or→false: every side; else one side
        if both:
            return _solve(node[1], want, rng) + _solve(node[2], want, rng)
        return _solve(node[rng.choice((1, 2))], want, rng)
    if op == "path":
        return [Constraint(expr.strip_context(node[1]), truth=want)]
    if op == "cmp":
        return _compare(node[1], node[2], node[3], want)
    return []


def _compare(op: str, left: tuple, right: tuple, want: bool) -> list[Constraint]:
    if left[0] != "path" and right[0] == "path":
        flip = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}
        left, right, op = right, left, flip.get(op, op)
    if left[0] != "path" or right[0] != "lit":
        return []
    path, value = expr.strip_context(left[1]), right[1]
    if op in ("==", "===", "!=", "!=="):
        equal = want == (op in ("==", "==="))
        if isinstance(value, int | float) and not isinstance(value, bool):
            low, high = _interval("==", float(value), equal)
            return [Constraint(path, low=low, high=high, numeric=True)]
        spelled = {norm(value): str(value)}
        if equal:
            return [Constraint(path, allowed=set(spelled), spellings=spelled)]
        return [Constraint(path, banned=set(spelled), spellings=spelled)]
    low, high = _interval(op, float(value), want)
    return [Constraint(path, low=low, high=high, numeric=True)]
