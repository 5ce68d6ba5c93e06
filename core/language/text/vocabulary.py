"""Words: tokens and stopwords, plurals and stems, the general vocabulary and a store's aliases.

Nothing here names a store, product, category or SOP: store vocabulary comes
from the workspace at run time.
"""

from __future__ import annotations

import re
from functools import lru_cache

from core.language import lexicons as LEX
from core.language.text.patterns import L0, L1

STOPWORDS = frozenset("""
a an the i me my mine we our you your it its it's is are was were be been am do does did have has had
to of in on at for with from by about as into like than then so and or but if not no yes this that these
those there here what which who whom whose when where why how can could would should will shall may might
must please pls plz some any one ones just also too very really much many more most such own same other
want wanted need needed looking look get got give show tell find help recommend suggest buy am i'm im
let lets let's up out over under around only still well ok okay hi hello hey thanks thank
""".split())

# Words every conversation may use that typos should still reach (ordinals, amounts, yes/no).
GENERAL_WORDS = frozenset("""
first second third fourth fifth last cheapest cheaper expensive under below above around about budget
yes yeah nope sure thanks please course still have lost longer anymore never absolutely definitely
correct right sorry access email phone number code password account maybe really later none neither pass
""".split())

IRREGULAR_PLURALS = {"mouse": "mice", "child": "children", "person": "people", "man": "men", "woman": "women",
                     "foot": "feet", "tooth": "teeth", "knife": "knives", "life": "lives", "leaf": "leaves",
                     "shelf": "shelves", "wife": "wives", "half": "halves", "box": "boxes"}
IRREGULAR_SINGULARS = {v: k for k, v in IRREGULAR_PLURALS.items()}

WORD = re.compile(r"[a-z0-9\u0E00-\u0E7F][a-z0-9'\-\u0E00-\u0E7F]*", re.I)  # Thai once segmented


def words(text: str) -> list[str]:
    """Lower-case words, punctuation dropped."""
    return list(_words(text))


@lru_cache(maxsize=8192)  # a turn reads the same few texts many times over
def _words(text: str) -> tuple[str, ...]:
    return tuple(w.strip("'-") for w in WORD.findall(LEX.segment(text).lower()) if w.strip("'-"))


def tokens(text: str) -> list[str]:
    """Content words (stopwords dropped)."""
    return [w for w in _words(text) if w not in STOPWORDS]


def singular(word: str) -> str:
    """A crude English singular."""
    w = word.lower()
    if w in IRREGULAR_SINGULARS:
        return IRREGULAR_SINGULARS[w]
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith(("ches", "shes", "sses", "xes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def squash(text: str) -> str:
    """Lower-case letters and digits only, so spellings of one name meet ("TemperatureCelsius",
    "temperature_celsius"; "7pm", "7 pm")."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


STEM_SUFFIXES = ("ations", "ation", "ings", "ing", "ed", "es", "s", "e")


def stem(word: str) -> str:
    """A crude stem that makes a word's common forms meet ("reserve", "reservation" -> "reserv")."""
    w = singular(word)
    for suffix in STEM_SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            return w[:-len(suffix)]
    return w


def plural_forms(phrase: str) -> set[str]:
    """Singular and plural spellings of a phrase (its last word varies)."""
    ws = words(phrase)
    if not ws:
        return set()
    head, last = ws[:-1], ws[-1]
    sing = singular(last)
    forms = {sing, last, IRREGULAR_PLURALS.get(sing, sing + ("es" if sing.endswith(("s", "x", "ch", "sh")) else "s"))}
    if sing.endswith("y") and len(sing) > 2 and sing[-2] not in "aeiou":
        forms.add(sing[:-1] + "ies")
    return {" ".join([*head, f]) for f in forms}


GENERAL_VERBS = frozenset(LEX.segment(p).lower() for p in LEX.phrases("general_verbs"))
HEDGES = frozenset(w for phrase in LEX.phrases("hedges") for w in LEX.segment(phrase).lower().split())


class Aliases:
    """A store's words for the words its customers use (store.yaml ``aliases:``), applied to a message
    before it is read: whole words only, Thai once segmented."""

    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = {LEX.segment(k).lower(): v for k, v in mapping.items()}
        keys = sorted(self.mapping, key=len, reverse=True)
        self.pattern = re.compile(L0 + "(" + "|".join(r"\s+".join(map(re.escape, k.split())) for k in keys) + ")" + L1,
                                  re.I) if keys else None

    def apply(self, text: str) -> str:
        """The message with each alias replaced by the store's word (unchanged when none is said)."""
        if self.pattern is None:
            return text
        spaced = LEX.segment(text)
        if not self.pattern.search(spaced):
            return text
        return self.pattern.sub(lambda m: self.mapping.get(" ".join(m.group(0).lower().split()), m.group(0)), spaced)
