"""A branch condition of an SOP read against a tool's observation, for the rule brain
(core.understanding.brains.rule): its negation, numeric comparisons, named values and fields, and how true an
observation is."""

from __future__ import annotations

import re
from typing import Any

from core.language import lexicons as LEX
from core.language import text as T

NEGATION = re.compile(r"\b(not|no|never|none|nothing|without|doesn't|does not|don't|do not|isn't|is not|can't|"
                      r"cannot|can not|hasn't|has not|haven't|fails?|failed|unable)\b", re.I)
# a condition written in Thai turns around with ไม่ ("ถ้าไม่พบสินค้า"): ``negation`` in the language files
THAI_NEGATION = re.compile(rf"{T.L0}(?:{LEX.alternation('negation') or '(?!x)x'}){T.L1}")
COMPARATORS = [
    (re.compile(r"(less than or equal to|at most|no more than|up to|within|<=|≤)\s*(\d+(?:\.\d+)?)"), "<="),
    (re.compile(r"(greater than or equal to|at least|no less than|>=|≥)\s*(\d+(?:\.\d+)?)"), ">="),
    (re.compile(r"(less than|under|below|fewer than|<)\s*(\d+(?:\.\d+)?)"), "<"),
    (re.compile(r"(more than|greater than|over|above|exceeds|>)\s*(\d+(?:\.\d+)?)"), ">"),
    (re.compile(r"(equal to|equals|exactly|=)\s*(\d+(?:\.\d+)?)"), "=="),
]
FILLER = re.compile(r"^(it'?s|it is|its|the status is|status is|the result is|result is|they are|it was|"
                    r"the answer is|answer is|user says|user said|customer says)\s+", re.I)
YES_NO_STRINGS = {"yes", "no", "true", "false", "y", "n"}
FALSEY_STRINGS = {"no", "false", "none", "not found", "n", "0", "fail", "failed", "unavailable", "ineligible"}


def norm(s: str) -> str:
    return " ".join(T.words(s.replace("_", " ").replace("-", " ")))


def scalar_values(obs: Any) -> list[str]:
    if isinstance(obs, str | int | float) and not isinstance(obs, bool):
        return [str(obs)]
    if isinstance(obs, dict):
        return [str(v) for v in obs.values() if isinstance(v, str | int | float) and not isinstance(v, bool)]
    return []


def looks_like_values(core: str, values: list[str]) -> bool:
    """Whether a condition names values (short alternatives) rather than a yes/no property."""
    if not any(re.search(r"[a-z]", v.lower()) for v in values):
        return False
    alts = [a for a in re.split(r",|\bor\b", core) if a.strip()]
    return all(len(T.words(a)) <= 3 for a in alts) and not re.search(r"\b(found|exists?|available|has|have|yes|"
                                                                     r"can|could|chose|selected|valid)\b", core)


def field_condition(core: str, obs: Any) -> bool | None:
    """'block reason is seller state change' against {'block_reason': 'seller state change'}."""
    if not isinstance(obs, dict):
        return None
    has = re.match(r"^(?:.+?\s+)?(?:has|have|had)\s+(?:any\s+)?(.+)$", core.strip())
    if has:  # "the loan has holds" against {'holds': 0}: the field the words name decides
        wanted = {T.singular(w) for w in T.words(has.group(1))}
        found = [v for k, v in obs.items()
                 if wanted and wanted <= {T.singular(w) for w in T.words(str(k).replace("_", " "))}]
        if found:
            return any(truthy(v) for v in found)
    m = re.match(r"^(?:the\s+)?(.+?)\s+(?:is|are|was|equals)\s+(.+)$", core.strip())
    if not m:
        return None
    key_words = set(T.words(m.group(1)))
    said = {T.stem(w) for w in key_words | set(T.words(m.group(2))) if w not in T.STOPWORDS}
    flags = [v for k, v in obs.items() if _flag(v) and said
             and said <= {T.stem(w) for w in T.words(str(k).replace("_", " "))}]
    if flags:  # "the refund is approved" against {"refund_approved": true} (or "yes"): the flag both words name
        return truthy(flags[0])
    alts = [norm(a) for a in re.split(r",|\bor\b", m.group(2)) if a.strip()]
    named = [v for k, v in obs.items() if key_words and key_words <= set(T.words(str(k).replace("_", " ")))]
    if not named:
        return None
    if any(norm(str(v)) in alts for v in named):
        return True
    # "the order is delivered" against {order_id: .., status: delivered}: the subject names the record
    # (its id field), not the field judged; the values decide
    if any(norm(str(v)) in alts for v in obs.values() if isinstance(v, str)):
        return None
    return False


def _flag(value: Any) -> bool:
    """Whether a result's value is a flag: true/false, or a yes/no written as a word."""
    return isinstance(value, bool) or (isinstance(value, str) and value.strip().lower() in YES_NO_STRINGS)


def observed_number(cond: str, obs: Any) -> float | None:
    if isinstance(obs, int | float) and not isinstance(obs, bool):
        return float(obs)
    if isinstance(obs, str):
        nums = T.amounts(obs)
        return nums[0].value if nums else None
    if isinstance(obs, dict):
        cond_words = [w for w in T.words(cond) if w.isalpha() and w not in T.STOPWORDS]
        numeric = [(k, v) for k, v in obs.items() if isinstance(v, int | float) and not isinstance(v, bool)]
        for k, v in numeric:
            if any(same_word(a, b) for a in T.words(str(k).replace("_", " ")) for b in cond_words):
                return float(v)
        if numeric:
            return float(numeric[0][1])
    return None


def same_word(a: str, b: str) -> bool:
    """Equal words, or one abbreviates the other ("hrs" / "hours", "qty" / "quantity")."""
    if a == b:
        return True
    short, long_ = sorted((a, b), key=len)
    if len(short) < 2 or short[0] != long_[0]:
        return False
    if len(short) >= 3 and long_.startswith(short):
        return True
    it = iter(long_)
    return len(short) >= 3 and all(ch in it for ch in short) and not any(ch in "aeiou" for ch in short[1:])


def truthy(obs: Any) -> bool:
    if isinstance(obs, bool):
        return obs
    if obs is None:
        return False
    if isinstance(obs, int | float):
        return obs != 0
    if isinstance(obs, str):
        return obs.strip().lower() not in FALSEY_STRINGS and bool(obs.strip())
    if isinstance(obs, list):
        return len(obs) > 0
    if isinstance(obs, dict):
        bools = [v for v in obs.values() if isinstance(v, bool)]
        if bools:
            return bools[0]
        flags = [str(v).strip().lower() for v in obs.values() if str(v).strip().lower() in YES_NO_STRINGS]
        if flags:  # a yes/no field among other facts ({"can_reactivate": "no", "reason": ...})
            return flags[0] in ("yes", "true", "y")
        if len(obs) == 1:
            return truthy(next(iter(obs.values())))
        return bool(obs)
    return bool(obs)
