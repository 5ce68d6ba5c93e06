"""The built-in item search (``inventory.query`` unless store.yaml's ``commerce.search_tool`` renames it):
read-only filters over the mapped inventory."""

from __future__ import annotations

import io
import logging
import re
import threading
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from core.language.text import plural_forms, tokens
from core.shared.errors import Location, ToolError, WorkspaceError
from core.shared.problems import Problem
from core.tools.base import ToolSpec
from core.tools.cells import map_cells, shown
from core.tools.sheets import SheetFeed, sheet_table
from core.workspace.config import DEFAULT_SEARCH_TOOL, InventoryDecl
from core.workspace.params import Param
from core.workspace.paths import read_text_file, workspace_path

ROLE_ORDER = ("sku", "name", "category", "brand", "price", "stock")

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

    def feature_words(self) -> set[str]:
        """Words that appear in the attribute columns (for feature extraction)."""
        words: set[str] = set()
        for col in self.attributes:
            if col in self.frame:
                for value in self.frame[col].dropna().astype(str):
                    for part in re.split(r"[;,/|]", value.lower()):
                        part = part.strip()
                        if part and not re.fullmatch(r"[\d.\s]+\w{0,3}", part):
                            words.add(part)
        return words


def _distinct(frame: pd.DataFrame, role: str) -> list[str]:
    if role not in frame:
        return []
    return sorted({str(v).strip() for v in frame[role].dropna() if str(v).strip()})


def read_table(source: str, root: Path, sheet: str = "", key: str = "inventory.source") -> pd.DataFrame:
    """Read a CSV/XLSX file of the workspace (or a CSV URL) as strings; ``key`` is where store.yaml names it.

    Raises:
        WorkspaceError: naming the file and what is wrong; a file outside the workspace (after ``..``, an
            absolute path or a symbolic link) is refused, naming store.yaml's key and the path.
    """
    if source.startswith(("http://", "https://")):
        try:
            return pd.read_csv(source, dtype=str, keep_default_na=False)
        except Exception as exc:  # noqa: BLE001 - any failure of a remote sheet is reported the same way
            raise WorkspaceError(f"cannot read the sheet: {exc}", Location(source)) from exc
    path = workspace_path(root, source, key).resolve()
    if not path.exists():
        raise WorkspaceError("file does not exist", Location(source))
    if path.suffix.lower() in (".xlsx", ".xlsm"):
        why = check_workbook(path.read_bytes())
        if why:
            raise WorkspaceError(why, Location(source))
        try:
            return pd.read_excel(path, sheet_name=sheet or 0, dtype=str, nrows=MAX_ROWS).fillna("")
        except Exception as exc:  # noqa: BLE001
            raise WorkspaceError(f"cannot read the spreadsheet: {exc}", Location(source)) from exc
    text = read_text_file(path, name=source)
    try:
        return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except pd.errors.ParserError as exc:
        line = _parser_line(str(exc))
        raise WorkspaceError(f"malformed CSV: {exc}", Location(source, line)) from exc
    except pd.errors.EmptyDataError as exc:
        raise WorkspaceError("the file is empty", Location(source)) from exc


MAX_XLSX_UNPACKED = 64 * 1024 * 1024  # bytes a workbook may unpack to
MAX_XLSX_RATIO = 200  # a part compressed more than this is a decompression bomb, not a spreadsheet
MAX_ROWS = 200_000


def check_workbook(data: bytes) -> str:
    """Why an .xlsx workbook must not be opened ('' when it may): not a zip archive, or one that unpacks
    to more than MAX_XLSX_UNPACKED bytes or compresses a part more than MAX_XLSX_RATIO times (a bomb),
    both read from the archive's directory before anything is decompressed; or an XML part declaring a
    document type or entities, or not well formed (each read up to its first element)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            parts = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        return f"this is not a readable .xlsx workbook ({exc})"
    total = sum(p.file_size for p in parts)
    if total > MAX_XLSX_UNPACKED:
        return f"the workbook unpacks to {total / 2**20:,.0f} MB; the limit is {MAX_XLSX_UNPACKED // 2**20} MB"
    bomb = next((p for p in parts
                 if p.file_size > 1_000_000 and p.file_size > MAX_XLSX_RATIO * max(1, p.compress_size)), None)
    if bomb is not None:
        ratio = bomb.file_size // max(1, bomb.compress_size)
        return f"the workbook's part {bomb.filename} is compressed {ratio:,} times: refused as a decompression bomb"
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return next((why for part in parts if not part.is_dir() and (why := _xml_part_problem(archive, part))), "")


XML_STARTS = (b"<", b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")  # a part that is XML starts so (after spaces)


def _xml_part_problem(archive: zipfile.ZipFile, part: zipfile.ZipInfo) -> str:
    """Why one part of a workbook must not be parsed ('' when it may): XML declaring a document type (a DTD,
    where entities are declared: the "billion laughs" and external-entity attacks) or XML that is not
    well formed. Read with defusedxml up to the document's first element, where a DTD must stand."""
    from xml.etree.ElementTree import ParseError

    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import iterparse

    try:
        with archive.open(part) as head:
            if not head.read(64).lstrip().startswith(XML_STARTS):
                return ""  # not XML (a picture, a binary part): openpyxl reads it or leaves it
        with archive.open(part) as source:
            for _ in iterparse(source, events=("start",), forbid_dtd=True, forbid_entities=True,
                               forbid_external=True):
                break
    except DefusedXmlException:
        return (f"the workbook's part {part.filename} declares a document type or entities (<!DOCTYPE>, "
                "<!ENTITY>): refused, a spreadsheet never needs them; save the file again from your spreadsheet "
                "program")
    except ParseError as exc:
        return f"the workbook's part {part.filename} is not well-formed XML ({exc})"
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError) as exc:
        return f"the workbook's part {part.filename} cannot be unpacked ({exc})"
    return ""


def _parser_line(message: str) -> int:
    m = re.search(r"line (\d+)", message)
    return int(m.group(1)) if m else 0


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


@dataclass(frozen=True)
class _Row:
    """One inventory row as the filters read it (lower-cased text, plural forms, numbers)."""

    position: int
    sku: str | None
    categories: set[str] | None
    brand: str | None
    price: float | None
    stock: float
    haystack: str  # name, brand, category and attributes, for text and feature matches


class InventoryTool:
    """Filters over the mapped inventory: category, brand, price range, in-stock, text match."""

    PARAMS = ("category", "brand", "budget", "min_price", "max_price", "query", "features", "in_stock", "sku",
              "name", "limit", "exclude_brands", "prefer_brands", "sort")

    def __init__(self, catalog: Catalog, name: str = DEFAULT_SEARCH_TOOL) -> None:
        self.catalog = catalog
        self._cache: tuple[pd.DataFrame, list[_Row]] | None = None  # the table and its plain rows
        self._records: tuple[pd.DataFrame, dict[int, dict[str, Any]]] | None = None  # rows as returned, by position
        self.spec = ToolSpec(name, "Search the store's inventory (read-only)", [Param(p, True) for p in self.PARAMS])

    def run(self, args: dict[str, Any]) -> Any:
        self.catalog.refresh()  # a Google Sheet past its interval: read again in the background
        frame = self.catalog.frame  # one table for the whole search, even if a refresh replaces it meanwhile
        keep = self._filter(args)
        rows = [r for r in self._rows(frame) if keep(r)]
        features = args.get("features")
        feats = [features] if isinstance(features, str) else list(features or [])
        feats = [str(f).lower() for f in feats if str(f).strip()]
        liked = _lower_set(args.get("prefer_brands"))
        price_up = str(args.get("sort") or "") in ("price", "cheapest", "price_asc")

        def order(r: _Row) -> tuple[int, int, int, bool, float]:  # in stock, preferred, features, then price
            price = r.price if r.price is not None else 0.0
            return (-int(r.stock > 0), -int(r.brand in liked), -sum(f in r.haystack for f in feats),
                    r.price is None, price if price_up else -price)

        rows.sort(key=order)  # stable: the table's order among equals
        return [self._record_at(frame, r.position) for r in rows[:_int(args.get("limit"), 5)]]

    def _record_at(self, df: pd.DataFrame, position: int) -> dict[str, Any]:
        """The record of a row as a search returns it (a copy), made once per row and table: reading a row
        through pandas costs more than the whole search."""
        if self._records is None or self._records[0] is not df:
            self._records = (df, {})
        made = self._records[1]
        if position not in made:
            made[position] = self._record(df.iloc[position])
        return dict(made[position])

    def _rows(self, df: pd.DataFrame) -> list[_Row]:
        """The inventory as plain rows (a pandas pass per query cost ~10 ms a turn), built once per table."""
        if self._cache is None or self._cache[0] is not df:
            cols = ["name", "brand", "category", *self.catalog.attributes]
            has = set(df.columns)
            rows = []
            for position, rec in enumerate(df.to_dict("records")):
                price, stock = rec.get("price"), rec.get("stock")
                rows.append(_Row(
                    position=position,
                    sku=str(rec.get("sku")).lower() if "sku" in has else None,
                    categories=plural_forms(str(rec.get("category"))) if "category" in has else None,
                    brand=str(rec.get("brand")).lower() if "brand" in has else None,
                    price=float(price) if "price" in has and pd.notna(price) else None,
                    stock=(float(stock) if pd.notna(stock) else 0.0) if "stock" in has else 1.0,
                    haystack=" ".join(str(rec[c]) for c in cols if c in rec and pd.notna(rec[c])).lower()))
            self._cache = (df, rows)
        return self._cache[1]

    def _filter(self, args: dict[str, Any]) -> Callable[[_Row], bool]:
        """Whether a row passes every filter the arguments set; a filter on a column the table lacks is
        off. Numbers are read once, so a bad one is an input error even on an empty table."""
        has = set(self.catalog.frame.columns)
        sku = str(args.get("sku")).strip().lower() if args.get("sku") and "sku" in has else None
        wanted = plural_forms(str(args["category"])) if args.get("category") and "category" in has else None
        brand = args.get("brand")
        brands = {str(n).strip().lower() for n in ([brand] if isinstance(brand, str) else list(brand))} \
            if brand and "brand" in has else None
        excluded = _lower_set(args.get("exclude_brands")) if "brand" in has else set()
        high = low = None
        if "price" in has:
            high, low = _num(args.get("max_price")) or _num(args.get("budget")), _num(args.get("min_price"))
        in_stock = _truthy(args.get("in_stock")) and "stock" in has
        words = [w for text in (args.get("query"), args.get("name")) if text for w in [tokens(str(text))]]

        def keep(r: _Row) -> bool:
            if (sku is not None and r.sku != sku) or (wanted is not None and not (r.categories or set()) & wanted):
                return False
            if (brands is not None and r.brand not in brands) or (excluded and r.brand in excluded):
                return False
            if (high is not None or low is not None) and (
                    r.price is None or (high is not None and r.price > high) or (low is not None and r.price < low)):
                return False
            if in_stock and r.stock <= 0:
                return False
            return all(all(w in r.haystack for w in ws) for ws in words)

        return keep

    def _record(self, row: pd.Series) -> dict[str, Any]:
        rec: dict[str, Any] = {}
        for role in ROLE_ORDER:
            if role in row and pd.notna(row[role]):
                val = row[role]
                if role in ("price", "stock"):
                    val = int(val) if float(val).is_integer() else float(val)
                rec[role] = val
        for attr in self.catalog.attributes:
            if attr in row and str(row[attr]).strip():
                rec[attr] = str(row[attr])
        return rec


def _lower_set(value: Any) -> set[str]:
    """One name or a list of names, lower-cased."""
    names = [value] if isinstance(value, str) else list(value or [])
    return {str(n).lower() for n in names}


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "y")
    return bool(value)


def _num(value: Any) -> float | None:
    if value in (None, ""):
        return None
    try:
        return float(str(value).replace(",", ""))
    except ValueError as exc:
        raise ToolError(f"invalid number {value!r}", "invalid_input") from exc


def _int(value: Any, default: int) -> int:
    try:
        return max(1, min(50, int(value)))
    except (TypeError, ValueError):
        return default
