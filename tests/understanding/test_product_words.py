"""A shop's own product words (names, makers, descriptions, attribute values) lead a request to its items:
they give the search its free text and, when the items they find are of one category, the category."""

from __future__ import annotations

import pandas as pd

from core.shared.models import Goal
from core.sop.graph import Node, Sop
from core.tools.catalog import Catalog
from core.tools.inventory import InventoryTool
from core.understanding import Commerce
from core.workspace.config import CommerceDecl
from core.workspace.slots import Vocabulary



def nursery() -> Catalog:
    return Catalog(pd.DataFrame([
        {"sku": "P1", "name": "Lavender Hidcote", "category": "Shrub", "brand": "Hillside", "price": 12.0,
         "stock": 8, "Blurb": "Fragrant evergreen hedging"},
        {"sku": "P2", "name": "Hosta Blue Angel", "category": "Perennial", "brand": "Hillside", "price": 9.0,
         "stock": 5, "Blurb": "Large leaved shade lover"},
        {"sku": "P3", "name": "Yew Hedge Pack", "category": "Hedging", "brand": "Greenway", "price": 40.0,
         "stock": 3, "Blurb": "Evergreen hedging, ten bare roots"},
    ]), ["Blurb"])


def shop() -> Commerce:
    catalog = nursery()
    vocab = Vocabulary(catalog.categories, catalog.brands, [])
    return Commerce(CommerceDecl(slots={"category": "kind", "query": "words"}), vocab, "EUR",
                    catalog.attribute_values(), catalog.item_texts())


def sop() -> Sop:
    nodes = {"ask": Node(id="ask", kind="action", text="ask user for the kind of plant", next="find"),
             "find": Node(id="find", kind="action", text="search the nursery", tool="inventory.query")}
    return Sop(id="sales.plants", title="Find a plant", agent="sales", priority=1,
               triggers=["I'm looking for a plant", "can you suggest a shrub"], description="", file="plants.sop",
               format="text", start="ask", nodes=nodes)


def test_product_words_find_their_items_and_leave_the_request_words() -> None:
    words, rows = shop().product_words("I'm looking for something fragrant please", sop())
    assert words == ["fragrant"] and rows == {0}
    # "looking" is the SOP's own word; words finding no item together: the last one said is left out
    assert shop().product_words("evergreen hostas", sop()) == (["evergreen"], {0, 2})
    assert shop().product_words("looking for a plant", sop()) == ([], set())


def test_one_category_found_fills_it_and_the_words_are_free_text() -> None:
    goal = Goal(id="g", type="sales.plants")
    assert shop().products_said("anything by Greenway?", sop(), goal) == {"words": "greenway", "kind": "Hedging"}
    # evergreen is in a shrub and in hedging: the words only
    assert shop().products_said("something evergreen", sop(), goal) == {"words": "evergreen"}
    named = shop().names_products("do you have hostas?", [sop()])
    assert named == {"sales.plants"} and shop().names_products("what time do you open?", [sop()]) == set()


def test_free_words_match_item_text_in_any_plural_form() -> None:
    tool = InventoryTool(nursery())
    assert [r["name"] for r in tool.run({"query": "roots"})] == ["Yew Hedge Pack"]
    assert [r["name"] for r in tool.run({"query": "hostas"})] == ["Hosta Blue Angel"]
