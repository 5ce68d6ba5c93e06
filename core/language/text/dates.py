"""Times and days: clock times in one spelling and relative days named as weekdays."""

from __future__ import annotations

import re
from datetime import date

CLOCK = re.compile(r"\b(\d{1,2})(?:[:.]00)?\s*([ap])\.?\s*m\b\.?", re.I)


def normalise_clock(text: str) -> str:
    """Clock times in one spelling: "7pm", "7:00 p.m." and "7 PM" all become "7 pm"."""
    return CLOCK.sub(lambda m: f"{int(m.group(1))} {m.group(2).lower()}m", text)


WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
RELATIVE_DAY = re.compile(r"\b(?:(the )?day after (tomorrow|tmrw)|tomorrow|tomorow|tmrw|tommorow|tommorrow|today|"
                          r"tonight|this (morning|afternoon|evening))(?:'?s)?\b", re.I)


def name_days(text: str, today: date) -> str:
    """Relative days also as weekday names: "tomorrow" on a Friday reads "tomorrow (Saturday)"."""

    def day(m: re.Match[str]) -> str:
        said = m.group(0).lower()
        ahead = 2 if "after" in said else 1 if said.startswith("tom") or said.startswith("tmrw") else 0
        return f"{m.group(0)} ({WEEKDAYS[(today.weekday() + ahead) % 7]})"

    if any(re.search(rf"\b{d}\b", text, re.I) for d in WEEKDAYS):
        return text  # the customer named the day themselves
    return RELATIVE_DAY.sub(day, text)
