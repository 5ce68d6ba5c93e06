"""The engine's own sentences to customers, per language (``<language>.yaml`` here).

The flow produces message intents (a key and its values); :func:`say` words one in the customer's
language, falling back to English for a sentence a language file does not have.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent


@cache
def catalogue(language: str) -> dict[str, str]:
    """One language's sentences ({} when the language has no file)."""
    path = HERE / f"{language}.yaml"
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return {str(k): str(v) for k, v in data.items()}


def say(key: str, language: str = "en", **values: Any) -> str:
    """The sentence for a message intent in a language (English when that language lacks it).

    Raises:
        KeyError: an intent no catalogue has (a programming error).
    """
    template = catalogue(language).get(key) or catalogue("en")[key]
    return template.format(**values)


def languages() -> list[str]:
    """The languages with a catalogue."""
    return sorted(p.stem for p in HERE.glob("*.yaml"))
