"""The engine's own sentences to customers, per language (``<language>.yaml`` here).

The flow produces message intents (a key and its values); :func:`say` words one in the customer's
language, falling back to English for a sentence a language file does not have.

A turn speaks in one *voice*: the customer's language and the store's polite particle (store.yaml
``polite_particle``, e.g. ``ค่ะ``; a Thai sentence writes ``{p}`` where a statement closes with it and
``{pq}`` where a question does). The orchestrator sets the voice for the turn (:func:`use_voice`), so
sentences worded deep in the flow (an item list, a fix) follow the customer without being told.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Voice:
    """The language a turn's sentences are said in, and the store's polite particle ("" for the
    language's own default)."""

    language: str = "en"
    particle: str = ""


_VOICE: ContextVar[Voice | None] = ContextVar("reply_voice", default=None)


def use_voice(language: str, particle: str = "") -> Token[Voice | None]:
    """Speak in ``language`` with ``particle`` from now on in this context (a turn); returns the token
    :func:`reset_voice` takes."""
    return _VOICE.set(Voice(language or "en", particle))


def reset_voice(token: Token[Voice | None] | None = None) -> None:
    """Back to the voice before :func:`use_voice` (the default, English, without a token)."""
    if token is not None:
        _VOICE.reset(token)
    else:
        _VOICE.set(None)


def voice() -> Voice:
    """The current voice (English with the default particle outside a turn)."""
    return _VOICE.get() or Voice()


@cache
def _data(language: str) -> dict[str, Any]:
    path = HERE / f"{language}.yaml"
    if not path.is_file():
        return {}
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


@cache
def catalogue(language: str) -> dict[str, str]:
    """One language's sentences ({} when the language has no file)."""
    return {str(k): str(v) for k, v in _data(language).items() if isinstance(v, str | int | float)}


def table(language: str, key: str) -> dict[str, str]:
    """A mapping a language file holds under ``key`` (its particles, its words for common things)."""
    raw = _data(language).get(key)
    return {str(k).lower(): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def particles(language: str, particle: str = "") -> tuple[str, str]:
    """The polite particle closing a statement and the one closing a question, in a language (("", "")
    for a language without them): the store's ``particle`` if given, else the language's ``particle``
    entry; the question form from its ``particles`` table ("ค่ะ" asks with "คะ")."""
    data = _data(language)
    default = str(data.get("particle") or "")
    if not default:
        return "", ""
    said = particle or default
    forms = table(language, "particles")
    return said, forms.get(said, said)


def say(key: str, language: str | None = None, **values: Any) -> str:
    """The sentence for a message intent in a language (default: the turn's; English when that language
    lacks it).

    Raises:
        KeyError: an intent no catalogue has (a programming error).
    """
    current = voice()
    language = language or current.language
    template = catalogue(language).get(key) or catalogue("en")[key]
    p, pq = particles(language, current.particle)
    return template.format(**{"p": p, "pq": pq, **values})


def languages() -> list[str]:
    """The languages with a catalogue."""
    return sorted(p.stem for p in HERE.glob("*.yaml"))
