"""Uploaded files: validation (type, size, encoding), inventory column mapping, KB documents.

Nothing here writes to disk: each function returns a :class:`ChangeSet` that the
playground lints on a staged copy before committing it.
"""

from __future__ import annotations

import csv
import io
import re
import zipfile
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import pandas as pd
import yaml

from core.playground.changes import ChangeSet
from core.shared.errors import Location, UserInputError
from core.tools.catalog import numeric_column
from core.tools.cells import map_cells, quoted, quoted_rows
from core.tools.inventory_files import MAX_ROWS, check_workbook
from core.workspace.config import ROLES
from core.workspace.paths import MAX_FILE_BYTES

MAX_UPLOAD_BYTES = MAX_FILE_BYTES
INVENTORY_TYPES = (".csv", ".xlsx")
KB_TYPES = (".md", ".txt", ".pdf")
REQUIRED_ROLES = ("name", "price")
RECOMMENDED_ROLES = ("category", "stock", "brand")
XLSX_MAGIC = b"PK\x03\x04"
PDF_MAGIC = b"%PDF-"

SYNONYMS: dict[str, tuple[str, ...]] = {
    "sku": ("sku", "item code", "product code", "code", "product id", "item id", "id", "article", "part number"),
    "name": ("name", "product", "product name", "item", "item name", "title", "model"),
    "category": ("category", "type", "product type", "gear type", "department", "group", "kind", "class"),
    "price": ("price", "cost", "unit price", "retail price", "amount", "msrp", "sale price"),
    "stock": ("stock", "qty", "quantity", "on hand", "in stock", "available", "inventory", "units"),
    "brand": ("brand", "maker", "manufacturer", "vendor", "make", "label"),
    "description": ("description", "details", "summary", "notes"),
}


class UploadError(UserInputError):
    """An uploaded file cannot be used; the message names the file and what is wrong."""


def _size(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB" if n >= 1024 * 1024 else f"{n / 1024:.0f} KB"


def check_upload(name: str, data: bytes, allowed: tuple[str, ...], limit: int = MAX_UPLOAD_BYTES) -> str:
    """Check an upload's type, size and (for text) encoding; return its lower-case extension.

    Raises:
        UploadError: empty, too large, wrong type, binary where text is expected, or not UTF-8.
    """
    ext = PurePath(name).suffix.lower()
    if ext not in allowed:
        raise UploadError(f"'{ext or name}' files are not accepted here; use {', '.join(allowed)}", Location(name))
    if not data:
        raise UploadError("the file is empty", Location(name))
    if len(data) > limit:
        raise UploadError(f"the file is {_size(len(data))}; the limit is {_size(limit)}", Location(name))
    if ext == ".xlsx":
        if not data.startswith(XLSX_MAGIC):
            raise UploadError("this is not an Excel .xlsx workbook (its content is of another type)", Location(name))
        why = check_workbook(data)
        if why:
            raise UploadError(why, Location(name))
    elif ext == ".pdf":
        if not data.startswith(PDF_MAGIC):
            raise UploadError("this is not a PDF document (it does not start with %PDF-)", Location(name))
    else:
        decode_text(name, data)
    return ext


def decode_text(name: str, data: bytes) -> str:
    """UTF-8 text of an upload (a BOM is dropped).

    Raises:
        UploadError: with the line and column of a NUL byte or an invalid UTF-8 sequence.
    """
    nul = data.find(b"\x00")
    if nul >= 0:
        line, col = _position(data, nul)
        raise UploadError("the file looks binary (it contains NUL bytes), not text", Location(name, line, col))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line, col = _position(data, exc.start)
        raise UploadError(f"the file is not UTF-8 text (byte 0x{data[exc.start]:02x}); save it as UTF-8",
                          Location(name, line, col)) from exc


def _position(data: bytes, offset: int) -> tuple[int, int]:
    line = data.count(b"\n", 0, offset) + 1
    return line, offset - (data.rfind(b"\n", 0, offset) + 1) + 1


def read_inventory(name: str, data: bytes) -> pd.DataFrame:
    """The uploaded inventory as a table of strings, as the playground will save it: a cell or column name
    a spreadsheet would run as a formula (``=cmd|' /C calc'!A0``, ``@SUM(1+1)``, ``-2+3``) is quoted
    (``'=cmd…``), so it is plain text in the preview, in a download of it and in the saved file
    (core/tools/cells.py).

    Raises:
        UploadError: wrong type/size/encoding, malformed CSV (with its line), a workbook that cannot be read
            (not a zip archive, XML declaring a document type or entities, XML that is not well formed, ...),
            no rows, blank or duplicate column names.
    """
    frame, _ = map_cells(_read_table(name, data), quoted, header=True)
    return frame


def _read_table(name: str, data: bytes) -> pd.DataFrame:
    """The uploaded inventory as read, its shape checked (:func:`read_inventory`)."""
    ext = check_upload(name, data, INVENTORY_TYPES)
    try:
        if ext == ".xlsx":
            frame = _read_workbook(name, data)
        else:
            frame = pd.read_csv(io.StringIO(decode_text(name, data)), dtype=str, keep_default_na=False,
                                skip_blank_lines=True)
    except pd.errors.ParserError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise UploadError(f"malformed CSV: {exc}", Location(name, int(m.group(1)) if m else 0)) from exc
    except pd.errors.EmptyDataError as exc:
        raise UploadError("the file has no header row", Location(name, 1)) from exc
    cols = [str(c).strip() for c in frame.columns]
    blank = [i + 1 for i, c in enumerate(cols) if not c or c.startswith("Unnamed:")]
    if blank:
        raise UploadError(f"column {blank[0]} has no name in the header row", Location(name, 1, blank[0]))
    dupes = sorted({c for c in cols if cols.count(c) > 1} | {c for c in cols if re.fullmatch(r".+\.\d+", c)
                                                              and c.rsplit(".", 1)[0] in cols})
    if dupes:
        raise UploadError(f"duplicate column name(s) in the header row: {', '.join(dupes)}", Location(name, 1))
    frame.columns = cols
    if len(frame) > MAX_ROWS:
        raise UploadError(f"the file has more than {MAX_ROWS:,} items; the limit is {MAX_ROWS:,}", Location(name))
    if frame.empty:
        raise UploadError("the file has a header row but no items", Location(name, 2))
    return frame


def _read_workbook(name: str, data: bytes) -> pd.DataFrame:
    """The first sheet of an uploaded workbook (checked by :func:`check_upload` first), as strings.

    Raises:
        UploadError: whatever makes the workbook unreadable (broken XML or zip parts, missing parts, values
            of the wrong type): all are the file's fault, and all are named as such.
    """
    try:
        return pd.read_excel(io.BytesIO(data), dtype=str, nrows=MAX_ROWS + 1).fillna("")
    except pd.errors.EmptyDataError as exc:
        raise UploadError("the file has no header row", Location(name, 1)) from exc
    except Exception as exc:  # noqa: BLE001 - openpyxl fails on a broken workbook in many ways (ParseError, ...)
        why = " ".join(str(exc).split())[:300] or type(exc).__name__
        raise UploadError(f"cannot read the workbook: {why}", Location(name)) from exc


def stored_inventory(name: str, data: bytes) -> bytes:
    """The bytes the playground saves for an uploaded inventory: the upload itself, unless a cell (or column
    name) is a formula to a spreadsheet; then the table with every such cell quoted (``'=cmd…``, OWASP's
    CSV-injection advice): a CSV rewritten row by row, a workbook written again from its values (its first
    sheet, the values :func:`read_inventory` previewed).

    Raises:
        UploadError: as :func:`read_inventory`.
    """
    ext = check_upload(name, data, INVENTORY_TYPES)
    if ext == ".xlsx":
        frame, changed = map_cells(_read_table(name, data), quoted, header=True)
        if not changed and not _has_formulas(data):
            return data
        out = io.BytesIO()
        frame.to_excel(out, index=False)
        return out.getvalue()
    text = decode_text(name, data)
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise UploadError(f"malformed CSV: {exc}", Location(name)) from exc
    if rows:
        rows[0] = [c.strip() for c in rows[0]]  # column names as read_inventory reads them
    rows, changed = quoted_rows(rows)
    if not changed:
        return data
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue().encode("utf-8")


_FORMULA_ELEMENT = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?f[\s>/]")


def _has_formulas(data: bytes) -> bool:
    """Whether a workbook's sheets hold formulas (``<f>`` elements); the workbook passed :func:`check_workbook`."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for part in archive.infolist():
            if part.filename.startswith("xl/worksheets/") and _FORMULA_ELEMENT.search(archive.read(part)):
                return True
    return False


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def suggest_mapping(columns: list[str], current: dict[str, str] | None = None) -> dict[str, str]:
    """A role → column guess: the current mapping where its column exists, then exact synonyms, then partial ones."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for role, col in (current or {}).items():
        if col in columns and role in ROLES:
            out[role] = col
            used.add(col)
    normed = {c: _norm(c) for c in columns}
    for exact in (True, False):
        for role in ROLES:
            if role in out:
                continue
            for syn in SYNONYMS[role]:
                hit = next((c for c in columns if c not in used and (
                    normed[c] == syn if exact else re.search(rf"\b{re.escape(syn)}\b", normed[c]))), None)
                if hit:
                    out[role] = hit
                    used.add(hit)
                    break
    return out


@dataclass(frozen=True)
class MappingProblem:
    """A problem with a column mapping: ``error`` blocks applying it."""

    severity: str
    message: str
    line: int = 0

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


def check_mapping(name: str, frame: pd.DataFrame, mapping: dict[str, str],
                  attributes: list[str]) -> list[MappingProblem]:
    """Check a role → column mapping against the uploaded table (required roles, duplicates, numbers)."""
    cols = list(frame.columns)
    mapping = {r: c for r, c in mapping.items() if c}
    return (_roles_mapped(name, cols, mapping) + _columns_unique(name, cols, mapping, attributes)
            + _numbers(frame, mapping) + _names(frame, mapping))


def _roles_mapped(name: str, cols: list[str], mapping: dict[str, str]) -> list[MappingProblem]:
    have = ", ".join(cols)
    found = [MappingProblem("error", f"{name}: the required role '{role}' is not mapped to a column "
                                     f"(the file has: {have})") for role in REQUIRED_ROLES if role not in mapping]
    found += [MappingProblem("warning", f"the '{role}' role is not mapped; recommendations cannot use it")
              for role in RECOMMENDED_ROLES if role not in mapping]
    found += [MappingProblem("error", f"{name}: role '{role}' is mapped to '{col}', which is not a column")
              for role, col in mapping.items() if col not in cols]
    return found


def _columns_unique(name: str, cols: list[str], mapping: dict[str, str], attributes: list[str]) -> list[MappingProblem]:
    found: list[MappingProblem] = []
    taken: dict[str, str] = {}
    for role, col in mapping.items():
        if col in taken:
            found.append(MappingProblem("error", f"column '{col}' is mapped to both '{taken[col]}' and '{role}'"))
        taken[col] = role
    for attr in attributes:
        if attr not in cols:
            found.append(MappingProblem("error", f"attribute '{attr}' is not a column of {name}"))
        elif attr in taken:
            found.append(MappingProblem("error", f"column '{attr}' is both the '{taken[attr]}' role and an attribute"))
    return found


def _numbers(frame: pd.DataFrame, mapping: dict[str, str]) -> list[MappingProblem]:
    found: list[MappingProblem] = []
    for role in ("price", "stock"):
        col = mapping.get(role)
        if col not in frame.columns:
            continue
        values, bad = numeric_column(frame[col])
        if values.notna().sum() == 0:
            found.append(MappingProblem("error", f"column '{col}' mapped to '{role}' holds no numbers "
                                                 f"(first value: {frame[col].iloc[0]!r})", 2))
            continue
        found += [MappingProblem("warning", f"{role} value {frame[col].iloc[i]!r} is not a number; that item is "
                                            "never within a budget", i + 2) for i in bad[:3]]
    return found


def _names(frame: pd.DataFrame, mapping: dict[str, str]) -> list[MappingProblem]:
    col = mapping.get("name")
    if col not in frame.columns:
        return []
    blank = [i + 2 for i, v in enumerate(frame[col]) if not str(v).strip()]
    return [MappingProblem("warning", f"{len(blank)} item(s) have no name", blank[0])] if blank else []


def replace_top_level_block(text: str, key: str, value: Any) -> str:
    """``store.yaml`` text with one top-level key's block replaced (other lines and comments kept)."""
    nested = isinstance(value, dict | list)  # inner scalar-only collections go on one line: {a: b}
    block = yaml.safe_dump({key: value}, sort_keys=False, allow_unicode=True,
                           default_flow_style=None if nested else False, width=120)
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if re.match(rf"{re.escape(key)}\s*:", ln)), None)
    if start is None:
        sep = "" if not text or text.endswith("\n") else "\n"
        return text + sep + block
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t#"):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return "".join(lines[:start]) + block + "".join(lines[end:])


def inventory_change(store_yaml: str, old_source: str | None, name: str, data: bytes, mapping: dict[str, str],
                     attributes: list[str], sheet: str = "") -> ChangeSet:
    """The files an inventory upload writes: the table itself (formulas in it quoted: :func:`stored_inventory`)
    and store.yaml's ``inventory`` block."""
    ext = PurePath(name).suffix.lower()
    target = f"inventory{ext}"
    data = stored_inventory(name, data)  # a formula in a cell is saved as text, never as a formula
    decl: dict[str, Any] = {"source": target, "columns": {r: c for r, c in mapping.items() if c}}
    if attributes:
        decl["attributes"] = list(attributes)
    if sheet:
        decl["sheet"] = sheet
    change = ChangeSet(f"upload inventory {name}").put(target, data)
    change.put("store.yaml", replace_top_level_block(store_yaml, "inventory", decl))
    if old_source and old_source != target and not old_source.startswith(("http://", "https://")):
        change.delete(old_source)
    return change


def safe_filename(name: str) -> str:
    """A file name safe to write in the workspace (no folders, no odd characters)."""
    base = PurePath(name.replace("\\", "/")).name
    stem, ext = PurePath(base).stem, PurePath(base).suffix.lower()
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._") or "document"
    return stem + ext


def pdf_text(name: str, data: bytes) -> str:
    """The text of a PDF, page by page.

    Raises:
        UploadError: when the PDF cannot be parsed or has no text layer (a scan).
    """
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise UploadError(f"cannot read the PDF: {exc}", Location(name)) from exc
    text = "\n\n".join(p for p in pages if p)
    if not text.strip():
        raise UploadError("the PDF has no text layer (a scanned document?); upload a text or Markdown version",
                          Location(name))
    return text


def kb_change(name: str, data: bytes) -> ChangeSet:
    """The file a KB upload writes under ``kb/``; a PDF becomes Markdown text."""
    ext = check_upload(name, data, KB_TYPES)
    fname = safe_filename(name)
    if ext == ".pdf":
        stem = PurePath(fname).stem
        body = pdf_text(name, data)
        title = stem.replace("_", " ").replace("-", " ").strip().capitalize()
        return ChangeSet(f"upload KB {name}").put(f"kb/{stem}.md", f"# {title}\n\n{body}\n")
    text = decode_text(name, data)
    if not text.strip():
        raise UploadError("the document has no text", Location(name))
    return ChangeSet(f"upload KB {name}").put(f"kb/{fname}", text)
