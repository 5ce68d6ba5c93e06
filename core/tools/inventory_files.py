"""Reading an inventory file of the workspace (CSV or XLSX, or a CSV URL) as a table of strings, and the
checks an .xlsx workbook passes before it is opened (no decompression bomb, no document type or entities)."""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from pathlib import Path

import pandas as pd

from core.shared.errors import Location, WorkspaceError
from core.workspace.paths import read_text_file, workspace_path


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
