"""The opt-in item module: roles onto the author's slots, offered items, store.yaml validation."""

from __future__ import annotations

from pathlib import Path

from core.shared.models import Goal
from core.state.memory.base import PreferenceSummary
from core.understanding.commerce import OFFERED, Commerce, offered
from core.workspace.config import CommerceDecl
from core.workspace.slots import SlotType, Vocabulary
from core.workspace.store_yaml import load_store_config

VOCAB = Vocabulary(["Tent", "Stove"], ["Coleman", "MSR"], ["waterproof", "light"])


def goal(**slots: object) -> Goal:
    g = Goal(id="g1", type="shop.find", priority=1)
    g.slots.update(slots)
    return g


def test_search_arguments_use_the_search_roles_of_the_authors_slots() -> None:
    shop = Commerce(CommerceDecl("catalog.find", {"budget": "max_spend", "category": "kind"}), VOCAB, "USD")
    args = shop.search_args({"max_spend": 200, "kind": "Tent"}, {"budget", "category", "in_stock",
                                                                  "exclude_brands"},
                            PreferenceSummary(disliked_brands=["Coleman"]), goal())
    assert args == {"budget": 200, "category": "Tent", "in_stock": True, "exclude_brands": ["Coleman"]}


def test_a_brand_the_customer_asked_for_is_not_excluded_by_an_old_dislike() -> None:
    shop = Commerce(CommerceDecl(), VOCAB, "USD")
    args = shop.search_args({"brand": "Coleman"}, {"brand", "exclude_brands"},
                            PreferenceSummary(disliked_brands=["Coleman"]), goal())
    assert "exclude_brands" not in args


def test_offered_items_are_remembered_and_forgotten_with_the_choice_among_them() -> None:
    g = goal(pick="Coleman Sundome", max_spend=200)
    items = [{"sku": f"T{i}", "name": f"Tent {i}", "price": 100 + i, "stock": 1, "extra": "x"} for i in range(5)]
    Commerce.remember(g, items, 3)
    assert [i["sku"] for i in offered(g)] == ["T0", "T1", "T2"] and "extra" not in offered(g)[0]
    g.slots["size"] = "2-person"
    Commerce.forget(g, {"pick": SlotType("pick", "choice"), "max_spend": SlotType("max_spend", "money"),
                        "size": SlotType("size", "option", vocab=["2-person", "4-person"])})
    assert OFFERED not in g.slots and "pick" not in g.slots and g.slots["max_spend"] == 200
    assert g.slots["size"] == "2-person"  # an option listed by the question is not a choice among items


def test_a_question_points_at_an_offered_item_or_names_what_the_store_carries() -> None:
    shop = Commerce(CommerceDecl(), VOCAB, "USD")
    g = goal()
    Commerce.remember(g, [{"sku": "T1", "name": "Coleman Sundome", "category": "Tent"},
                          {"sku": "T2", "name": "MSR Hubba", "category": "Tent"}], 3)
    assert shop.read(g, "is the second one in stock?").sku == "T2"
    other = shop.read(g, "do you have stoves?")
    assert other is not None and other.category == "Stove" and not other.sku
    assert shop.read(g, "what is your return policy?") is None


def test_wishes_are_attribute_words_but_not_the_words_naming_a_question() -> None:
    shop = Commerce(CommerceDecl(slots={"features": "wishes"}), VOCAB, "USD")
    assert shop.features_said("a light waterproof one", set()) == {"wishes": ["waterproof", "light"]}
    assert shop.features_said("light budget", {"light"}) == {}


def test_store_yaml_commerce_section_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "store.yaml"
    path.write_text("name: Trail Co\ninventory: {source: inv.csv, columns: {name: n, price: p}}\n"
                    "agents: {sales: {tools: [catalog.find]}}\n"
                    "commerce:\n  search_tool: catalog.find\n  slots: {budjet: max_spend, brand: maker}\n",
                    encoding="utf-8")
    cfg, problems = load_store_config(path)
    assert cfg.commerce == CommerceDecl("catalog.find", {"brand": "maker"})
    warning = next(p for p in problems if "budjet" in p.message)
    assert warning.severity == "warning" and warning.line == 6 and "budget" in warning.message


def test_a_store_without_an_inventory_has_no_item_behaviour(tmp_path: Path) -> None:
    path = tmp_path / "store.yaml"
    path.write_text("name: Help desk\nagents: {care: {tools: []}}\n", encoding="utf-8")
    cfg, _ = load_store_config(path)
    assert cfg.commerce is None
