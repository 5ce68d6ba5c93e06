"""Upload validation: type, size, encoding, CSV shape, column mapping, store.yaml block rewrite."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from core.playground.uploads import (
    INVENTORY_TYPES,
    KB_TYPES,
    UploadError,
    check_mapping,
    check_upload,
    kb_change,
    read_inventory,
    replace_top_level_block,
    safe_filename,
    suggest_mapping,
)
from tests.playground.pdf import text_pdf

ROOT = Path(__file__).resolve().parents[2]


def _err(fn, *args) -> UploadError:  # type: ignore[no-untyped-def]
    with pytest.raises(UploadError) as info:
        fn(*args)
    return info.value


def test_a_50_mb_csv_is_refused_with_its_size() -> None:
    big = b"sku,name,price\n" + b"A,thing,1\n" * (50 * 1024 * 1024 // 10)
    exc = _err(check_upload, "big.csv", big, INVENTORY_TYPES)
    assert "50.0 MB" in str(exc) and "limit is 20.0 MB" in str(exc) and exc.location and exc.location.file == "big.csv"


def test_binary_and_non_utf8_text_name_line_and_column() -> None:
    exc = _err(check_upload, "inv.csv", b"sku,name\nA1,ok\nB\x002,bad\n", INVENTORY_TYPES)
    assert "binary" in exc.message and exc.location and (exc.location.line, exc.location.column) == (3, 2)
    exc = _err(check_upload, "inv.csv", "sku,name\nA1,caf\xe9\n".encode("latin-1"), INVENTORY_TYPES)
    assert "not UTF-8" in exc.message and exc.location and (exc.location.line, exc.location.column) == (2, 7)


@pytest.mark.parametrize(("name", "data", "words"), [
    ("evil.exe", b"MZ...", "not accepted"),
    ("fake.xlsx", b"sku,name\n", "not an Excel"),
    ("fake.pdf", b"hello", "not a PDF"),
    ("empty.csv", b"", "empty"),
])
def test_wrong_types_are_refused(name: str, data: bytes, words: str) -> None:
    allowed = KB_TYPES if name.endswith(".pdf") else INVENTORY_TYPES
    assert words in _err(check_upload, name, data, allowed).message


def test_malformed_csv_names_the_line() -> None:
    exc = _err(read_inventory, "inv.csv", b"sku,name,price\nA,one,10\nB,two,20,extra,cells\n")
    assert exc.location and exc.location.line == 3 and "malformed CSV" in exc.message


def test_header_problems() -> None:
    assert "duplicate column" in _err(read_inventory, "inv.csv", b"sku,name,name\nA,b,c\n").message
    assert "no items" in _err(read_inventory, "inv.csv", b"sku,name,price\n").message
    assert "column 2 has no name" in _err(read_inventory, "inv.csv", b"sku,,price\nA,b,1\n").message


def test_mapping_is_guessed_for_other_column_names() -> None:
    frame = read_inventory("inventory.csv", (ROOT / "examples" / "outdoor" / "inventory.csv").read_bytes())
    guess = suggest_mapping(list(frame.columns))
    assert guess == {"sku": "Item Code", "name": "Item", "category": "Gear Type", "price": "Cost",
                     "stock": "On Hand", "brand": "Manufacturer"}


def test_missing_price_column_is_an_error_naming_the_columns() -> None:
    frame = read_inventory("inv.csv", b"sku,name,kind\nA,Tent,Tent\n")
    found = check_mapping("inv.csv", frame, suggest_mapping(list(frame.columns)), [])
    errors = [str(p) for p in found if p.severity == "error"]
    assert errors == ["inv.csv: the required role 'price' is not mapped to a column (the file has: sku, name, kind)"]


def test_a_price_column_without_numbers_is_an_error_and_bad_cells_are_warnings() -> None:
    frame = read_inventory("inv.csv", b"name,price,stock\nA,cheap,1\nB,free,2\n")
    found = check_mapping("inv.csv", frame, {"name": "name", "price": "price"}, [])
    assert any(p.severity == "error" and "holds no numbers" in p.message for p in found)
    frame = read_inventory("inv.csv", b"name,price\nA,10\nB,n/a\n")
    found = check_mapping("inv.csv", frame, {"name": "name", "price": "price"}, [])
    assert [(p.severity, p.line) for p in found if "not a number" in p.message] == [("warning", 3)]


def test_one_column_cannot_fill_two_roles() -> None:
    frame = read_inventory("inv.csv", b"name,price\nA,10\n")
    found = check_mapping("inv.csv", frame, {"name": "name", "price": "price", "brand": "name"}, [])
    assert any("mapped to both" in p.message for p in found)


def test_store_yaml_block_is_replaced_keeping_other_lines_and_comments() -> None:
    text = "# my store\nname: A\ninventory:\n  source: old.csv\n  columns: {name: N, price: P}\n\nagents:\n  x: 1\n"
    out = replace_top_level_block(text, "inventory", {"source": "inventory.csv", "columns": {"name": "Item"}})
    assert out.startswith("# my store\nname: A\n") and "old.csv" not in out and out.endswith("agents:\n  x: 1\n")
    assert yaml.safe_load(out)["inventory"] == {"source": "inventory.csv", "columns": {"name": "Item"}}


def test_kb_pdf_becomes_markdown_and_names_are_sanitised() -> None:
    change = kb_change("Warranty Policy.pdf", text_pdf(["Claims take 5 business days."]))
    assert list(change.files) == ["kb/Warranty_Policy.md"]
    body = change.files["kb/Warranty_Policy.md"]
    assert body is not None and b"Claims take 5 business days." in body and body.startswith(b"# Warranty policy")
    assert safe_filename("../../etc/passwd.md") == "passwd.md"
    assert "no text layer" in _err(kb_change, "scan.pdf", text_pdf([])).message


def test_the_upload_widget_limit_is_the_one_the_page_states() -> None:
    """Streamlit refuses larger files before our check sees them: its limit must be ours, not 200 MB."""
    import tomllib

    from core.playground.uploads import MAX_UPLOAD_BYTES

    config = tomllib.loads((Path(__file__).parents[2] / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["maxUploadSize"] * 1024 * 1024 == MAX_UPLOAD_BYTES


def _zip(parts: dict[str, bytes]) -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return buf.getvalue()


def test_a_broken_or_bombed_workbook_is_refused_before_it_is_unpacked() -> None:
    broken = b"PK\x03\x04" + b"\x00" * 200  # starts like a zip archive, is not one
    assert "not a readable .xlsx workbook" in _err(read_inventory, "inv.xlsx", broken).message
    bomb = _zip({"[Content_Types].xml": b"<x/>", "xl/worksheets/sheet1.xml": b"<row/>" * 4_000_000})
    assert len(bomb) < 200_000  # 24 MB of rows in a small upload
    exc = _err(read_inventory, "inv.xlsx", bomb)
    assert "decompression bomb" in exc.message and "sheet1.xml" in exc.message and exc.location.file == "inv.xlsx"
