"""Fields of an SOP file read with their type checked: a wrong type is a problem with file:line, never a
crash of the compiler ("priority": "high", triggers that are a number, nextNodes that are not a list)."""

from __future__ import annotations

from typing import Any

from core.shared.problems import Problem


def whole_number(value: Any, default: int, what: str, file: str, line: int, problems: list[Problem]) -> int:
    """``value`` as a whole number (``default`` when absent); anything else is an error."""
    if value is None or value == "":
        return default
    if isinstance(value, bool) or not isinstance(value, int | str | float):
        problems.append(Problem(file, line, "error", f"{what} must be a whole number, got {value!r}"))
        return default
    try:
        number = float(value)
    except ValueError:
        problems.append(Problem(file, line, "error", f"{what} must be a whole number, got {value!r}"))
        return default
    if not number.is_integer():
        problems.append(Problem(file, line, "error", f"{what} must be a whole number, got {value!r}"))
        return default
    return int(number)


def text_list(value: Any, what: str, file: str, line: int, problems: list[Problem]) -> list[str]:
    """``value`` as a list of texts (empty when absent); a lone text is a list of one, anything else an
    error."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str | int | float) and not isinstance(v, bool) for v in value):
        return [str(v) for v in value]
    problems.append(Problem(file, line, "error", f"{what} must be a list of texts, got {value!r}"[:200]))
    return []


def text(value: Any, what: str, file: str, line: int, problems: list[Problem]) -> str:
    """``value`` as a text ('' when absent); a list or a mapping is an error."""
    if value is None:
        return ""
    if isinstance(value, dict | list):
        problems.append(Problem(file, line, "error", f"{what} must be a text, got {value!r}"[:200]))
        return ""
    return str(value)


def text_map(value: Any, what: str, file: str, line: int, problems: list[Problem]) -> dict[str, str]:
    """``value`` as a mapping of names to texts (empty when absent); anything else is an error."""
    if value is None or value == "":
        return {}
    if isinstance(value, dict) and all(isinstance(k, str | int) and isinstance(v, str | int | float)
                                       and not isinstance(v, bool) for k, v in value.items()):
        return {str(k).strip(): str(v).strip() for k, v in value.items()}
    problems.append(Problem(file, line, "error", f"{what} must map names to texts (order_id: id), got {value!r}"[:200]))
    return {}
