"""The Store page shows the attributes a mapping made and the values each holds: the store's own, and those an
uploaded inventory's mapping would make before it is applied."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from core.playground.store import attribute_table

ROOT = Path(__file__).resolve().parents[2]
STOCK = ROOT / "tests" / "shops" / "crag" / "stock.csv"


def _tables(at: AppTest) -> list[dict[str, str]]:
    """Every attribute table on the page, as attribute -> the values it lists."""
    out = []
    for frame in (d.value for d in at.dataframe):
        if list(frame.columns) == ["attribute", "values", "holds"]:
            out.append(dict(zip(frame["attribute"], frame["holds"], strict=True)))
    return out


def test_the_store_and_an_upload_show_their_attributes_and_values(at: AppTest, app_ws: Path) -> None:
    at.switch_page("pages/store.py").run()
    assert not at.exception, at.exception
    store = _tables(at)[0]
    assert set(store) == {"features", "color"} and "arctic grey" in store["color"]
    at.file_uploader(key="inventory_upload").set_value(("stock.csv", STOCK.read_bytes(), "text/csv")).run()
    assert not at.exception, at.exception
    upload = _tables(at)[-1]
    assert {"Good for", "Size", "Sleeps", "Colour"} <= set(upload)
    assert upload["Good for"].startswith("alpine, beginners, big wall") and upload["Size"] == "eu 41, eu 42, l, m, s"


def test_a_long_list_of_values_is_cut_short() -> None:
    table = attribute_table({"Shade": [f"v{i:02d}" for i in range(20)]}, shown=3)
    assert table.to_dict("records") == [{"attribute": "Shade", "values": 20, "holds": "v00, v01, v02 …"}]
