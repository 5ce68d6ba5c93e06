"""The Store page with a Google Sheet inventory (AppTest), against the local stand-in of the Sheets API: what
to set when no key is, "Refresh now", and connecting a sheet with its preview and mapping."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.tools.sheets_fake import SHEET, FakeSheets, serving_the_sheet, sheet_store
from tests.ui.conftest import APP, texts


@pytest.fixture()
def fake() -> Iterator[FakeSheets]:
    server = serving_the_sheet()
    yield server
    server.close()


def _store_page(root: Path) -> AppTest:
    app = AppTest.from_file(APP, default_timeout=120)
    app.run()
    app.switch_page("pages/store.py").run()
    assert not app.exception, app.exception
    assert str(root) in texts(app)
    return app


def _values_calls(fake: FakeSheets) -> int:
    return sum(1 for r in fake.requests if "/values/" in r)


def test_no_key_says_which_variable_to_set(app_ws: Path, fake: FakeSheets, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOP_SHEETS_BASE_URL", fake.url)  # reachable, but no key is set: it is never called
    sheet_store(app_ws)
    at = _store_page(app_ws)
    warning = "\n".join(w.value for w in at.warning)
    assert "No key for the Google Sheets API is set" in warning
    assert "set SOP_SHEETS_API_KEY to a Google API key" in warning and "GOOGLE_APPLICATION_CREDENTIALS" in warning
    assert "The sheet has not been read yet." in texts(at)
    at.button(key="refresh_sheet").click().run()
    assert any("cannot read the sheet: no key for the Google Sheets API" in e.value for e in at.error)
    assert fake.requests == []


def test_refresh_now_reads_the_changed_sheet(app_ws: Path, fake: FakeSheets,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOP_SHEETS_BASE_URL", fake.url)
    monkeypatch.setenv("SOP_SHEETS_API_KEY", fake.api_key)
    sheet_store(app_ws)
    at = _store_page(app_ws)
    assert "3 items · mapping" in texts(at) and "Read with the key in `SOP_SHEETS_API_KEY`." in texts(at)
    calls = _values_calls(fake)
    fake.sheets[SHEET]["Stock"].append(["H1", "Cloud II", "Headset", "HyperX", "2,490", "3", "Red"])
    at.run()
    assert "3 items · mapping" in texts(at) and _values_calls(fake) == calls  # the copy is fresh: not read again
    at.button(key="refresh_sheet").click().run()
    assert not at.exception, at.exception
    assert any("Read the sheet again" in s.value for s in at.success)
    assert "4 items · mapping" in texts(at) and _values_calls(fake) == calls + 1
    fake.fail = 403
    at.button(key="refresh_sheet").click().run()
    problems = "\n".join(w.value for w in at.warning)
    assert f"Google Sheet {SHEET} (Stock): warning: cannot read the sheet again (HTTP 403 PERMISSION_DENIED" in problems
    assert "4 items · mapping" in texts(at)  # the last copy stays in use


def test_connect_a_sheet_with_preview_and_mapping(app_ws: Path, fake: FakeSheets,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOP_SHEETS_BASE_URL", fake.url)
    monkeypatch.setenv("SOP_SHEETS_API_KEY", fake.api_key)
    at = _store_page(app_ws)
    at.text_input(key="sheet_text").set_value(f"https://docs.google.com/spreadsheets/d/{SHEET}/edit#gid=7").run()
    at.text_input(key="sheet_tab").set_value("Stock").run()
    at.number_input(key="sheet_minutes").set_value(15.0).run()
    at.button(key="preview_sheet").click().run()
    assert not at.exception, at.exception
    assert "**Preview**: 3 rows, 7 columns" in texts(at)
    guessed = {role: at.selectbox(key=f"map_sheet_{role}").value for role in ("sku", "name", "category", "price")}
    assert guessed == {"sku": "Item code", "name": "Product", "category": "Type", "price": "Price (THB)"}
    at.selectbox(key="map_sheet_price").set_value("—").run()  # no price: refused, nothing written
    before = (app_ws / "store.yaml").read_text(encoding="utf-8")
    at.button(key="apply_sheet").click().run()
    assert any("the required role 'price' is not mapped" in e.value for e in at.error)
    assert (app_ws / "store.yaml").read_text(encoding="utf-8") == before
    at.selectbox(key="map_sheet_price").set_value("Price (THB)").run()
    at.button(key="apply_sheet").click().run()
    assert not at.exception, at.exception
    text = (app_ws / "store.yaml").read_text(encoding="utf-8")
    assert f"inventory:\n  sheet: {SHEET}\n  worksheet: Stock\n" in text and "refresh_minutes: 15\n" in text
    assert "name: Gadget Hub\n" in text and "orders.get_status:" in text  # the rest of store.yaml kept
    assert "3 items · mapping" in texts(at) and f"Inventory from **[Google Sheet {SHEET} (Stock)]" in texts(at)
    assert _values_calls(fake) == 1  # applying read the copy the preview kept
