"""Synthetic customer messages of known kinds (paper §4): the generator's own reading of what a
step expects, and many phrasings for every kind of input.

Each message is built *from a label* (valid, typo'd valid, invalid format, gibberish, chit-chat,
doubt, go-back), so the label is the ground truth. Nothing here imports the brain or the slot
extractors: the expected input is read from the GAR metadata with its own rules
(:mod:`core.evaluation.input_spec`).
"""

from __future__ import annotations

import random
import re
import string
from dataclasses import replace
from typing import Any, TypeVar

from core.evaluation.input_spec import InputSpec

VALUE = "\x00"  # where the value goes in a frame (never typo'd)

FIRST = ["asha", "ravi", "meera", "john", "li", "sara", "omar", "kenji", "ana", "david", "priya", "tom", "fatima"]
LAST = ["sharma", "iyer", "khan", "smith", "chen", "garcia", "ito", "das", "okafor", "nair", "silva"]
DOMAINS = ["gmail.com", "example.com", "outlook.com", "yahoo.co.in", "shopmail.in", "proton.me"]

VALUE_FRAMES = ["{v}", "{v}", "{v}", "it's {v}", "it is {v}", "my {s} is {v}", "the {s} is {v}", "sure, {v}",
                "here you go: {v}", "here it is: {v}", "{v} is my {s}", "ok, {v}", "{v}, thanks", "please use {v}",
                "{v} - that's the one", "i think it's {v}", "my {s}: {v}", "you can use {v}", "that would be {v}",
                "sure thing, my {s} is {v}", "{v} is the {s}", "I checked the portal and it shows {v}",
                "the one I have is {v}", "ok so the {s} should be {v}", "{v} (copied from the portal)",
                "let me check... it's {v}", "according to my dashboard it is {v}", "found it! {v}",
                "i believe the {s} is {v}, please check"]
EMAIL_FRAMES = ["you can reach me at {v}", "{v} is the address", "send it to {v}", "it was {v}", "use {v}"]
CODE_FRAMES = ["{v}", "{v}", "the code is {v}", "i got {v}", "it says {v}", "{v} is the code", "received {v}",
               "here: {v}", "the otp is {v}", "my code is {v}", "ok the code i got is {v}", "{v} thanks"]
YES = ["yes", "yeah", "yep", "yes, I do", "I do", "of course", "sure", "correct", "absolutely", "yes, that's right",
       "yeah, I have it", "I still have it", "yes definitely", "yup", "yes I still do", "yeah sure",
       "yes, I can still use it", "yes, I can still log into it", "yeah I still use that one", "I do, yes",
       "sure do", "yes it's still active"]
NO = ["no", "nope", "no, I don't", "I don't", "not anymore", "no, I lost it", "unfortunately not", "nah",
      "I no longer have it", "no, sorry", "I don't have it anymore", "sadly no", "never had it", "negative",
      "no I can't", "no, not any more"]
UNSURE = ["maybe", "I'm not sure", "not sure, let me check", "it depends", "perhaps", "hmm, no idea",
          "I can't remember", "don't know"]
DECLINE = ["no thanks", "none of them", "no, I'll pass", "not really", "maybe later", "neither", "nah, none of those",
           "no thank you"]
PICK = ["the first one", "the second one", "the last one", "I'll take the {name}", "the {name} please",
        "I'd like the {name}", "{name}", "the cheapest one", "I'll go with the {name}", "let's do the first one"]
MONEY_FRAMES = ["{v}", "{v}", "around {v}", "about {v}", "my budget is {v}", "up to {v}", "under {v}", "max {v}",
                "I can spend {v}", "no more than {v}", "{v} at most"]
CATEGORY_FRAMES = ["{v}", "a {v}", "I need a {v}", "looking for a {v}", "{v} please", "a {v}, please",
                   "I want a {v}", "something in {v}s"]
MODEL_FRAMES = ["{v}", "it's a {v}", "I have a {v}", "my device is a {v}", "a {v}", "it is the {v}",
                "the model is {v}"]
TEXT_FRAMES = ["{v}", "{v}", "well, {v}", "{v} since yesterday", "basically {v}", "so {v}", "{v}, it's annoying"]

DATES = ["next Tuesday", "on Friday", "tomorrow", "3 May", "the 12th of June", "Monday", "next Thursday",
         "on the 20th of September"]
GIBBERISH_SYLLABLES = ["asd", "qwe", "zxc", "jkl", "fgh", "uio", "bnm", "rty", "ghj", "vbn", "lkj", "poi"]
SOCIAL = ["hello", "hi there", "hey", "thanks", "thank you", "many thanks", "good morning", "hello again",
          "you are useless", "this is so frustrating, useless bot", "thank you so much"]
OFF_TOPIC = ["it's raining here today", "I'm having a long day", "my cat just walked over the keyboard",
             "let me grab a coffee first", "hold on a second", "lol", "brb", "nice weather today",
             "I am at the office right now", "my internet is slow today", "just a moment", "ok cool",
             "haha", "I was busy with a customer"]
AFFIRMATIVE_CHAT = {"ok cool", "lol", "haha"}  # could read as "yes" to a yes/no question: not used there

DOUBT_FRAMES = ["how do I find my {s}?", "where can I find the {s}?", "where do I get my {s}?", "what is a {s}?",
                "why do you need my {s}?", "how to find it", "where is it?",
                "I don't know where to find it, can you help?", "can you tell me where to see my {s}?",
                "what does {s} mean?", "where would I see that?", "how do I get the {s}?",
                "sorry, where do I look for the {s}?", "is the {s} on my dashboard somewhere?",
                "I don't know where to find my {s}", "no idea where the {s} is", "not sure where to look for the {s}",
                "I can't find my {s} anywhere", "help me find the {s}"]
YES_NO_DOUBTS = ["why do you need to know that?", "what happens if I say no?", "does it matter?",
                 "why are you asking?", "what do you mean by {s}?", "is that important?"]
KB_FRAMES = ["{t}?", "quick question: {t}?", "could you tell me about {t}?", "before that, {t}?",
             "can you explain {t}?"]
GO_BACK_FRAMES = ["wait, I want to change my {s}", "sorry, I gave you the wrong {s}",
                  "can I go back and change the {s}?",
                  "let me re-enter the {s}", "I slipped up with the {s}, can we go back?",
                  "oops, wrong {s}. let me fix it", "go back to the {s} please", "I need to correct my {s}",
                  "wait, I want to change my answer about the {s}", "the {s} I gave was wrong"]
PREVIOUS_FRAMES = ["go back to the previous question", "can we go back one step?",
                   "wait, I want to change my last answer",
                   "I slipped up in my previous answer", "sorry, let me redo the last question",
                   "oops, my last answer was wrong", "go back please, I answered that wrong"]
AMBIGUOUS = re.compile(r"\b(back|wrong|change|redo|mistake|correct|fix|edit|previous)\b", re.I)  # reads as go-back

STREETS = ["Elm Street", "Station Road", "Park Avenue", "Mill Lane", "Harbour View", "Church Street", "Oak Drive"]
CITIES = ["Leeds LS1 4AB", "Bristol BS8 1TH", "York YO1 7HH", "Cardiff CF10 3AT", "Brighton BN1 1AE"]
PHRASES = ["the blue one", "the larger of the two", "the one in the photo", "the second item", "the grey set",
           "the small wooden one"]

Picked = TypeVar("Picked")


# ---------------------------------------------------------------------------- values


class Phrasebook:
    """Builds one customer message for a label; ``rng`` makes it reproducible."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def pick(self, items: list[Picked]) -> Picked:
        return items[self.rng.randrange(len(items))]

    def value(self, spec: InputSpec, context: dict[str, Any]) -> tuple[str, Any]:
        """A valid value for a spec: (how the customer types it, the value an API should receive)."""
        r = self.rng
        if spec.kind == "email":
            v = f"{self.pick(FIRST)}{self.pick(['.', '', '_'])}{self.pick(LAST)}{r.choice(['', str(r.randint(1, 99))])}"
            v = f"{v}@{self.pick(DOMAINS)}"
            return v, v
        if spec.kind == "otp":
            v = "".join(r.choice(string.digits) for _ in range(spec.digits))
            return v, v
        if spec.kind == "phone":
            digits = r.choice("6789") + "".join(r.choice(string.digits) for _ in range(spec.digits - 1))
            shown = self.pick([digits, digits, f"+91 {digits}", f"{digits[:5]} {digits[5:]}"])
            return shown, digits
        if spec.kind == "id":
            v = spec.prefix + "".join(r.choice(string.digits if ch == "9" else string.ascii_uppercase + string.digits)
                                      for ch in (spec.body or "XXXXXXXX"))
            return v, v
        if spec.kind == "money":
            n = r.choice([r.randint(3, 60) * 100, r.randint(1, 50) * 1000])
            shown = self.pick([str(n), f"{n:,}", f"{n / 1000:g}k" if n % 100 == 0 else str(n)])
            return shown, n
        if spec.kind == "number":
            n = r.randint(1, 9)
            return str(n), n
        if spec.kind == "username":
            v = f"{self.pick(FIRST)}{self.pick(['_', '.', ''])}{self.pick(LAST)}{r.randint(1, 99)}"
            return v, v
        if spec.kind == "name":
            v = f"{self.pick(FIRST).title()} {self.pick(LAST).title()}"
            return v, v
        if spec.kind == "address":
            v = f"{r.randint(2, 180)} {self.pick(STREETS)}, {self.pick(CITIES)}"
            return v, v
        if spec.kind == "phrase":
            v = self.pick(PHRASES)
            return v, v
        if spec.kind == "date":
            v = self.pick(DATES)
            return v, v
        if spec.kind in ("category", "model", "text", "option") and spec.vocab:
            v = self.pick(spec.vocab)
            return (v.lower() if spec.kind != "model" else v), v
        return "it stopped working", "it stopped working"

    def valid(self, spec: InputSpec, context: dict[str, Any], *, polarity: bool | None = None,
              typos: bool = False, among: list[str] | None = None) -> tuple[str, Any]:
        """A valid answer (``polarity`` for yes/no and choice asks that a branch depends on; ``among``:
        the listed values that lead down the branch chosen)."""
        if among:
            spec = replace(spec, vocab=among)
        if spec.kind == "yesno":
            text, value = self.pick(YES if polarity is not False else NO + spec.vocab), polarity is not False
            return (self.typo(text, protect=text.split()[0]) if typos else text), value
        if spec.kind == "choice":
            return self._choice(context, polarity, typos)
        shown, value = self.value(spec, context)
        if typos and spec.kind == "id" and self.rng.random() < 0.3:
            shown = shown.lower()  # typed in lower case: still the same id
        frames = {"otp": CODE_FRAMES, "money": MONEY_FRAMES, "category": CATEGORY_FRAMES, "model": MODEL_FRAMES,
                  "text": TEXT_FRAMES, "email": VALUE_FRAMES + EMAIL_FRAMES}.get(spec.kind, VALUE_FRAMES)
        if typos:  # a frame with words to slip on
            frames = [f for f in frames if any(len(w) >= 4 and w.isalpha() for w in f.split())] or frames
        frame = self.pick(frames).replace("{s}", spec.subject or "answer")
        text = self.typo(frame.replace("{v}", VALUE)) if typos else frame.replace("{v}", VALUE)
        return text.replace(VALUE, shown), value

    def _choice(self, context: dict[str, Any], polarity: bool | None, typos: bool) -> tuple[str, Any]:
        names = [str(c) for c in context.get("candidates") or []]
        if polarity is False or not names:
            text = self.pick(DECLINE)
            return (self.typo(text) if typos else text), False
        frame = self.pick(PICK)
        name = self.pick(names)
        text = frame.replace("{name}", VALUE)
        if typos:
            text = self.typo(text)
        return text.replace(VALUE, name), name

    def invalid(self, spec: InputSpec) -> str:
        """An answer of the wrong shape for the spec (an email without a domain, a short OTP, ...)."""
        r = self.rng
        if spec.kind == "email":
            a, b = self.pick(FIRST), self.pick(LAST)
            return self.pick([f"{a}.{b}", f"{a}.{b}@", f"{a}@{self.pick(DOMAINS).split('.')[0]}",
                              f"{a} at gmail dot com", f"{a}{b}.com", f"my email is {a}.{b}"])
        if spec.kind in ("otp", "phone"):
            size = self.pick([max(1, spec.digits - 1), spec.digits + 1, max(1, spec.digits - 2), 4]
                             if spec.length_declared else [3, 4, 5])  # too short to be a phone anywhere
            digits = "".join(r.choice(string.digits) for _ in range(size))
            return self.pick([digits, f"the code is {digits}" if spec.kind == "otp" else f"my number is {digits}",
                              digits[:2] + "ab" + digits[2:]])
        if spec.kind == "id":
            digits = "".join(r.choice(string.digits) for _ in range(r.randint(4, 8)))
            wrong = "".join(r.choice(string.ascii_uppercase) for _ in range(3))
            return self.pick([digits, f"my {spec.subject} is {digits}", f"#{digits}",
                              f"{wrong}{digits}" if spec.prefix else "the usual one", "not sure of the exact one"])
        if spec.kind == "yesno":
            return self.pick(UNSURE)
        pools = {"money": ["cheap", "not too expensive", "whatever is reasonable", "a fair price",
                           "something affordable"],
                 "category": ["something nice", "a gift", "stuff", "anything really"],
                 "model": ["my device", "the black one", "the usual one", "the one at home"],
                 "choice": ["the purple one", "something else", "a different colour"],
                 "number": ["a few", "some", "lots"],
                 "date": ["soon", "whenever suits you", "when I have time", "some day", "later this season"]}
        return self.pick(pools.get(spec.kind, ["hmm"]))

    def gibberish(self) -> str:
        words = ["".join(self.pick(GIBBERISH_SYLLABLES) for _ in range(self.rng.randint(1, 3)))
                 for _ in range(self.rng.randint(1, 3))]
        return " ".join(words)

    def chit_chat(self, spec: InputSpec, social: bool) -> str:
        if social:
            return self.pick(SOCIAL)
        pool = [t for t in OFF_TOPIC if spec.kind != "yesno" or t not in AFFIRMATIVE_CHAT]
        return self.pick(pool)

    def doubt(self, spec: InputSpec, kb_titles: list[str]) -> str:
        """A question about what is being asked, in the paper's style ("how to find it")."""
        if kb_titles and self.rng.random() < 0.3:
            title = self.pick(kb_titles).rstrip("?.").lower()
            title = re.sub(r"\byour\b", "my", title)
            return self.pick(KB_FRAMES).replace("{t}", title)
        frames = YES_NO_DOUBTS if spec.kind in ("yesno", "choice") else DOUBT_FRAMES
        return self.pick(frames).replace("{s}", spec.subject or "that")

    def go_back(self, subject: str | None) -> str:
        """A request to return to an earlier step: named by its subject, or "the previous question"."""
        if subject is None:
            return self.pick(PREVIOUS_FRAMES)
        return self.pick(GO_BACK_FRAMES).replace("{s}", subject)

    def typo(self, text: str, protect: str = "") -> str:
        """One or two keyboard slips in words of four letters or more (never in the value)."""
        words = text.split(" ")
        eligible = [i for i, w in enumerate(words) if len(w) >= 4 and w.isalpha() and w != protect]
        for i in self.rng.sample(eligible, min(len(eligible), self.rng.randint(1, 2))):
            words[i] = self._slip(words[i])
        return " ".join(words)

    def _slip(self, word: str) -> str:
        i = self.rng.randrange(1, len(word) - 1)
        how = self.rng.randrange(3)
        if how == 0:
            return word[:i] + word[i + 1] + word[i] + word[i + 2:]
        if how == 1:
            return word[:i] + word[i + 1:]
        return word[:i] + word[i] + word[i:]


def opening(rng: random.Random, title: str, triggers: list[str]) -> str:
    """How a customer starts the conversation about one SOP (its triggers, wrapped and varied). The simulated
    customer speaks English (the frames are English): its triggers in Latin letters, when it has any."""
    book = Phrasebook(rng)
    triggers = [t for t in triggers if not re.search(r"[\u0E00-\u0E7F]", t)] or triggers
    base = book.pick(triggers) if triggers and rng.random() < 0.85 else f"I need help: {title.lower()}"
    base = base.rstrip("?.!")
    frame = book.pick(["{t}", "{t}", "hi, {t}", "hello, {t}?", "{t}, please help", "can you help? {t}",
                       "hey there. {t}", "{t}!", "good morning, {t}"])
    return frame.replace("{t}", base)
