"""A Google Sheet inventory, against a local stand-in for the Sheets API (tests/tools/sheets_fake.py): the
mapping, the cached copy and its refresh, missing credentials, API errors and a slow server."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.engine.build import load_workspace
from core.retrieval.embedding import CachedEmbedder
from core.shared.errors import WorkspaceError
from core.tools.catalog import Catalog, load_catalog, sheet_catalog
from core.tools.inventory import InventoryTool
from core.tools.sheets import SheetFeed
from core.tools.sheets_api import SheetRef
from core.workspace.config import InventoryDecl
from core.workspace.store_yaml import load_store_config
from tests.tools.sheets_fake import (
    LABEL,
    SHEET,
    STORE,
    FakeSheets,
    ServiceAccount,
    serving_the_sheet,
    sheet_store,
)


@pytest.fixture()
def fake() -> Iterator[FakeSheets]:
    server = serving_the_sheet()
    yield server
    server.close()


@pytest.fixture()
def keyed(fake: FakeSheets, monkeypatch: pytest.MonkeyPatch) -> FakeSheets:
    """The environment holds an API key and points the client at the fake."""
    monkeypatch.setenv("SOP_SHEETS_BASE_URL", fake.url)
    monkeypatch.setenv("SOP_SHEETS_API_KEY", fake.api_key)
    return fake


@pytest.fixture()
def shop(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    root.mkdir()
    (root / "store.yaml").write_text(STORE, encoding="utf-8")
    return root


def _decl(root: Path) -> InventoryDecl:
    cfg, problems = load_store_config(root / "store.yaml")
    assert not problems, problems
    assert cfg.inventory is not None
    return cfg.inventory


def _names(catalog: Catalog) -> list[str]:
    return list(catalog.frame["name"])


def _age(root: Path, seconds: float) -> None:
    """Make the sheet's cached copy (and its last attempt) ``seconds`` older, as if that much time passed."""
    for path in (root / ".state" / "sheets").glob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["fetched_at"] -= seconds
        data["checked_at"] -= seconds
        path.write_text(json.dumps(data), encoding="utf-8")


def _values_calls(fake: FakeSheets) -> int:
    return sum(1 for r in fake.requests if "/values/" in r)


# ------------------------------------------------------------------ store.yaml
def test_store_yaml_shapes_and_back_compatibility(tmp_path: Path) -> None:
    cases = {
        "sheet_url": f"inventory: {{sheet: 'https://docs.google.com/spreadsheets/d/{SHEET}/edit', "
                     "columns: {name: A, price: B}}",
        "sheet_id": f"inventory: {{sheet: {SHEET}, worksheet: Stock, columns: {{name: A, price: B}}, "
                    "refresh_minutes: 2.5}",
        "xlsx": "inventory: {source: stock.xlsx, sheet: Stock, columns: {name: A, price: B}}",
        "bad": "inventory:\n  sheet: stock.xlsx\n  columns: {name: A, price: B}",
        "tab_beside_source": "inventory: {source: stock.csv, worksheet: Stock, columns: {name: A, price: B}}",
        "negative": f"inventory: {{sheet: {SHEET}, refresh_minutes: -1, columns: {{name: A, price: B}}}}",
    }
    got = {}
    for name, block in cases.items():
        path = tmp_path / name / "store.yaml"
        path.parent.mkdir()
        path.write_text(f"name: S\n{block}\nagents: {{sales: {{tools: []}}}}\n", encoding="utf-8")
        got[name] = load_store_config(path)
    url, _ = got["sheet_url"]
    assert url.inventory is not None and url.inventory.google_sheet == SHEET and url.inventory.source == ""
    assert url.inventory.worksheet == "" and url.inventory.refresh_minutes == 10
    by_id, problems = got["sheet_id"]
    assert by_id.inventory is not None and (by_id.inventory.google_sheet, by_id.inventory.worksheet,
                                            by_id.inventory.refresh_minutes) == (SHEET, "Stock", 2.5)
    assert not problems
    xlsx, problems = got["xlsx"]  # sheet beside source is still the .xlsx workbook's tab
    assert xlsx.inventory is not None and (xlsx.inventory.source, xlsx.inventory.sheet) == ("stock.xlsx", "Stock")
    assert xlsx.inventory.google_sheet == "" and not problems
    bad, problems = got["bad"]
    assert bad.inventory is None
    assert [str(p) for p in problems] == ["store.yaml:3: error: inventory.sheet 'stock.xlsx' is neither a Google "
                                          "Sheet's id nor its URL (https://docs.google.com/spreadsheets/d/<id>/...); "
                                          "a local .csv/.xlsx file is 'source:'"]
    _, problems = got["tab_beside_source"]
    assert [p.severity for p in problems] == ["warning"] and "an .xlsx file's tab is 'sheet:'" in problems[0].message
    _, problems = got["negative"]
    assert [p.severity for p in problems] == ["error"] and "refresh_minutes must be 0 or more" in problems[0].message


def test_a_file_inventory_never_reaches_the_network(keyed: FakeSheets, embedder: CachedEmbedder) -> None:
    root = Path(__file__).resolve().parents[2]
    ws = load_workspace(root, embedder)
    assert ws.catalog is not None and ws.catalog.sheet is None and len(ws.catalog.frame) > 5
    ws.tools["inventory.query"].run({"category": "mouse"})
    assert keyed.requests == []


# ------------------------------------------------------------------ mapping
def test_the_sheet_is_mapped_like_a_file(keyed: FakeSheets, shop: Path) -> None:
    catalog, problems = load_catalog(_decl(shop), shop)
    assert keyed.requests == [f"GET /v4/spreadsheets/{SHEET}/values/'Stock'"]
    assert list(catalog.frame.columns) == ["sku", "name", "category", "brand", "price", "stock", "Colour"]
    assert _names(catalog) == ["Viper Mini", "G305", "Alloy Core"]
    # the bad price is reported at its row in the sheet (row 5: the empty row 4 counts)
    assert [str(p) for p in problems] == [f"{LABEL}:5: warning: price value 'call us' is not a number"]
    found = InventoryTool(catalog).run({"category": "mouse", "budget": 1200})
    assert found == [{"sku": "M2", "name": "G305", "category": "Mouse", "brand": "Logitech", "price": 1190,
                      "stock": 0}]
    assert catalog.categories == ["Keyboard", "Mouse"]


def test_a_column_the_sheet_lacks_is_an_error_naming_the_sheet(keyed: FakeSheets, shop: Path) -> None:
    keyed.sheets[SHEET]["Stock"][0][5] = "On hand"
    with pytest.raises(WorkspaceError) as err:
        load_catalog(_decl(shop), shop)
    assert str(err.value.location) == f"{LABEL}:1"
    assert "column(s) not in the sheet: stock -> 'Qty'" in err.value.message and "On hand" in err.value.message


def test_first_tab_when_no_worksheet_is_named_and_a_missing_tab_is_named(keyed: FakeSheets, tmp_path: Path) -> None:
    feed = SheetFeed(SheetRef(SHEET), tmp_path, 60)
    assert feed.read()[0] == [["nothing", "here"]]
    assert keyed.requests == [f"GET /v4/spreadsheets/{SHEET}/values/A:ZZZ"]
    with pytest.raises(WorkspaceError) as err:
        SheetFeed(SheetRef(SHEET, "Stok"), tmp_path, 60).read()
    assert ("HTTP 400 INVALID_ARGUMENT Unable to parse range: 'Stok'; is there a worksheet (tab) named 'Stok'?"
            in err.value.message)


# ------------------------------------------------------------------ the cached copy and its refresh
def test_the_copy_is_used_while_fresh_and_read_again_after_the_interval(keyed: FakeSheets, tmp_path: Path) -> None:
    now = [1_000_000.0]
    feed = SheetFeed(SheetRef(SHEET, "Stock"), tmp_path, 300, clock=lambda: now[0])
    first, _ = feed.read()
    assert first[1][1] == "Viper Mini" and _values_calls(keyed) == 1
    keyed.sheets[SHEET]["Stock"][1][1] = "Viper Mini SE"
    now[0] += 299
    assert feed.read()[0][1][1] == "Viper Mini" and _values_calls(keyed) == 1  # not before the interval
    # a second reader (another process, a restart) uses the same copy
    again = SheetFeed(SheetRef(SHEET, "Stock"), tmp_path, 300, clock=lambda: now[0])
    assert again.read()[0][1][1] == "Viper Mini" and _values_calls(keyed) == 1
    now[0] += 1
    assert feed.read()[0][1][1] == "Viper Mini SE" and _values_calls(keyed) == 2  # after it
    keyed.sheets[SHEET]["Stock"][1][1] = "Viper V3"
    assert feed.read()[0][1][1] == "Viper Mini SE"
    assert feed.read(force=True)[0][1][1] == "Viper V3" and _values_calls(keyed) == 3  # "refresh now"


def test_a_running_search_sees_the_changed_sheet_after_the_interval(keyed: FakeSheets, shop: Path) -> None:
    now = [time.time()]
    decl = _decl(shop)
    catalog, _ = sheet_catalog(SheetFeed.for_inventory(decl, shop, clock=lambda: now[0]), decl)
    tool = InventoryTool(catalog)
    keyed.sheets[SHEET]["Stock"][1][4] = "990"
    assert tool.run({"sku": "M1"})[0]["price"] == 1290
    assert catalog.sheet is not None and catalog.sheet.wait(5)
    now[0] += 299
    assert tool.run({"sku": "M1"})[0]["price"] == 1290 and _values_calls(keyed) == 1  # fresh: not read again
    assert catalog.sheet.wait(5) and _values_calls(keyed) == 1
    now[0] += 2
    assert tool.run({"sku": "M1"})[0]["price"] == 1290  # the search never waits for the network...
    assert catalog.sheet.wait(5)
    assert tool.run({"sku": "M1"})[0]["price"] == 990 and _values_calls(keyed) == 2  # ...the next one sees it
    reloaded, _ = load_catalog(_decl(shop), shop)  # and the copy on disk is the new one
    assert reloaded.frame["price"][0] == 990 and _values_calls(keyed) == 2


# ------------------------------------------------------------------ no key
def test_no_key_and_no_copy_loads_the_rest_with_a_clear_warning(ws_copy: Path, embedder: CachedEmbedder) -> None:
    sheet_store(ws_copy)
    ws = load_workspace(ws_copy, embedder)
    mine = [p for p in ws.problems if p.file == LABEL]
    assert [p.severity for p in mine] == ["warning"]  # only the search is off (tests/tools/test_sheet_unreachable.py)
    assert "no key for the Google Sheets API: set SOP_SHEETS_API_KEY" in mine[0].message
    assert "GOOGLE_APPLICATION_CREDENTIALS" in mine[0].message
    assert ws.catalog is None and ws.sops and "knowledge_base.search" in ws.tools  # the rest works
    assert "orders.get_status" in ws.tools


def test_no_key_keeps_the_last_copy_with_a_warning(keyed: FakeSheets, shop: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    load_catalog(_decl(shop), shop)
    monkeypatch.delenv("SOP_SHEETS_API_KEY")
    _age(shop, 3600)
    catalog, problems = load_catalog(_decl(shop), shop)
    assert _names(catalog) == ["Viper Mini", "G305", "Alloy Core"] and _values_calls(keyed) == 1
    sheet = [p for p in problems if p.file == LABEL and p.line == 0]
    assert len(sheet) == 1 and sheet[0].severity == "warning"
    assert "no key for the Google Sheets API: set SOP_SHEETS_API_KEY" in sheet[0].message
    assert "using the copy read at" in sheet[0].message
    status = SheetFeed.for_inventory(_decl(shop), shop).status()
    assert status.credentials == "" and status.missing_key.startswith("set SOP_SHEETS_API_KEY")
    assert status.rows == 3 and status.fetched_at is not None


# ------------------------------------------------------------------ API errors and deadlines
@pytest.mark.parametrize(("code", "said"), [
    (403, "HTTP 403 PERMISSION_DENIED The caller does not have permission; share the sheet with 'anyone with the "
          "link'"),
    (404, "HTTP 404 NOT_FOUND Requested entity was not found.; check the spreadsheet id"),
    (500, "HTTP 500 INTERNAL Internal error encountered."),
])
def test_an_api_error_keeps_the_copy_and_names_the_sheet_and_status(keyed: FakeSheets, shop: Path, code: int,
                                                                    said: str) -> None:
    load_catalog(_decl(shop), shop)
    keyed.sheets[SHEET]["Stock"][1][1] = "Changed"
    keyed.fail = code
    _age(shop, 600)
    catalog, problems = load_catalog(_decl(shop), shop)
    assert _names(catalog)[0] == "Viper Mini"
    warning = next(p for p in problems if p.line == 0)
    assert (warning.file, warning.severity) == (LABEL, "warning") and said in warning.message
    assert _values_calls(keyed) == 2
    load_catalog(_decl(shop), shop)  # the failure stands for one interval: no call on every load
    assert _values_calls(keyed) == 2
    with pytest.raises(WorkspaceError, match=f"cannot read the sheet: {said[:20]}"):  # no copy: an error
        SheetFeed(SheetRef(SHEET, "Stock"), shop / "elsewhere", 60).read()
    keyed.fail = None
    assert SheetFeed.for_inventory(_decl(shop), shop).read(force=True)[0][1][1] == "Changed"


def test_a_wrong_key_is_reported(keyed: FakeSheets, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOP_SHEETS_API_KEY", "not-the-key")
    with pytest.raises(WorkspaceError, match="HTTP 400 INVALID_ARGUMENT API key not valid"):
        SheetFeed(SheetRef(SHEET, "Stock"), tmp_path, 60).read()


@pytest.mark.parametrize("mode", ["silent", "drip"])
def test_a_slow_server_is_cut_off_at_the_deadline(keyed: FakeSheets, shop: Path, mode: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    load_catalog(_decl(shop), shop)
    _age(shop, 600)
    monkeypatch.setenv("SOP_SHEETS_TIMEOUT_S", "0.5")
    if mode == "silent":
        keyed.delay_s = 30
    else:
        keyed.drip = True  # headers at once, then a byte every 50 ms: each read is quick, the whole is not
    started = time.monotonic()
    catalog, problems = load_catalog(_decl(shop), shop)
    assert time.monotonic() - started < 3
    assert _names(catalog)[0] == "Viper Mini"
    warning = next(p for p in problems if p.line == 0)
    assert warning.file == LABEL and f"{keyed.url} did not answer within 0.5 s" in warning.message


# ------------------------------------------------------------------ a service account
def test_a_service_account_signs_in_and_reads_a_sheet_shared_with_it(fake: FakeSheets, shop: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    fake.account = ServiceAccount()
    key_file = tmp_path / "sa.json"
    key_file.write_text(json.dumps(fake.account.json_key(f"{fake.url}/token")), encoding="utf-8")
    monkeypatch.setenv("SOP_SHEETS_BASE_URL", fake.url)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
    with pytest.raises(WorkspaceError) as err:  # not shared with the account yet
        load_catalog(_decl(shop), shop)
    assert f"HTTP 403 PERMISSION_DENIED The caller does not have permission; share the sheet with " \
           f"{fake.account.email}" in err.value.message
    fake.shared_with[SHEET] = {fake.account.email}
    catalog, _ = SheetFeed.for_inventory(_decl(shop), shop).read(force=True)
    assert catalog[1][1] == "Viper Mini"
    assert fake.requests[0] == "POST /token" and "POST /token" in fake.requests[2:]
    status = SheetFeed.for_inventory(_decl(shop), shop).status()
    assert status.credentials == "GOOGLE_APPLICATION_CREDENTIALS" and status.error == ""


def test_a_service_account_key_signed_by_another_key_is_refused(fake: FakeSheets, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    fake.account = ServiceAccount()
    stranger = ServiceAccount(email=fake.account.email)
    key_file = tmp_path / "sa.json"
    key_file.write_text(json.dumps(stranger.json_key(f"{fake.url}/token")), encoding="utf-8")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
    monkeypatch.setenv("SOP_SHEETS_BASE_URL", fake.url)
    with pytest.raises(WorkspaceError, match="token was refused: HTTP 400 invalid_grant: Invalid JWT Signature"):
        SheetFeed(SheetRef(SHEET, "Stock"), tmp_path, 60).read()
    key_file.write_text("{not json", encoding="utf-8")
    with pytest.raises(WorkspaceError, match="GOOGLE_APPLICATION_CREDENTIALS .* cannot be read as a JSON key"):
        SheetFeed(SheetRef(SHEET, "Stock"), tmp_path, 60).read()
