"""The inventory behind the item search (:mod:`core.tools.inventory`): the mapped table with role-named
columns and its vocabulary, loaded from a file or a Google Sheet (read again in time)."""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from core.shared.errors import Location, WorkspaceError
from core.shared.problems import Problem
from core.tools.cells import map_cells, shown
from core.tools.inventory_files import read_table
from core.tools.sheets import SheetFeed, sheet_table
from core.workspace.config import InventoryDecl

log = logging.getLogger(__name__)


@dataclass
class Catalog:
    """The inventory as a DataFrame with role-named columns, plus its vocabulary."""

    frame: pd.DataFrame
    attributes: list[str]
    sheet: LiveSheet | None = field(default=None, repr=False)  # a Google Sheet inventory, read again in time

    def refresh(self) -> None:
        """A Google Sheet inventory whose copy is older than its interval is read again in the background (the
        table in use until it is done); nothing happens for a file, or while the copy is fresh."""
        if self.sheet is not None:
            self.sheet.refresh_in_background(self)

    @property
    def categories(self) -> list[str]:
        return _distinct(self.frame, "category")

    @property
    def brands(self) -> list[str]:
        return _distinct(self.frame, "brand")

    def column_values(self, names: dict[str, str] | None = None) -> dict[str, list[str]]:
        """The distinct values of every column (at most 500 each), by role and attribute name, and by the
        file's own column name for each role in ``names`` (role -> column)."""
        out = {str(col): _distinct(self.frame, str(col))[:500] for col in self.frame.columns}
        for role, col in (names or {}).items():
            if role in out:
                out.setdefault(col, out[role])
        return out

    def item_texts(self) -> list[tuple[str, str]]:
        """Every item's category and its text (name, brand, category and attributes, lower-cased): the
        store's own product words, which lead a shopper's request to its items."""
        cols = [c for c in ("name", "brand", "category", *self.attributes) if c in self.frame]
        out = []
        for rec in self.frame[cols].to_dict("records"):
            text = " ".join(str(rec[c]) for c in cols if pd.notna(rec[c]) and str(rec[c]).strip())
            out.append((str(rec.get("category") or "").strip(), text.lower()))
        return out

    def attribute_values(self) -> dict[str, list[str]]:
        """Every attribute column (a mapped column beyond the roles) with the distinct values its cells hold,
        a cell listing several (``waterproof; light``) counted for each."""
        out: dict[str, list[str]] = {}
        for col in self.attributes:
            if col in self.frame:
                parts = {p for value in self.frame[col].dropna().astype(str) for p in value_parts(value)}
                out[col] = sorted(parts)
        return out

    def feature_words(self) -> set[str]:
        """The attribute values a shopper may name as a wish (for feature extraction): measures such as
        ``3.2 kg`` and one-letter sizes are read as quantities instead."""
        return {v for values in self.attribute_values().values() for v in values
                if len(v) > 1 and not re.fullmatch(r"[\d.\s]+\w{0,3}", v)}  # a size "M" is said as "size M"


def value_parts(cell: str) -> list[str]:
    """The values one attribute cell holds, lower-cased: ``Waterproof; light`` -> waterproof, light."""
    return [p.strip() for p in re.split(r"[;,/|]", str(cell).lower()) if p.strip()]


def _distinct(frame: pd.DataFrame, role: str) -> list[str]:
    if role not in frame:
        return []
    return sorted({str(v).strip() for v in frame[role].dropna() if str(v).strip()})


def load_catalog(decl: InventoryDecl, root: Path) -> tuple[Catalog, list[Problem]]:
    """Load the inventory and rename mapped columns to their roles.

    Raises:
        WorkspaceError: when the file (or the Google Sheet, with no copy of it yet) cannot be read or a mapped
            column is missing.
    """
    if decl.google_sheet:
        return sheet_catalog(SheetFeed.for_inventory(decl, root), decl)
    return map_inventory(read_table(decl.source, root, decl.sheet), decl, decl.source)


def sheet_catalog(feed: SheetFeed, decl: InventoryDecl) -> tuple[Catalog, list[Problem]]:
    """A Google Sheet inventory read through ``feed`` and mapped by ``decl``, read again in time (see
    :meth:`Catalog.refresh`).

    Raises:
        WorkspaceError: as :func:`load_catalog`.
    """
    live = LiveSheet(feed, decl)
    catalog, problems = live.read()
    catalog.sheet = live
    return catalog, problems


class LiveSheet:
    """A Google Sheet inventory behind a catalog: its feed (core/tools/sheets.py) and its mapping."""

    def __init__(self, feed: SheetFeed, decl: InventoryDecl) -> None:
        self.feed = feed
        self.decl = decl
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def read(self, force: bool = False) -> tuple[Catalog, list[Problem]]:
        """The sheet mapped to roles: its fresh copy, else (or when ``force``) a new one (:meth:`SheetFeed.read`).

        Raises:
            WorkspaceError: as :func:`load_catalog`.
        """
        values, problems = self.feed.read(force)
        table, lines = sheet_table(values, self.feed.label)
        catalog, more = map_inventory(table, self.decl, self.feed.label, lines)
        return catalog, problems + more

    def refresh_in_background(self, catalog: Catalog) -> bool:
        """Start reading the sheet again into ``catalog`` when it is due and no read is running; whether one
        started."""
        with self._lock:
            if (self._thread is not None and self._thread.is_alive()) or not self.feed.due():
                return False
            self._thread = threading.Thread(target=self._renew, args=(catalog,), daemon=True,
                                            name=f"refresh {self.feed.label}")
            self._thread.start()
            return True

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a background read to finish; whether none is running any more."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return thread is None or not thread.is_alive()

    def _renew(self, catalog: Catalog) -> None:
        try:
            fresh, problems = self.read()
        except WorkspaceError as exc:  # the sheet lost a mapped column: the table in use stays until a reload
            log.warning("%s: %s", exc.location or self.feed.label, exc.message)
            return
        for problem in problems:
            log.warning("%s", problem)
        catalog.frame = fresh.frame


def map_inventory(raw: pd.DataFrame, decl: InventoryDecl, file: str,
                  lines: list[int] | None = None) -> tuple[Catalog, list[Problem]]:
    """An inventory table (``file`` names it in problems; ``lines``: each row's line, else its position + 2)
    with mapped columns renamed to their roles.

    Raises:
        WorkspaceError: a mapped column is missing.
    """
    raw.columns = [str(c).strip() for c in raw.columns]
    missing = [f"{role} -> {col!r}" for role, col in decl.columns.items() if col not in raw.columns]
    missing += [f"attribute {a!r}" for a in decl.attributes if a not in raw.columns]
    if missing:
        what = "sheet" if decl.google_sheet else "file"
        raise WorkspaceError(f"column(s) not in the {what}: {', '.join(missing)}; the {what} has "
                             f"{', '.join(raw.columns)}", Location(file, 1))
    frame = pd.DataFrame({role: raw[col] for role, col in decl.columns.items()})
    for attr in decl.attributes:
        frame[attr] = raw[attr]
    # a cell a spreadsheet would run as a formula is data: customers see it without its formula lead
    frame, _ = map_cells(frame, shown, [c for c in frame.columns if c not in ("price", "stock")])
    problems: list[Problem] = []
    for role in ("price", "stock"):
        if role in frame:
            frame[role], bad = numeric_column(frame[role])
            for idx in bad[:5]:
                problems.append(Problem(file, lines[idx] if lines else idx + 2, "warning",
                                        f"{role} value {raw[decl.columns[role]][idx]!r} is not a number"))
    return Catalog(frame, list(decl.attributes)), problems


def numeric_column(col: pd.Series) -> tuple[pd.Series, list[int]]:
    cleaned = col.astype(str).str.replace(r"[^\d.\-]", "", regex=True)
    nums = pd.to_numeric(cleaned, errors="coerce")
    bad = [i for i, (v, s) in enumerate(zip(nums, col.astype(str), strict=True)) if pd.isna(v) and s.strip()]
    return nums, bad
