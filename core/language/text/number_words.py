"""Numbers written in words: English number words ("twenty one"), text2num's spelled numbers and
Thai number words as people say them ("หมื่นห้า" = 15,000)."""

from __future__ import annotations

import re

from core.language import lexicons as LEX

THAI_SCALES = {"สิบ": 10, "ร้อย": 100, "พัน": 1_000, "หมื่น": 10_000, "แสน": 100_000, "ล้าน": 1_000_000}
THAI_DIGITS = {"ศูนย์": 0, "หนึ่ง": 1, "เอ็ด": 1, "นึง": 1, "สอง": 2, "ยี่": 2, "สาม": 3, "สี่": 4, "ห้า": 5,
               "หก": 6, "เจ็ด": 7, "แปด": 8, "เก้า": 9}
THAI_HALF = "ครึ่ง"
THAI_NUMBER_PARTS = "|".join(sorted([*THAI_DIGITS, *THAI_SCALES, THAI_HALF], key=len, reverse=True))
# a Thai scale after digits, and the number words that may follow it ("1.5 หมื่น", "2 พันห้า"); not the words
# that start with one ("พันธุ์", "แสนดี", "ล้านนา")
THAI_SCALE_SUFFIX = rf"(?:พัน(?!ธ)|หมื่น|แสน(?!ดี|สวย)|ล้าน(?!นา))(?:{THAI_NUMBER_PARTS})*"


UNITS = {w: i for lx in LEX.lexicons() for i, w in enumerate(lx.get("units"))}
TENS = {w: 10 * (i + 2) for lx in LEX.lexicons() for i, w in enumerate(lx.get("tens"))}
NUMBER_WORDS = re.compile(r"\b(?:(" + "|".join(TENS) + r")(?:[\s-]+(" + "|".join(w for w in UNITS if UNITS[w] < 10)
                          + r"))?|(" + "|".join(UNITS) + r"|a dozen|dozen))\b", re.I)


def spelled_numbers(text: str) -> str:
    """The text with numbers written in words as digits ("a thousand euros" -> "a 1000 euros", "one hundred
    and fifty" -> "150"), by text2num for the languages it reads and by :func:`thai_numbers` for Thai
    ("งบหมื่นห้า" -> "งบ 15000"); small numbers alone stay words ("one of them"). Unchanged when it holds
    none."""
    if LEX.UNSPACED.search(text):
        text = thai_numbers(text)
    if not re.search(r"[A-Za-z]", text):
        return text
    from text_to_num import alpha2digit  # imported on first use

    try:
        return alpha2digit(text, "en")
    except Exception:  # noqa: BLE001 - a text the parser cannot read keeps its words
        return text


_THAI_PART = re.compile(THAI_NUMBER_PARTS)
_DECIMAL = re.compile(r"^\d+(?:\.\d+)?$")


def _thai_parts(token: str) -> list[str] | None:
    """A word's number parts ("สิบเอ็ด" -> ["สิบ", "เอ็ด"]), or None when it is not made of them only
    ("ยี่ห้อ", "สามี")."""
    parts, at = [], 0
    while at < len(token):
        m = _THAI_PART.match(token, at)
        if m is None:
            return None
        parts.append(m.group(0))
        at = m.end()
    return parts


def thai_number(parts: list[str], lead: float | None = None) -> float | None:
    """The value of Thai number words, as people say them: the formal forms by pythainlp
    (``thaiword_to_num``: "สองพันห้าร้อย" = 2500) and the colloquial ones it does not read: a digit after a
    scale counts in the scale below ("หมื่นห้า" = 15,000, "สามพันห้า" = 3,500, "แสนสอง" = 120,000), half a
    scale ("พันครึ่ง" = 1,500), "one" after a scale says no more ("หมื่นนึง" = 10,000), and a number in
    digits before a scale ("1.5 หมื่น" = 15,000, ``lead``). None when the words make no number."""
    parts = list(parts)
    if lead is not None:  # "1.5 หมื่น", "2 พันห้า": the digits count the first scale
        if not parts or parts[0] not in THAI_SCALES:
            return None
        scale, rest = THAI_SCALES[parts[0]], parts[1:]
        head = lead * scale
        if not rest:
            return head
        if len(rest) == 1 and scale >= 1000 and (rest[0] in THAI_DIGITS or rest[0] == THAI_HALF):
            digit = 5 if rest[0] == THAI_HALF else THAI_DIGITS[rest[0]]
            return head + digit * scale / 10
        tail = thai_number(rest)
        return None if tail is None else head + tail
    if len(parts) >= 2 and parts[-2] in THAI_SCALES and THAI_SCALES[parts[-2]] >= 1000:
        below = _scale_below(parts[-2])
        if parts[-1] == THAI_HALF:
            parts[-1:] = ["ห้า", below]
        elif parts[-1] in ("นึง", "หนึ่ง"):
            parts = parts[:-1]
        elif parts[-1] in THAI_DIGITS and below:
            parts.append(below)
    elif len(parts) >= 2 and parts[-1] == "นึง" and parts[-2] in THAI_SCALES:
        parts = parts[:-1]
    if THAI_HALF in parts:
        return None
    from pythainlp.util import thaiword_to_num  # imported on first use

    try:
        return float(thaiword_to_num("".join(parts)))
    except Exception:  # noqa: BLE001 - words pythainlp cannot read are no number
        return None


def _scale_below(scale: str) -> str:
    ordered = sorted(THAI_SCALES, key=THAI_SCALES.__getitem__)
    i = ordered.index(scale)
    return ordered[i - 1] if i > 0 else ""


def thai_numbers(text: str) -> str:
    """Thai number words as digits ("งบหมื่นห้าบาท" -> "งบ 15000 บาท", "1.5 หมื่น" -> "15000"); a lone digit
    word stays a word ("อันที่สอง", "สองเครื่อง"): only a number of ten or more, or one with a scale."""
    from core.language.lexicons.thai_words import thai_tokens  # loaded only when a message needs it

    tokens = thai_tokens(text)
    out: list[str] = []
    i = 0
    while i < len(tokens):
        lead = float(tokens[i]) if _DECIMAL.match(tokens[i]) else None
        j = i + 1 if lead is not None else i
        if lead is not None and j < len(tokens) and not tokens[j].strip():
            j += 1  # "1.5 หมื่น"
        parts: list[str] = []
        end = k = j
        while k < len(tokens):
            if not tokens[k].strip() and parts:  # "หมื่น ห้า": words of one number may stand apart
                k += 1
                continue
            found = _thai_parts(tokens[k])
            if found is None:
                break
            parts += found
            k += 1
            end = k
        value = thai_number(parts, lead) if parts and (lead is None or parts[0] in THAI_SCALES) else None
        small = value is not None and lead is None and value < 10 and not any(p in THAI_SCALES for p in parts)
        if value is None or small:
            out.append(tokens[i])
            i += 1
            continue
        out.append(f" {int(value) if float(value).is_integer() else value} ")
        i = end
    return re.sub(r" {2,}", " ", "".join(out)).strip()


def word_number(text: str) -> int | None:
    """The first number written in words ("thirty four guests" -> 34, "just two" -> 2), or None."""
    m = NUMBER_WORDS.search(text)
    if not m:
        return None
    if m.group(1):
        return TENS[m.group(1).lower()] + (UNITS[m.group(2).lower()] if m.group(2) else 0)
    word = m.group(3).lower()
    return 12 if "dozen" in word else UNITS[word]
