"""Response cleaning and a language guess, both offline and model-free.

Cleaning (the engine note's ``cleanResponse`` / ``removeHelpOffers``): a model's reply loses thinking
traces, workflow meta-talk and code fences; right before an end node it also loses "anything else?"
offers. The language guess decides, without a model, whether a message is plainly English; the hybrid
brain asks the model whenever it is not, since the rules only read English.
"""

from __future__ import annotations

import json
import re
import unicodedata

from core.language import render
from core.language import text as T

THINK_BLOCK = re.compile(r"<(think|thinking|reasoning|reflection|scratchpad)>.*?(</\1>|$)", re.S | re.I)
THINK_TAIL = re.compile(r"^.*?</(think|thinking|reasoning|reflection|scratchpad)>", re.S | re.I)
META_LINE = re.compile(
    r"^\s*(\*\*|__)?(thinking|thought|thoughts|reasoning|internal( note)?|analysis|plan|note to self|"
    r"current node|next node|node|moving to node|transitioning to|sop step|workflow)(\*\*|__)?\s*[:\-].*$",
    re.I | re.M)
META_SENTENCE = re.compile(r"(^|(?<=[.!?]\s))[^.!?\n]*\b(based on the sop( workflow)?|according to the sop|"
                           r"moving to node|the current node|as per the workflow|per the sop)\b[^.!?\n]*[.!?]?\s*",
                           re.I | re.M)
FENCE = re.compile(r"^```[a-z]*\s*|\s*```$", re.I)
HELP_OFFERS = [
    re.compile(r"\s*(is there )?anything else (that )?(i|we) can (help|assist|do)( you)?( with)?( today)?\s*\??\s*$",
               re.I),
    re.compile(r"\s*(can|may) i (help|assist) (you )?with anything else( today)?\s*\??\s*$", re.I),
    re.compile(r"\s*(let me know|feel free to (ask|reach out))[^.!?\n]*(anything else|other questions?|"
               r"further (help|assistance|questions?))[^.!?\n]*[.!]?\s*$", re.I),
    re.compile(r"\s*¿?(hay )?algo más en (lo|que) (que )?(pueda|puedo) ayudar(te|le)?\s*\??\s*$", re.I),
    re.compile(r"\s*(kann ich|können wir) (ihnen|dir) (sonst )?(noch )?((bei|mit) etwas( anderem)? )?(helfen|tun)"
               r"\s*\??\s*$", re.I),
    re.compile(r"\s*(puis-je|est-ce que je peux) vous aider (avec|pour) (autre chose|quelque chose d'autre)\s*\??\s*$",
               re.I),
]


def clean_reply(raw: str) -> str:
    """The customer-facing text of a model's reply: no thinking traces, no meta-talk, no code fences.

    A reply that is itself a JSON object with a ``reply``/``message`` field is unwrapped.
    """
    text = THINK_BLOCK.sub("", raw or "")
    text = THINK_TAIL.sub("", text)
    text = FENCE.sub("", text.strip())
    unwrapped = _unwrap_json(text)
    text = unwrapped if unwrapped is not None else text
    text = META_LINE.sub("", text).strip()
    text = META_SENTENCE.sub("", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text.strip('"').strip()


def _unwrap_json(text: str) -> str | None:
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    for key in ("reply", "message", "response", "text"):
        if isinstance(data, dict) and isinstance(data.get(key), str):
            return data[key]
    return None


def strip_help_offers(text: str) -> str:
    """No "anything else?" at the end of a reply right before an end node (several languages)."""
    out = render.strip_help_offer(text)
    changed = True
    while changed and out:
        changed = False
        for pattern in HELP_OFFERS:
            new = pattern.sub("", out).rstrip()
            if new != out:
                out, changed = new, True
    return out or text


# ------------------------------------------------------------------ language

SCRIPTS = {"THAI": "th", "CJK": "zh", "HIRAGANA": "ja", "KATAKANA": "ja", "HANGUL": "ko", "CYRILLIC": "ru",
           "ARABIC": "ar", "DEVANAGARI": "hi", "GREEK": "el", "HEBREW": "he", "BENGALI": "bn", "TAMIL": "ta",
           "TELUGU": "te", "GUJARATI": "gu", "KANNADA": "kn", "MALAYALAM": "ml", "GURMUKHI": "pa"}
FUNCTION_WORDS = {  # the most frequent short words of a few Latin-script languages (general language knowledge)
    "es": "el la los las un una y o que de del en por para con mi mis tu su es está estoy quiero tengo no sí "
          "cómo como dónde qué cuál hola gracias pero porque muy también necesito puedo",
    "fr": "le la les un une et ou que de du des en pour avec mon ma mes ton est suis je veux ai pas oui non "
          "comment où quoi quel bonjour merci mais parce très aussi besoin peux",
    "de": "der die das ein eine und oder dass von im mit mein meine ist bin ich will habe nicht ja nein wie wo "
          "was welche hallo danke aber weil sehr auch brauche kann",
    "pt": "o a os as um uma e ou que de do da em por para com meu minha é está estou quero tenho não sim como "
          "onde qual olá obrigado mas porque muito também preciso posso",
    "it": "il lo la gli le un una e o che di del in per con mio mia è sono voglio ho non sì come dove quale "
          "ciao grazie ma perché molto anche bisogno posso",
    "nl": "de het een en of dat van in met mijn is ben ik wil heb niet ja nee hoe waar wat welke hallo bedankt "
          "maar omdat erg ook nodig kan",
    "id": "yang dan atau di ke dari untuk dengan saya aku kamu ini itu tidak ya bagaimana dimana apa halo "
          "terima kasih tapi karena sangat juga perlu bisa mau",
}
FOREIGN = {lang: frozenset(words.split()) for lang, words in FUNCTION_WORDS.items()}
ENGLISH = frozenset("the a an and or that of in on for with my your is are am i you we it this not yes no how "
                    "where what which hello hi thanks thank but because very also need can want have has do does "
                    "please why when was were be been to from at by me our".split())
LANGUAGE_NAMES = {"en": "English", "es": "Spanish", "fr": "French", "de": "German", "pt": "Portuguese",
                  "it": "Italian", "nl": "Dutch", "id": "Indonesian", "th": "Thai", "zh": "Chinese",
                  "ja": "Japanese", "ko": "Korean", "ru": "Russian", "ar": "Arabic", "hi": "Hindi", "el": "Greek",
                  "he": "Hebrew", "bn": "Bengali", "ta": "Tamil", "te": "Telugu", "gu": "Gujarati",
                  "kn": "Kannada", "ml": "Malayalam", "pa": "Punjabi", "tr": "Turkish", "pl": "Polish",
                  "vi": "Vietnamese", "sv": "Swedish", "und": "the language the customer wrote in"}


def guess_language(text: str) -> str | None:
    """An ISO 639-1 guess for a message, or None when it says too little (an id, a number, "ok").

    Non-Latin scripts are named by their letters; Latin-script messages by their function words.
    """
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return None
    foreign_script = [ch for ch in letters if ord(ch) > 0x24F]
    if len(foreign_script) * 2 >= len(letters):
        counts: dict[str, int] = {}
        for ch in foreign_script:
            script = unicodedata.name(ch, "").split(" ")[0]
            lang = SCRIPTS.get(script)
            if lang:
                counts[lang] = counts.get(lang, 0) + 1
        return max(counts, key=lambda k: counts[k]) if counts else "und"
    words = [w.lower() for w in re.findall(r"[^\W\d_]+", text)]
    english = sum(w in ENGLISH for w in words)
    scores = {lang: sum(w in vocab and w not in ENGLISH for w in words) for lang, vocab in FOREIGN.items()}
    best = max(scores, key=lambda k: scores[k])
    if scores[best] >= 2 and scores[best] > english:
        return best
    if english or any(w in T.GENERAL_WORDS or w in T.STOPWORDS for w in words):
        return "en"
    return None


def language_name(code: str | None) -> str:
    """A language's English name for prompts ("es" -> "Spanish"); unknown codes are kept as they are."""
    if not code:
        return "English"
    return LANGUAGE_NAMES.get(code.lower(), code)


def normalise_code(code: str | None) -> str | None:
    """A model's language answer as a lower-case ISO-like code ("ES", "es-MX", "Spanish" -> "es")."""
    if not code:
        return None
    c = code.strip().lower()
    for k, name in LANGUAGE_NAMES.items():
        if c == name.lower():
            return k
    m = re.match(r"^([a-z]{2,3})([-_][a-z0-9]+)?$", c)
    return m.group(1) if m else None
