"""The GAR and inventory loaders never crash: any gar.csv (quotes, NUL bytes, huge fields, missing columns,
other encodings), any inventory file uploaded or named in store.yaml. A bad file is a problem or an error
naming the file and the line, and the workspace still loads."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.engine.build import load_workspace
from core.playground.uploads import UploadError, check_mapping, read_inventory, suggest_mapping
from core.retrieval.embedding import CachedEmbedder, shared_model
from core.shared.errors import WorkspaceError
from core.shared.problems import Problem
from core.tools.catalog import load_catalog
from core.tools.inventory import InventoryTool
from core.workspace.config import InventoryDecl
from core.workspace.gar import GarIndex
from core.workspace.gar_file import GAR_COLUMNS, load_gar
from core.workspace.params import parse_params

ROOT = Path(__file__).resolve().parents[1]
SELLER = ROOT / "examples" / "seller_support"
OUTDOOR = ROOT / "examples" / "outdoor"
EMBEDDER = CachedEmbedder(shared_model(), None)
FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

HUGE = "<a field of 140,000 characters>"  # written out by to_csv (a short name keeps failure reports short)
cells = (st.text(max_size=30)
         | st.sampled_from(["ask_user_input", "api_call|ask_user_input", "message_to_user", "api_call", "",
                            "order_id|email", "a||b", '"', '""', "\x00", "\r\n", HUGE, "ask_user_input|"]))
headers = st.lists(st.sampled_from([*GAR_COLUMNS, "", "extra", "action ", '"action"']), max_size=8) \
    | st.permutations(list(GAR_COLUMNS)).map(list)


def well_formed(problems: list[Problem], file: str) -> bool:
    return all(p.file == file and isinstance(p.line, int) and p.line >= 0 and p.message for p in problems)


def to_csv(header: list[str], rows: list[list[str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows([["x" * 140_000 if c == HUGE else c for c in row] for row in rows])
    return out.getvalue()


@FUZZ
@given(headers, st.lists(st.lists(cells, max_size=7), max_size=6))
def test_any_gar_csv_is_a_problem_not_a_crash(tmp_path: Path, header: list[str], rows: list[list[str]]) -> None:
    (tmp_path / "gar.csv").write_text(to_csv(header, rows), encoding="utf-8")
    found, problems = load_gar(tmp_path / "gar.csv")
    assert well_formed(problems, "gar.csv")
    assert all(2 <= row.line <= len(rows) + 1 + sum(c.count("\n") for r in rows for c in r) for row in found)
    GarIndex(found, None)  # the rows the loader kept always index


@FUZZ
@given(st.binary(max_size=400))
def test_any_bytes_as_gar_csv_are_a_problem_not_a_crash(tmp_path: Path, data: bytes) -> None:
    (tmp_path / "gar.csv").write_bytes(data)
    found, problems = load_gar(tmp_path / "gar.csv")
    assert well_formed(problems, "gar.csv")
    GarIndex(found, None)


@given(st.text(max_size=60))
def test_any_params_cell_parses(text: str) -> None:
    assert all(p.name and "|" not in p.name for p in parse_params(text))


def test_a_gar_field_over_the_csv_limit_is_a_problem_on_its_line_and_the_other_rows_load(tmp_path: Path) -> None:
    rows = [["tell the customer hello", "message_to_user", "", "", ""],
            ["ask the customer for the order", "ask_user_input", "", "", HUGE],
            ["tell the customer\nbye", "message_to_user", "", "", ""],  # a quoted cell over two lines
            ["tell the customer thanks", "message_to_user", "", "", ""]]
    (tmp_path / "gar.csv").write_text(to_csv(list(GAR_COLUMNS), rows), encoding="utf-8")
    found, problems = load_gar(tmp_path / "gar.csv")
    assert [(p.line, p.severity, "field larger than" in p.message) for p in problems] == [(3, "error", True)]
    assert [(r.action, r.line) for r in found] == [("tell the customer hello", 2), ("tell the customer\nbye", 4),
                                                   ("tell the customer thanks", 6)]


def test_a_binary_gar_csv_is_one_problem(tmp_path: Path) -> None:
    (tmp_path / "gar.csv").write_bytes(b"action,action_type\n\x00\x01\x02")
    assert [(p.file, p.message) for p in load_gar(tmp_path / "gar.csv")[1]] == [
        ("gar.csv", "binary file, expected UTF-8 text")]


inventory_cells = st.text(max_size=12) | st.sampled_from(["12.50", "-3", "1e9", "฿1,200", "NaN", "", "\x00", '"',
                                                         "[click](javascript:alert(1))", "\n"])
inventory_headers = st.lists(st.sampled_from(["sku", "name", "price", "stock", "brand", "category", "", "name",
                                              "Price (THB)", "price.1", "ชื่อ"]), min_size=1, max_size=6)


@FUZZ
@given(inventory_headers, st.lists(st.lists(inventory_cells, max_size=7), max_size=6))
def test_any_uploaded_inventory_is_an_upload_error_or_a_mapped_table(header: list[str],
                                                                     rows: list[list[str]]) -> None:
    data = to_csv(header, rows).encode("utf-8")
    try:
        frame = read_inventory("items.csv", data)
    except UploadError as exc:
        assert exc.location is not None and exc.location.file == "items.csv"
        return
    assert isinstance(frame, pd.DataFrame) and not frame.empty
    mapping = suggest_mapping(list(frame.columns))
    assert all(col in frame.columns for col in mapping.values())
    for problem in check_mapping("items.csv", frame, mapping, [c for c in frame.columns if c not in mapping.values()]):
        assert problem.severity in ("error", "warning") and problem.message


@FUZZ
@given(st.binary(max_size=300), st.sampled_from(["items.csv", "items.xlsx", "items.tsv", "items"]))
def test_any_bytes_uploaded_as_an_inventory_are_an_upload_error_or_a_table(data: bytes, name: str) -> None:
    try:
        frame = read_inventory(name, data)
    except UploadError as exc:
        assert str(exc)
        return
    assert not frame.empty


queries = st.dictionaries(st.sampled_from(InventoryTool.PARAMS), st.none() | st.text(max_size=8) | st.integers()
                          | st.floats(allow_nan=True) | st.lists(st.text(max_size=5), max_size=3), max_size=5)


@FUZZ
@given(inventory_headers, st.lists(st.lists(inventory_cells, max_size=7), max_size=6), queries)
def test_any_inventory_file_loads_or_names_itself_and_any_query_runs(
        tmp_path: Path, header: list[str], rows: list[list[str]], query: dict[str, Any]) -> None:
    (tmp_path / "items.csv").write_text(to_csv(header, rows), encoding="utf-8")
    columns = {"name": "name", "price": "price", "stock": "stock", "category": "category", "brand": "brand"}
    try:
        catalog, problems = load_catalog(InventoryDecl("items.csv", columns, ["Price (THB)"]), tmp_path)
    except WorkspaceError as exc:
        assert exc.location is not None and exc.location.file == "items.csv"
        return
    assert well_formed(problems, "items.csv")
    found = InventoryTool(catalog).run(query)
    assert isinstance(found, list) and len(found) <= max(len(rows), 5)


@pytest.mark.parametrize("broken", [b"\x00\x01\x02 not a table", b'name,price\n"open quote,1\n', b"",
                                    b"sku\n" + b"x" * 200_000 + b"\n"])
def test_a_workspace_with_a_broken_gar_and_inventory_still_loads(tmp_path: Path, broken: bytes) -> None:
    ws = tmp_path / "outdoor"
    shutil.copytree(OUTDOOR, ws, ignore=shutil.ignore_patterns(".state"))
    (ws / "gar.csv").write_bytes(broken)
    inventory = ws / "inventory.csv"
    inventory.write_bytes(broken)
    loaded = load_workspace(ws, EMBEDDER, kb_index="lazy")
    files = {p.file for p in loaded.problems if p.severity == "error"}
    assert "gar.csv" in files and any(f.endswith(inventory.name) for f in files), [str(p) for p in loaded.problems]
    assert loaded.sops or any(p.file.startswith("sops/") for p in loaded.problems)
