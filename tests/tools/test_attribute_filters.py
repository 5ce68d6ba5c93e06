"""Attribute values a shopper asks for are hard filters; when nothing passes, the search names the nearest
item and the filter it breaks, never padding the results with items that break it."""

from __future__ import annotations

import pandas as pd

from core.shared.models import Goal
from core.tools.catalog import Catalog
from core.tools.inventory import InventoryTool
from core.understanding import Commerce
from core.workspace.config import CommerceDecl
from core.workspace.slots import Vocabulary

ATTRS = ["Soil", "Light"]


def nursery() -> Catalog:
    """A garden centre's plants, with its own attribute columns."""
    return Catalog(pd.DataFrame([
        {"sku": "P1", "name": "Lavender Hidcote", "category": "Shrub", "brand": "Hillside", "price": 12.0,
         "stock": 8, "Soil": "chalk; sand", "Light": "full sun"},
        {"sku": "P2", "name": "Hosta Blue Angel", "category": "Perennial", "brand": "Hillside", "price": 9.0,
         "stock": 5, "Soil": "clay", "Light": "shade"},
        {"sku": "P3", "name": "Fern Lady", "category": "Perennial", "brand": "Greenway", "price": 7.5,
         "stock": 3, "Soil": "clay; loam", "Light": "shade"},
        {"sku": "P4", "name": "Rosemary Miss Jessopp", "category": "Shrub", "brand": "Greenway", "price": 24.0,
         "stock": 2, "Soil": "sand", "Light": "full sun"},
        {"sku": "P5", "name": "Box Ball", "category": "Shrub", "brand": "Hillside", "price": 30.0, "stock": 0,
         "Soil": "loam", "Light": "shade"},
    ]), ATTRS)


def names(rows: list[dict[str, object]]) -> list[object]:
    return [r["name"] for r in rows]


def test_every_attribute_column_is_listed_with_its_values() -> None:
    assert nursery().attribute_values() == {"Soil": ["chalk", "clay", "loam", "sand"],
                                            "Light": ["full sun", "shade"]}
    assert "full sun" in nursery().feature_words()


def test_a_wished_value_is_a_hard_filter_and_liked_ones_only_order() -> None:
    tool = InventoryTool(nursery())
    assert names(tool.run({"category": "perennial", "features": ["loam"]})) == ["Fern Lady"]
    assert names(tool.run({"features": ["shade", "clay"], "in_stock": True})) == ["Hosta Blue Angel", "Fern Lady"]
    # a value liked in an earlier session orders, and nothing is left out for it
    assert names(tool.run({"category": "shrub", "prefer_features": ["sand"], "in_stock": True})) == [
        "Rosemary Miss Jessopp", "Lavender Hidcote"]


def test_nothing_matching_gives_the_nearest_item_and_what_it_misses() -> None:
    tool = InventoryTool(nursery())
    assert tool.run({"category": "shrub", "features": ["sand"], "budget": 10}) == []
    near = tool.run({"category": "shrub", "features": ["sand"], "budget": 10, "nearest": True})
    assert names(near) == ["Lavender Hidcote"] and near[0]["missed"] == {"budget": 10}
    # no shady shrub in stock at all: the price is not the reason, the wish is
    near = tool.run({"category": "shrub", "features": ["shade"], "in_stock": True, "nearest": True})
    assert names(near) == ["Lavender Hidcote"] and near[0]["missed"] == {"features": ["shade"]}
    assert tool.run({"category": "tree", "nearest": True}) == []


def shop() -> Commerce:
    catalog = nursery()
    vocab = Vocabulary(catalog.categories, catalog.brands, sorted(catalog.feature_words()))
    return Commerce(CommerceDecl(slots={"features": "wants", "budget": "spend", "category": "kind"}), vocab, "EUR",
                    catalog.attribute_values())


def test_a_new_value_of_an_attribute_replaces_the_old_one_and_keeps_the_others() -> None:
    goal = Goal(id="g", type="sales.plants", slots={"wants": ["shade", "clay"]})
    assert shop().features_said("one for sandy soil? sand I mean", set(), goal) == {"wants": ["shade", "sand"]}
    assert shop().features_said("in full sun", set(), goal) == {"wants": ["clay", "full sun"]}
    assert shop().features_said("something nice", set(), goal) == {}


def test_the_near_miss_is_no_match_and_is_said_with_its_price() -> None:
    goal = Goal(id="g", type="sales.plants", slots={"wants": ["sand"], "spend": 10, "kind": "Shrub"})
    near = InventoryTool(nursery()).run({"category": "shrub", "features": ["sand"], "budget": 10, "nearest": True})
    assert Commerce.keep_matches(goal, near) == []
    assert shop().nothing_matched(goal, "en") == ("Nothing sand shrub under €10; the cheapest sand shrub is "
                                                  "Lavender Hidcote (Hillside) — €12, in stock.")
    assert Commerce.keep_matches(goal, [{"name": "Fern Lady"}]) == [{"name": "Fern Lady"}]
    assert shop().nothing_matched(goal, "en") == ""
