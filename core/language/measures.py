"""Quantities by what they measure: a number with a unit ("500 g", "a 2.5 kg tent"), a count of the people
something is for ("for 12 guests"), a size ("size M"), each with its bound ("under 2 kg": at most). The words
are the language files' (``measure_units``, ``headcount_nouns``, ``size_words``, ``measure_at_most``,
``measure_at_least``); nothing here knows a store. A budget is money: a quantity never is one."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from core.language import lexicons as LEX

HEADCOUNT = "headcount"
SIZE = "size"
NUMBER = r"\d+(?:[.,]\d+)?"


@dataclass(frozen=True)
class Quantity:
    """One quantity a message gives: what it measures (a unit's measure such as ``mass``, or ``headcount``
    or ``size``), the amount in the measure's base unit (None for a size), the size as said, the bound
    (``=``, ``<=``, ``>=``) and the words it was read from."""

    measure: str
    amount: float | None
    op: str
    words: str
    size: str = ""
    said: float | None = None  # the number as said ("70" of "70 m")

    @property
    def spec(self) -> str:
        """The quantity as a search reads it: bound, value, measure (``>= 12 headcount``, ``= 70000 length``,
        ``= eu 41 size``)."""
        return f"= {self.size} {SIZE}" if self.measure == SIZE else f"{self.op} {self.amount:g} {self.measure}"


@cache
def units() -> dict[str, tuple[str, float]]:
    """Every unit word with its measure and how many base units one is (``kg`` -> mass, 1000)."""
    out: dict[str, tuple[str, float]] = {}
    for entry in LEX.phrases("measure_units"):
        head, _, words = entry.partition(":")
        measure, _, factor = head.strip().partition(" ")
        for w in words.split(","):
            if w.strip():
                out[w.strip().lower()] = (measure, float(factor or 1))
    return out


def _alt(words: list[str] | tuple[str, ...]) -> str:
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(words, key=len, reverse=True))


@cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    counted = [*LEX.phrases("units")]  # zero .. nineteen, as words
    number = rf"{NUMBER}|{_alt(counted)}" if counted else NUMBER
    unit = re.compile(rf"(?<![\w.])({NUMBER})\s*({_alt(list(units()))})(?!\w)")
    heads = re.compile(rf"(?<![\w.])({number})\s+({_alt(LEX.phrases('headcount_nouns'))})(?!\w)")
    size = re.compile(rf"(?<!\w)(?:{_alt(LEX.phrases('size_words'))})\s*:?\s*([a-z]{{0,3}}\s?\d{{1,3}}(?:[.,]5)?|"
                      rf"x{{0,3}}[sml]|x{{1,3}}|\d?xl)(?!\w)")
    most = re.compile(rf"(?:{_alt(LEX.phrases('measure_at_most'))})\s*$")
    least = re.compile(rf"(?:{_alt(LEX.phrases('measure_at_least'))})\s*$")
    return unit, heads, size, most, least


def _number(said: str) -> float:
    counted = [w.lower() for lx in LEX.lexicons() for w in lx.get("units")]
    return float(counted.index(said.lower()) % 20) if said.lower() in counted else float(said.replace(",", "."))


def quantities(text: str) -> list[Quantity]:
    """The quantities a message gives, in order."""
    low = LEX.segment(text.lower())
    unit, heads, size, most, least = _patterns()

    def bound(start: int, default: str) -> str:
        before = low[max(0, start - 24): start]
        return "<=" if most.search(before) else ">=" if least.search(before) else default

    found: list[tuple[int, Quantity]] = []
    for m in unit.finditer(low):
        measure, factor = units()[re.sub(r"\s+", " ", m.group(2))]
        said = _number(m.group(1))
        found.append((m.start(), Quantity(measure, said * factor, bound(m.start(), "="), m.group(0), said=said)))
    for m in heads.finditer(low):
        said = _number(m.group(1))
        found.append((m.start(), Quantity(HEADCOUNT, said, bound(m.start(), ">="), m.group(0), said=said)))
    for m in size.finditer(low):
        found.append((m.start(), Quantity(SIZE, None, "=", m.group(0), re.sub(r"\s+", " ", m.group(1)))))
    return [q for _start, q in sorted(found, key=lambda f: f[0])]


def without_quantities(text: str) -> str:
    """The message with the words of its quantities left out ("a 70 m rope" -> "a rope"): a unit or a size
    is no product word."""
    low = LEX.segment(text.lower())
    for q in quantities(text):
        low = low.replace(q.words, " ", 1)
    return re.sub(r"\s+", " ", low).strip()


def asked_measure(text: str) -> str:
    """The measure a question asks without naming a column ("how heavy is it?" -> mass); '' when none."""
    low = f" {' '.join(LEX.segment(text.lower()).split())} "
    for entry in LEX.phrases("measure_questions"):
        measure, _, words = entry.partition(":")
        if any(f" {w.strip()} " in low or (w.strip() and not w.strip().isascii() and w.strip() in low)
               for w in words.split(",")):
            return measure.strip()
    return ""


def cell_quantity(cell: str) -> tuple[str, float] | None:
    """A cell's amount by its unit (``3.8 kg`` -> mass, 3800.0); None when it holds no number with a unit."""
    m = _patterns()[0].search(cell.lower())
    if m is None:
        return None
    measure, factor = units()[re.sub(r"\s+", " ", m.group(2))]
    return measure, _number(m.group(1)) * factor


def cell_count(cell: str) -> float | None:
    """The most a cell counts ("6-8" -> 8; "Dome 4-Person" -> 4, the number said with a word for
    people); None without a number, a number with a unit left out."""
    counted = counted_people(cell)
    if counted is not None:
        return counted
    nums = [float(n.replace(",", ".")) for n in re.findall(NUMBER, _patterns()[0].sub(" ", cell.lower()))]
    return max(nums) if nums else None  # a number with a unit ("3 m") counts no one


def counted_people(cell: str) -> float | None:
    """The number a text says with a word for people ("4-Person", "sleeps 2"), the largest; else None."""
    words = _alt([*LEX.phrases("headcount_nouns"), *LEX.phrases("headcount_columns")])
    low = cell.lower()
    found = [float(m.group(1)) for m in re.finditer(rf"(?<![\w.])(\d+)\s*-?\s*(?:{words})(?!\w)", low)]
    found += [float(m.group(1)) for m in re.finditer(rf"(?<!\w)(?:{words})\s*:?\s*(\d+)(?![\w.])", low)]
    return max(found) if found else None


def holds(cell: str, spec: str) -> bool:
    """Whether a cell meets a quantity as :attr:`Quantity.spec` writes it: a size by its words, a count of
    people by the most the cell counts, an amount by the cell's own unit."""
    op, *value, measure = spec.strip().lower().split()
    if measure == SIZE:
        said = " ".join(value)
        words = [t for t in re.split(r"[\s;,/|]+", cell.lower()) if t]
        return said == " ".join(words) or (" " not in said and said in words)
    try:
        wanted = float(value[0])
    except (ValueError, IndexError):
        return False
    if measure == HEADCOUNT:
        count = cell_count(cell)
        return count is not None and _compare(count, op, wanted)
    have = cell_quantity(cell)
    return have is not None and have[0] == measure and _compare(have[1], op, wanted)


def _compare(have: float, op: str, wanted: float) -> bool:
    if op == "<=":
        return have <= wanted * 1.0001
    if op == ">=":
        return have >= wanted * 0.9999
    return abs(have - wanted) <= max(abs(wanted) * 0.01, 1e-9)
