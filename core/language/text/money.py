"""Amounts and money: every number a text states, with k/m suffixes, currencies and Thai scales
applied; ranges ("30-40k"); money written for a reply."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from core.language import lexicons as LEX
from core.language.text.number_words import THAI_SCALE_SUFFIX, _thai_parts, thai_number

CURRENCY_WORDS = rf"(?:{LEX.alternation('currency_words')})"
# Thai money words sit right against the number ("งบ15000", "15000บาท"): no word edge is needed around them
THAI_MONEY_WORDS = "|".join(re.escape(p.replace(" ", "")) for p in LEX.phrases("currency_words")
                            if LEX.UNSPACED.search(p)) or "(?!x)x"
CURRENCY_SYMBOLS = "฿$€£¥₹"
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_END = r"(?![0-9A-Za-z_])"  # the end of a number or suffix: no Latin letter or digit follows (Thai may)
MONEY = re.compile(
    rf"(?:(?P<sym>[{CURRENCY_SYMBOLS}])|\b(?P<pre>(?i:{CURRENCY_WORDS}))\b|(?P<thpre>{THAI_MONEY_WORDS}))?\s?"
    rf"(?P<num>{_NUM})\s?"
    rf"(?:(?P<suf>k|K|m|M|thousand|grand|million|mil){_END}|(?P<thsuf>{THAI_SCALE_SUFFIX})|{_END})"
    rf"(?:\s?(?P<cur>(?i:{CURRENCY_WORDS})){_END}|(?P<post>[{CURRENCY_SYMBOLS}]))?",  # "85$", "40 €"
)
RANGE = re.compile(
    rf"(?P<a>{_NUM})\s?(?P<sa>k|m)?\s?(?:-|–|to|and)\s?[{CURRENCY_SYMBOLS}]?(?P<b>{_NUM})\s?(?P<sb>k|m|thousand)?\b",
    re.I,
)
MULT = {"k": 1e3, "thousand": 1e3, "grand": 1e3, "m": 1e6, "million": 1e6, "mil": 1e6}


@dataclass(frozen=True)
class Amount:
    """A number found in text; ``money`` when it carried a currency or a k/m suffix."""

    value: float
    money: bool
    start: int
    end: int


def _value(num: str, suffix: str | None) -> float:
    val = float(num.replace(",", ""))
    if suffix and LEX.UNSPACED.match(suffix):  # "1.5 หมื่น", "2 พันห้า"
        parts = _thai_parts(suffix)
        found = thai_number(parts, val) if parts else None
        return found if found is not None else val
    return val * MULT.get((suffix or "").lower(), 1)


def amounts(text: str) -> list[Amount]:
    """Every number in a text, with k/m suffixes and currency applied."""
    return list(_amounts(text))


@lru_cache(maxsize=4096)
def _amounts(text: str) -> tuple[Amount, ...]:
    if not any(ch.isdigit() for ch in text):  # every amount has digits (the slow pattern need not look)
        return ()
    out = []
    for m in MONEY.finditer(text):
        ns = m.start("num")
        before = text[max(0, ns - 1) : ns]
        if before and (_id_letter(before) or before in "-_/"):  # part of an id like LST123 or G-502
            continue
        ne = m.end("num")
        after = text[ne : ne + 1]
        suffix = m.group("suf") or m.group("thsuf")
        if after and (_id_letter(after) or after in "-_/") and not suffix:
            continue
        money = bool(m.group("sym") or m.group("pre") or m.group("thpre") or suffix or m.group("cur")
                     or m.group("post"))
        start = next((m.start(g) for g in ("sym", "pre", "thpre") if m.group(g)), ns)
        end = max(m.end(g) for g in ("num", "suf", "thsuf", "cur", "post") if m.group(g))
        out.append(Amount(_value(m.group("num"), suffix), money, start, end))
    return tuple(out)


def _id_letter(char: str) -> bool:
    """A letter that makes a number next to it part of an id ("LST123"); Thai is written without spaces,
    so a Thai word right before or after a number ("งบ15000บาท") leaves it a number."""
    return char.isalpha() and not LEX.UNSPACED.match(char)


def money_range(text: str) -> tuple[float, float] | None:
    """A range like ``30-40k`` or ``30k to 40k`` (the suffix of the end applies to both)."""
    m = RANGE.search(text)
    if not m:
        return None
    sb = m.group("sb")
    sa = m.group("sa") or sb
    a, b = _value(m.group("a"), sa), _value(m.group("b"), sb)
    return (min(a, b), max(a, b)) if a != b else None


def number_forms(text: str) -> set[float]:
    """All numbers a text states, normalised (for the grounding check)."""
    found = {round(a.value, 2) for a in amounts(text)}
    rng = money_range(text)
    if rng:
        found |= {round(rng[0], 2), round(rng[1], 2)}
    return found


def format_money(value: float, currency: str = "") -> str:
    """``1500`` -> ``฿1,500`` for THB, ``1,500 USD`` otherwise."""
    txt = f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"
    symbols = {"THB": "฿", "USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "INR": "₹"}
    sym = symbols.get(currency.upper())
    if sym:
        return f"{sym}{txt}"
    return f"{txt} {currency}".strip()
