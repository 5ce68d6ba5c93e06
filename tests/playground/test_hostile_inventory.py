"""Hostile inventory files: XML with a document type or entities, broken workbooks, and cells a spreadsheet
would run as formulas. Each is refused as an upload error or kept as plain data; none escapes as an exception,
a formula written back out, or an item name with its formula lead."""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path

import openpyxl
import pytest

from core.engine.build import load_workspace
from core.playground import Playground
from core.playground.uploads import UploadError, read_inventory, stored_inventory
from core.retrieval.embedding import CachedEmbedder
from core.shared.errors import WorkspaceError
from core.shared.problems import errors
from core.tools.cells import formula_like, quoted, shown
from core.tools.inventory_files import check_workbook, read_table

SHEET = "xl/worksheets/sheet1.xml"
HOSTILE = ["=cmd|' /C calc'!A0", "@SUM(1+1)", "+1+1", "-2+3", "  =HYPERLINK(\"http://x.test\")", "\t=1+1"]
LEADS = ("=", "+", "-", "@", "\t", "\r", " ")


def _workbook(rows: list[list[object]]) -> bytes:
    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    for row in rows:
        ws.append(row)
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def _patched(data: bytes, part: str, edit: object) -> bytes:
    """``data`` (an .xlsx) with one part's bytes replaced by ``edit(old_bytes)``."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            dst.writestr(info.filename, edit(body) if info.filename == part else body)  # type: ignore[operator]
    return out.getvalue()


PLAIN = _workbook([["name", "price"], ["Tent", "10"], ["Stove", "20"]])
INLINE_SHEET = (b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
                b'<row r="1"><c r="A1" t="inlineStr"><is><t>name</t></is></c><c r="B1" t="inlineStr"><is><t>price'
                b'</t></is></c></row><row r="2"><c r="A2" t="inlineStr"><is><t>&e;</t></is></c><c r="B2"><v>10</v>'
                b'</c></row></sheetData></worksheet>')
ENTITY = b'<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE worksheet [<!ENTITY e "Tent">]>\n' + INLINE_SHEET
LAUGHS = (b'<?xml version="1.0"?>\n<!DOCTYPE worksheet [\n <!ENTITY e "lol">\n'
          + b"".join(f' <!ENTITY e{i} "{("&e" + (str(i - 1) if i > 1 else "") + ";") * 10}">\n'.encode()
                     for i in range(1, 10))
          + b"]>\n" + INLINE_SHEET.replace(b"&e;", b"&e9;"))
EXTERNAL = (b'<?xml version="1.0"?>\n<!DOCTYPE worksheet [<!ENTITY e SYSTEM "file:///etc/hostname">]>\n'
            + INLINE_SHEET)
DOCTYPE_ONLY = b'<?xml version="1.0"?>\n<!DOCTYPE worksheet>\n' + INLINE_SHEET.replace(b"&e;", b"Tent")


# ---------------------------------------------------------------------------- XML with a DTD, broken workbooks


@pytest.mark.parametrize("xml", [ENTITY, LAUGHS, EXTERNAL, DOCTYPE_ONLY], ids=["entity", "laughs", "external",
                                                                                "doctype"])
def test_a_sheet_declaring_a_document_type_or_entities_is_an_upload_error_naming_the_file(xml: bytes) -> None:
    data = _patched(PLAIN, SHEET, lambda _old: xml)
    with pytest.raises(UploadError) as info:
        read_inventory("stock.xlsx", data)
    assert info.value.location is not None and info.value.location.file == "stock.xlsx"
    assert f"part {SHEET} declares a document type or entities" in info.value.message
    with pytest.raises(UploadError, match="declares a document type"):
        stored_inventory("stock.xlsx", data)


def test_entities_in_any_part_of_the_workbook_are_refused() -> None:
    for part in ("xl/styles.xml", "[Content_Types].xml", "xl/workbook.xml", "docProps/core.xml", "_rels/.rels"):
        data = _patched(PLAIN, part, lambda old: b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]>'
                        + old.split(b"?>", 1)[-1])
        assert f"part {part} declares a document type" in check_workbook(data), part


@pytest.mark.parametrize("edit, why", [
    (lambda _old: INLINE_SHEET.replace(b"&e;", b"&undeclared;"), "cannot read the workbook"),
    (lambda old: old[: len(old) // 2], "cannot read the workbook"),
    (lambda _old: b"<worksheet><sheetData><row></worksheet>", "cannot read the workbook"),
    (lambda _old: b"\xef\xbb\xbf<worksheet><</worksheet>", "cannot read the workbook"),
    (lambda _old: b"<?xml version='1.0'?><!-- a note --><<worksheet/>", f"part {SHEET} is not well-formed"),
])
def test_any_other_xml_failure_is_an_upload_error_never_an_exception(edit: object, why: str) -> None:
    data = _patched(PLAIN, SHEET, edit)
    with pytest.raises(UploadError, match=why) as info:
        read_inventory("stock.xlsx", data)
    assert info.value.location is not None and info.value.location.file == "stock.xlsx"


def test_a_broken_zip_part_or_a_missing_part_is_an_upload_error() -> None:
    missing = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(PLAIN)) as src, zipfile.ZipFile(missing, "w") as dst:
        for info in src.infolist():
            if info.filename != "xl/workbook.xml":
                dst.writestr(info.filename, src.read(info.filename))
    with pytest.raises(UploadError, match="cannot read the workbook"):
        read_inventory("stock.xlsx", missing.getvalue())
    stored = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(PLAIN)) as src, zipfile.ZipFile(stored, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    raw = bytearray(stored.getvalue())
    at = raw.find(b"<sheetData>")
    raw[at + 1: at + 10] = b"X" * 9  # the sheet's bytes no longer match their checksum
    with pytest.raises(UploadError):
        read_inventory("stock.xlsx", bytes(raw))


def test_a_workspace_inventory_declaring_entities_is_a_load_problem(tmp_path: Path) -> None:
    (tmp_path / "inventory.xlsx").write_bytes(_patched(PLAIN, SHEET, lambda _old: LAUGHS))
    with pytest.raises(WorkspaceError, match="declares a document type"):
        read_table("inventory.xlsx", tmp_path)


# ---------------------------------------------------------------------------- formulas as plain data


def test_formula_like_text_is_recognised_and_signed_numbers_are_not() -> None:
    assert all(formula_like(t) for t in HOSTILE)
    assert not any(formula_like(t) for t in ("Tent", "-5", "+3.5", "-5 °C", "-12%", "C++ Primer", "'=x", ""))
    assert quoted("=cmd|' /C calc'!A0") == "'=cmd|' /C calc'!A0" and quoted("-5") == "-5"
    assert [shown(t) for t in HOSTILE] == ["cmd|' /C calc'!A0", "SUM(1+1)", "1+1", "2+3",
                                           'HYPERLINK("http://x.test")', "1+1"]
    assert shown(quoted("@SUM(1+1)")) == "SUM(1+1)" and shown("-5 °C") == "-5 °C"


def _csv(rows: list[list[str]]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue().encode()


def test_a_csv_upload_with_formulas_is_previewed_and_saved_with_each_formula_quoted() -> None:
    data = _csv([["name", "price", "=HEADER()"], *[[t, "10", "x"] for t in HOSTILE], ["Tent", "-5", "-5 °C"]])
    frame = read_inventory("stock.csv", data)
    assert list(frame.columns) == ["name", "price", "'=HEADER()"]
    assert list(frame["name"]) == ["'" + t for t in HOSTILE] + ["Tent"]
    saved = list(csv.reader(io.StringIO(stored_inventory("stock.csv", data).decode())))
    cells = [c for row in saved for c in row]
    assert not [c for c in cells if c.startswith(LEADS) and c not in ("-5", "-5 °C")], cells
    assert saved[0] == ["name", "price", "'=HEADER()"] and saved[-1] == ["Tent", "-5", "-5 °C"]
    assert [row[0] for row in saved[1:-1]] == ["'" + t for t in HOSTILE]
    clean = _csv([["name", "price"], ["Tent", "10"]])
    assert stored_inventory("stock.csv", clean) == clean  # nothing to quote: the upload as it is


def _text_cells(data: bytes, column: int) -> bytes:
    """``data`` (an .xlsx) with the cells of one column stored as text, even those starting with '='."""
    wb = openpyxl.load_workbook(io.BytesIO(data))
    ws = wb.active
    assert ws is not None
    for (cell,) in ws.iter_rows(min_col=column, max_col=column):
        cell.data_type = "s"
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def test_an_xlsx_upload_with_formulas_is_saved_without_one() -> None:
    data = _workbook([["name", "price", "total"], *[[t, 10, "=B2*2"] for t in HOSTILE], ["Tent", 10, "=B8+1"]])
    data = _text_cells(data, 1)  # the names are text that looks like formulas; the totals are real formulas
    preview = read_inventory("stock.xlsx", data)
    assert list(preview["name"]) == ["'" + t for t in HOSTILE] + ["Tent"]
    saved = openpyxl.load_workbook(io.BytesIO(stored_inventory("stock.xlsx", data)))
    ws = saved.active
    assert ws is not None
    values = [c for row in ws.iter_rows() for c in row]
    assert not [c.coordinate for c in values if c.data_type == "f"]
    assert not [c.value for c in values if isinstance(c.value, str) and c.value.startswith(LEADS)]
    assert [ws.cell(row=i, column=1).value for i in range(2, 2 + len(HOSTILE))] == ["'" + t for t in HOSTILE]
    assert {ws.cell(row=i, column=3).value for i in range(2, 3 + len(HOSTILE))} <= {None, ""}  # values, not formulas
    assert stored_inventory("stock.xlsx", PLAIN) == PLAIN  # no formula, nothing formula-like: kept as it is


def test_an_inventory_with_formulas_is_saved_quoted_and_shown_to_customers_without_the_formula_lead(
        ws_copy: Path, embedder: CachedEmbedder) -> None:
    rows = [["sku", "name", "category", "brand", "price", "stock", "features", "color"],
            ["M-1", "=cmd|' /C calc'!A0", "Mouse", "@SUM(1+1)", "490", "5", "-2+3", "\tblack"],
            ["M-2", "  +1+1 Wireless", "Mouse", "Logitech", "590", "3", "quiet", "=HYPERLINK(\"x\")"],
            ["M-3", "Logitech M90", "Mouse", "Logitech", "390", "-1", "wired", "black"]]
    play = Playground(ws_copy, embedder=embedder)
    try:
        mapping = play.store.inventory_mapping()
        found, result = play.store.upload_inventory("stock.csv", _csv(rows), mapping, ["features", "color"])
        assert result is not None, [str(p) for p in found]
        assert result.saved, [str(p) for p in result.blocking]
        on_disk = (ws_copy / "inventory.csv").read_text(encoding="utf-8")
        cells = [c for row in csv.reader(io.StringIO(on_disk)) for c in row]
        assert "'=cmd|' /C calc'!A0" in cells and not [c for c in cells if c.startswith(LEADS) and c != "-1"]
        items = play.workspace.tools["inventory.query"].run({"category": "Mouse", "limit": 10})
        names = {i["name"] for i in items}
        assert names == {"cmd|' /C calc'!A0", "1+1 Wireless", "Logitech M90"}
        texts = [str(v) for i in items for k, v in i.items() if k not in ("price", "stock")]
        assert not [t for t in texts if t.lstrip("'").startswith(LEADS)], texts
        assert {i["sku"]: i["stock"] for i in items}["M-3"] == -1  # a signed number stays a number
        reply = play.chat.send("f", "Recommend a mouse under 600").reply
        assert "=cmd" not in reply and "@SUM" not in reply and "+1+1" not in reply
        assert not errors(load_workspace(ws_copy, embedder).problems)
    finally:
        play.close()
