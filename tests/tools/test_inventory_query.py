"""The built-in item search over a mapped inventory: filters, order, and a table replaced under it."""

from __future__ import annotations

import pandas as pd
import pytest

from core.shared.errors import ToolError
from core.tools.catalog import Catalog
from core.tools.inventory import InventoryTool


def table() -> pd.DataFrame:
    return pd.DataFrame([
        {"sku": "T1", "name": "Ridge 2 tent", "category": "Tent", "brand": "Vango", "price": 240.0, "stock": 3,
         "features": "waterproof"},
        {"sku": "T2", "name": "Summit 3 tent", "category": "Tents", "brand": "MSR", "price": 420.0, "stock": 0,
         "features": "waterproof, light"},
        {"sku": "S1", "name": "Trail stove", "category": "Stove", "brand": "MSR", "price": 90.0, "stock": 7,
         "features": ""},
        {"sku": "T3", "name": "Basecamp tent", "category": "Tent", "brand": "Coleman", "price": None, "stock": 2,
         "features": "roomy"},
    ])


def names(rows: list[dict[str, object]]) -> list[object]:
    return [r["name"] for r in rows]


def test_filters_and_order() -> None:
    tool = InventoryTool(Catalog(table(), ["features"]))
    # category by any plural form; in stock first, then the dearest within the budget; no price never fits a budget
    assert names(tool.run({"category": "tents", "budget": 500})) == ["Ridge 2 tent", "Summit 3 tent"]
    assert names(tool.run({"category": "tent", "sort": "cheapest"})) == ["Ridge 2 tent", "Basecamp tent",
                                                                         "Summit 3 tent"]
    assert names(tool.run({"brand": "msr", "in_stock": "yes"})) == ["Trail stove"]
    assert names(tool.run({"exclude_brands": ["MSR", "Vango"]})) == ["Basecamp tent"]
    assert names(tool.run({"category": "tent", "prefer_brands": ["Coleman"], "limit": 1})) == ["Basecamp tent"]
    assert names(tool.run({"query": "summit tent", "features": ["light"]})) == ["Summit 3 tent"]
    assert tool.run({"sku": "s1"})[0] == {"sku": "S1", "name": "Trail stove", "category": "Stove", "brand": "MSR",
                                          "price": 90, "stock": 7}
    with pytest.raises(ToolError):
        tool.run({"max_price": "cheap"})


def test_a_replaced_table_is_searched_not_the_old_one() -> None:
    catalog = Catalog(table(), ["features"])
    tool = InventoryTool(catalog)
    assert names(tool.run({"category": "stove"})) == ["Trail stove"]
    catalog.frame = table().assign(name=lambda df: df["name"].str.upper())
    assert names(tool.run({"category": "stove"})) == ["TRAIL STOVE"]
