"""Lint problems: what is wrong, where, and how bad."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Problem:
    """One lint finding, printed as ``file:line: error|warning: message``."""

    file: str
    line: int
    severity: Literal["error", "warning", "info"]  # info: how something was read (an inferred slot type)
    message: str
    column: int = 0
    unknown_action: str = ""  # a text SOP step no GAR row matches (the studio offers to add it)

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        if self.line and self.column:
            where += f":{self.column}"
        return f"{where}: {self.severity}: {self.message}"

    def as_dict(self) -> dict[str, object]:
        """JSON form."""
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "severity": self.severity,
            "message": self.message,
        }


def errors(problems: list[Problem]) -> list[Problem]:
    """Only the errors."""
    return [p for p in problems if p.severity == "error"]
