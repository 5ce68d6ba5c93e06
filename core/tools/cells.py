"""Spreadsheet cells as plain data: text a spreadsheet program would run as a formula is neutralised.

A cell that starts with ``=``, ``+``, ``-`` or ``@`` (after spaces), or with a tab or a carriage return,
is a formula to Excel, LibreOffice and Google Sheets (``=cmd|' /C calc'!A0``, ``@SUM(1+1)``, ``-2+3``).
Here it is data:

- written out (the inventory file the playground saves), it gets a leading single quote, as OWASP's
  CSV-injection advice says, so a spreadsheet opening the file shows it as text and never runs it;
- shown to a customer (an item's name, brand, category or attribute), its formula lead is dropped:
  ``=cmd|' /C calc'!A0`` reads ``cmd|' /C calc'!A0`` (a quote this module added is dropped with it).

A signed number (``-5``, ``+3.5``, ``-5 °C``, ``-12%``) is a number to a spreadsheet, not a formula, and stays
as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pandas as pd

QUOTE = "'"
_NUMBER = r"\d[\d,]*(?:\.\d+)?\s*(?:%|°\s*[CF]?|[A-Za-z]{1,4})?\s*$"  # after a sign: a number, maybe a unit
_FORMULA = re.compile(rf"[\t\r]|\s*[=@]|\s*[+-](?!{_NUMBER})", re.I)
_LEAD = "=+-@" + QUOTE + " \t\r\n"
_FIRST = frozenset(_LEAD + "\f\v\u00a0")  # a cell starting with anything else is plain text


def formula_like(text: object) -> bool:
    """Whether a spreadsheet would read ``text`` as a formula."""
    return isinstance(text, str) and text[:1] in _FIRST and _FORMULA.match(text) is not None


def quoted(text: str) -> str:
    """``text`` as it is written to a CSV or XLSX file: a formula gets a leading single quote."""
    return QUOTE + text if formula_like(text) else text


def shown(text: str) -> str:
    """``text`` as a customer sees it: a formula (quoted or not) without its lead; other text unchanged."""
    body = text.lstrip()
    if not (formula_like(text) or (body.startswith(QUOTE) and formula_like(body[1:]))):
        return text
    return body.lstrip(_LEAD).strip()


def map_cells(frame: pd.DataFrame, fix: Callable[[str], str], columns: list[str] | None = None,
              header: bool = False) -> tuple[pd.DataFrame, int]:
    """``frame`` with ``fix`` applied to the text cells of ``columns`` (default: all) and, with ``header``, to
    the column names; and how many cells and names it changed. Only cells that may need it are looked at."""
    out = frame
    changed = 0
    for col in columns if columns is not None else list(frame.columns):
        if col not in frame.columns:
            continue
        values = frame[col].tolist()
        hits = [i for i, v in enumerate(values) if isinstance(v, str) and v[:1] in _FIRST and fix(v) != v]
        if hits:
            if out is frame:
                out = frame.copy()
            fixed = out[col].astype(object)
            fixed.iloc[hits] = [fix(values[i]) for i in hits]
            out[col] = fixed.astype(frame[col].dtype)
            changed += len(hits)
    if header:
        names = [fix(c) if isinstance(c, str) else c for c in out.columns]
        renamed = sum(1 for a, b in zip(names, out.columns, strict=True) if a != b)
        if renamed:
            out = out.copy() if out is frame else out
            out.columns = names
            changed += renamed
    return out, changed


def quoted_rows(rows: list[list[str]]) -> tuple[list[list[str]], int]:
    """CSV rows with every formula quoted, and how many cells were."""
    count = 0
    out: list[list[str]] = []
    for row in rows:
        new = [quoted(c) for c in row]
        count += sum(1 for a, b in zip(new, row, strict=True) if a != b)
        out.append(new)
    return out, count
