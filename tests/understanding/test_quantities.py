"""Quantities by what they measure: a number with a unit or a noun fills the attribute that measures it
(a garden centre's own columns here), never the budget; the search compares it in the column's own unit."""

from __future__ import annotations

import pandas as pd

from core.language.measures import holds, quantities, without_quantities
from core.shared.models import Goal
from core.tools.catalog import Catalog
from core.tools.inventory import InventoryTool
from core.understanding import Commerce
from core.workspace.config import CommerceDecl
from core.workspace.slots import Vocabulary


def garden() -> Catalog:
    return Catalog(pd.DataFrame([
        {"sku": "B1", "name": "Bench Oak", "category": "Furniture", "price": 320.0, "stock": 2,
         "Seats": "3", "Bag": "", "Pot size": ""},
        {"sku": "B2", "name": "Picnic Set", "category": "Furniture", "price": 450.0, "stock": 1,
         "Seats": "6-8", "Bag": "", "Pot size": ""},
        {"sku": "C1", "name": "Peat-free compost", "category": "Compost", "price": 9.0, "stock": 30,
         "Seats": "", "Bag": "40 l", "Pot size": ""},
        {"sku": "C2", "name": "Compost sack", "category": "Compost", "price": 5.0, "stock": 30,
         "Seats": "", "Bag": "10 litres", "Pot size": ""},
        {"sku": "P1", "name": "Olive tree", "category": "Tree", "price": 60.0, "stock": 4,
         "Seats": "", "Bag": "", "Pot size": "XL"},
    ]), ["Seats", "Bag", "Pot size"])


def shop() -> Commerce:
    c = garden()
    return Commerce(CommerceDecl(slots={"budget": "spend", "measures": "sizes"}),
                    Vocabulary(c.categories, c.brands, sorted(c.feature_words())), "EUR", c.attribute_values())


def test_quantities_are_read_with_their_measure_and_bound() -> None:
    assert [q.spec for q in quantities("a bench for 6 people, compost under 20 litres, pot size XL")] == [
        ">= 6 headcount", "<= 20000 volume", "= xl size"]
    assert [q.spec for q in quantities("500g please, at least 2 kg")] == ["= 500 mass", ">= 2000 mass"]
    assert quantities("under 300 euros") == [] and without_quantities("a 40 l bag of compost") == "a bag of compost"


def test_a_cell_is_compared_in_its_own_unit() -> None:
    assert holds("10 litres", "<= 20000 volume") and not holds("40 l", "<= 20000 volume")
    assert holds("6-8", ">= 8 headcount") and not holds("3", ">= 4 headcount")
    assert holds("XL", "= xl size") and not holds("XL", "= l size") and not holds("", ">= 2 headcount")


def test_each_quantity_fills_the_attribute_measuring_it_and_no_budget() -> None:
    goal = Goal(id="g", type="sales.garden", slots={"sizes": {"Bag": "<= 20000 volume"}})
    measured, numbers = shop().measures_said("seating for 6 guests", goal)
    assert measured["sizes"] == {"Bag": "<= 20000 volume", "Seats": ">= 6 headcount"} and numbers == {6.0}
    assert measured["measured_as"] == {"Seats": "6 guests"}  # the words, for saying what nothing matched
    assert shop().measures_said("a pot size XL one", None)[0]["sizes"] == {"Pot size": "= xl size"}
    assert shop().not_budget({"spend": 6, "kind": "Furniture"}, numbers) == {"kind": "Furniture"}
    assert shop().not_budget({"spend": 300}, numbers) == {"spend": 300}


def test_the_search_filters_on_quantities() -> None:
    tool = InventoryTool(garden())
    assert [r["name"] for r in tool.run({"measures": {"Seats": ">= 6 headcount"}})] == ["Picnic Set"]
    assert [r["name"] for r in tool.run({"category": "compost", "measures": {"Bag": "<= 20000 volume"}})] == [
        "Compost sack"]
    near = tool.run({"category": "furniture", "measures": {"Seats": ">= 10 headcount"}, "nearest": True})
    assert near[0]["name"] == "Bench Oak" and near[0]["missed"] == {"measures": {"Seats": ">= 10 headcount"}}


def test_an_item_question_names_its_attribute_by_column_measure_or_value() -> None:
    assert shop().asked_attribute("how many seats does the bench have?") == ("Seats", "")
    assert shop().asked_attribute("how many people does it take?") == ("Seats", "")
    assert shop().asked_attribute("what pot size is the olive?") == ("Pot size", "")
    assert shop().asked_attribute("is it in stock?") == ("", "")


def test_an_item_attribute_is_answered_from_its_row_or_said_missing() -> None:
    from core.understanding.commerce import ItemQuestion

    bench = {"sku": "B1", "name": "Bench Oak", "Seats": "3", "Bag": ""}
    assert shop().answer_attribute(bench, ItemQuestion("", sku="B1", attribute="Seats"), "en") == \
        "Bench Oak: seats 3."
    assert shop().answer_attribute(bench, ItemQuestion("", sku="B1", attribute="Bag"), "en") == \
        "The listing of Bench Oak doesn't say its bag."
    assert shop().answer_attribute(bench, ItemQuestion("", sku="B1", attribute="Seats", value="3"), "en") == \
        "Yes: Bench Oak, seats: 3."


def test_with_no_column_counting_people_the_names_that_do_are_measured() -> None:
    frame = pd.DataFrame([
        {"sku": "G1", "name": "Garden table 4-seater", "category": "Furniture", "price": 200.0, "stock": 2},
        {"sku": "G2", "name": "Bistro set for 2 persons", "category": "Furniture", "price": 90.0, "stock": 3},
        {"sku": "G3", "name": "Parasol 3 m", "category": "Furniture", "price": 60.0, "stock": 3},
    ])
    catalog = Catalog(frame, [])
    commerce = Commerce(CommerceDecl(), Vocabulary(catalog.categories, [], []), "EUR", {}, catalog.item_texts())
    measured, _ = commerce.measures_said("a table for 4 diners", None)
    assert measured["measures"] == {"name": ">= 4 headcount"}
    # a name without a word for people counts by its number ("4-seater"); "Bistro set for 2 persons" is too small
    assert [r["name"] for r in InventoryTool(catalog).run({"measures": measured["measures"]})] == [
        "Garden table 4-seater"]
    measured, _ = commerce.measures_said("a set for three persons", None)  # "3 m" is a length, not 3 seats
    assert [r["name"] for r in InventoryTool(catalog).run({"measures": measured["measures"]})] == [
        "Garden table 4-seater"]


def test_nothing_matching_names_the_quantity_asked_for() -> None:
    goal = Goal(id="g", type="sales.garden", slots={"category": "Furniture", "spend": 300,
                                                     "sizes": {"Seats": ">= 6 headcount"},
                                                     "measured_as": {"Seats": "6 guests"}})
    near = InventoryTool(garden()).run({"category": "furniture", "budget": 300,
                                        "measures": {"Seats": ">= 6 headcount"}, "nearest": True})
    assert Commerce.keep_matches(goal, near) == []
    assert shop().nothing_matched(goal, "en") == ("Nothing furniture (6 guests) under €300; the cheapest furniture "
                                                  "(6 guests) is Picnic Set — €450, in stock.")
