"""Items: the opt-in module for stores that sell from an inventory.

The engine itself knows no items, categories or brands. A store opts in by mapping an
inventory in store.yaml (and, optionally, a ``commerce:`` section naming its roles):

```yaml
commerce:
  search_tool: catalog.find            # the tool whose results are offered items (default inventory.query)
  slots: {category: product_type, budget: max_spend, brand: maker}   # search role -> the SOPs' slot
```

When the store maps an inventory, the built-in search over it is registered under
``search_tool``. With the module on:

- the items a search showed become the goal's *offered items*: a slot whose answer is "one of
  the recommended items" (type ``option``) is chosen among them by name, position or pronoun;
- a question about them or about a category or brand the store carries ("is the second one in
  stock?", "do you have webcams?") is answered from the inventory (:meth:`Commerce.read` reads
  it, :meth:`Commerce.answer` answers it);
- the customer's brand and feature preferences are passed to the search;
- the SOP that searches the inventory is reachable by the store's own category names.

Slot names are the author's: the search's roles (``category``, ``budget``, ``brand``, ...) are
mapped onto them by ``commerce.slots``, so a renamed copy of a store behaves identically.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.language import lexicons as LEX
from core.language import measures as M
from core.language import render
from core.language import text as T
from core.language.lexicons import phrases
from core.language.replies import say
from core.shared.models import Goal, ToolCall
from core.sop.graph import Sop
from core.state.memory.base import PreferenceSummary
from core.understanding.extract import resolve_reference
from core.understanding.mentions import find_vocab
from core.tools.catalog import value_parts
from core.workspace.config import CommerceDecl
from core.workspace.slots import SlotType, Vocabulary

OFFERED = "offered_items"  # goal key (engine's own): the items the last search showed, compacted
NEAREST = "nearest_item"  # goal key (engine's own): the item nearest to a search nothing matched
MEASURED = "measured_as"  # goal key (engine's own): the words each quantity was said with, by attribute
ITEM_FIELDS = ("sku", "name", "category", "brand", "price", "stock")


@dataclass(frozen=True)
class ItemQuestion:
    """A question about offered items or the store's stock, read from the customer's words."""

    evidence: str
    sku: str = ""          # one offered item the customer points at ("the second one")
    name: str = ""
    category: str = ""     # or a category / brand the store carries ("any webcams?")
    brand: str = ""
    attribute: str = ""    # an attribute of the item asked about ("how heavy is it?", "what size is the second?")
    value: str = ""        # ... or a value of it asked for ("is it good for beginners?")


def offered(goal: Goal | None) -> list[dict[str, Any]]:
    """The items the goal's last search showed the customer (empty for stores without items)."""
    if goal is None:
        return []
    items = goal.slots.get(OFFERED)
    return list(items) if isinstance(items, list) else []


def picked_offer(text: str, items: list[dict[str, Any]]) -> str | bool | None:
    """The offered item a message picks by price ("the cheaper one", "เอาอันที่ถูกกว่า": ``cheaper`` and
    ``pricier`` in the language files) or by a brand only one of them has ("เอา Samsung"), by name; False
    for a plain no in any language ("ไม่เอาค่ะ": none of them); None when it picks none that way, asks
    something ("Samsung กันน้ำไหม") or rules the brand out ("ไม่เอา Samsung"). Several offered items of the
    brand: the customer narrows the search instead."""
    if not items or T.is_question(text) or T.asks_about_item(text):
        return None
    spaced = LEX.segment(text.lower())
    if T.yes_no(text) is False and not [w for w in T.words(T.NO.sub("", spaced, count=1))
                                        if w not in LEX.phrases("particles")]:
        return False  # "ไม่เอาค่ะ": none of them

    def says(key: str) -> bool:
        return bool(LEX.phrases(key)) and re.search(rf"{T.L0}(?:{LEX.alternation(key)}){T.L1}", spaced) is not None

    cheaper, pricier = says("cheaper"), says("pricier")
    chosen: dict[str, Any] | None = None
    if cheaper != pricier:
        priced = [i for i in items if isinstance(i.get("price"), int | float)]
        if priced:
            chosen = (min if cheaper else max)(priced, key=lambda i: float(i["price"]))
    else:
        brands = {str(i.get("brand") or "").lower() for i in items} - {""}
        named = [b for b in brands if (m := re.search(rf"{T.L0}{re.escape(b)}{T.L1}", spaced))
                 and T.excluded(spaced[: m.start()]) is None]
        of_brand = [i for i in items if named and str(i.get("brand") or "").lower() == named[0]]
        if len(named) == 1 and len(of_brand) == 1:
            chosen = of_brand[0]
    return str(chosen.get("name") or chosen.get("sku")) if chosen else None


def left_after_ruling_out(text: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The offered items a message leaves when it rules some out by brand or name ("I don't like Razer",
    "ไม่เอา Samsung") and picks none; every item when it rules none out."""
    spaced = LEX.segment(text.lower())
    out = []
    for item in items:
        names = {str(item.get("brand") or "").lower(), str(item.get("name") or "").lower()} - {""}
        ruled = any(T.excluded(spaced[: m.start()]) is not None
                    for n in names for m in re.finditer(rf"{T.L0}{re.escape(n)}{T.L1}", spaced))
        if not ruled:
            out.append(item)
    return out


def narrows(text: str) -> bool:
    """Whether a message asks for other items than those shown ("do you have one in red?", "what about
    blue?": ``narrowing`` in the language files), not about one of them ("is it red?")."""
    return bool(LEX.phrases("narrowing")) and re.search(
        rf"{T.L0}(?:{LEX.alternation('narrowing')}){T.L1}", LEX.segment(text.lower())) is not None


def compact(item: dict[str, Any]) -> dict[str, Any]:
    """The fields of an item worth remembering between turns."""
    return {k: item[k] for k in ITEM_FIELDS if k in item}


class Commerce:
    """The item behaviour of one store (see the module docstring)."""

    def __init__(self, decl: CommerceDecl, vocab: Vocabulary, currency: str,
                 attributes: dict[str, list[str]] | None = None, items: list[tuple[str, str]] | None = None) -> None:
        self.decl = decl
        self.vocab = vocab
        self.currency = currency
        self.attributes = attributes or {}  # each attribute column's values (core/tools/catalog.py)
        self.items = items or []  # each item's category and text: the store's own product words
        self._item_words: dict[str, set[int]] = {}  # a word of the items' text -> the items it is in
        for i, (_category, text) in enumerate(self.items):
            for w in T.words(text):
                if len(w) > 1 and w not in T.STOPWORDS and not any(ch.isdigit() for ch in w):
                    self._item_words.setdefault(w, set()).add(i)
        self._attribute_of = {v.lower(): a for a, values in self.attributes.items() for v in values}
        self._role_of = {slot: role for role, slot in decl.slots.items()}

    @property
    def search_tool(self) -> str:
        return self.decl.search_tool

    def searches(self, sop: Sop) -> bool:
        """Whether an SOP runs the store's item search."""
        return any(n.tool == self.search_tool for n in sop.nodes.values())

    # ------------------------------------------------------------------ offered items
    @staticmethod
    def remember(goal: Goal, items: list[dict[str, Any]], shown: int) -> None:
        goal.slots[OFFERED] = [compact(i) for i in items[:shown]]

    @staticmethod
    def forget(goal: Goal, types: dict[str, SlotType]) -> None:
        """A changed search input: the offered items and the choice made among them no longer hold."""
        goal.slots.pop(OFFERED, None)
        for name, st in types.items():
            if st.kind == "choice":  # "one of the recommended items"
                goal.slots.pop(name, None)

    # ------------------------------------------------------------------ search arguments
    def reads_slots(self) -> set[str]:
        """The goal slots the search reads besides the SOP's params: the shopper's wishes, product words and
        quantities."""
        return {self.decl.slots.get(r, r) for r in ("features", "query", "measures")}

    def search_args(self, args: dict[str, Any], accepted: set[str], prefs: PreferenceSummary,
                    goal: Goal) -> dict[str, Any]:
        """The SOP's slot values under the search's role names, plus the customer's standing preferences."""
        out = {self._role_of.get(k, k): v for k, v in args.items()}
        if "exclude_brands" in accepted and prefs.disliked_brands and "brand" not in out:
            out["exclude_brands"] = list(prefs.disliked_brands)
        if "prefer_brands" in accepted and prefs.preferred_brands:
            out["prefer_brands"] = list(prefs.preferred_brands)
        said = goal.slots.get(self.decl.slots.get("features", "features"))
        wished = list(said) if isinstance(said, list) else []
        words = goal.slots.get(self.decl.slots.get("query", "query"))
        if "query" in accepted and isinstance(words, str) and words.strip() and "query" not in out:
            out["query"] = words  # the shopper's product words, matched against the items' text
        measures = goal.slots.get(self.decl.slots.get("measures", "measures"))
        if "measures" in accepted and isinstance(measures, dict) and measures:
            out["measures"] = dict(measures)  # "for 6 diners": the attribute that counts them
        if "features" in accepted and wished:  # what the shopper asks for now must hold
            out["features"] = list(dict.fromkeys(wished))
        liked = [f for f in prefs.preferred_features if f not in wished]
        if "prefer_features" in accepted and liked:  # what they liked before only orders
            out["prefer_features"] = liked
        if "in_stock" in accepted:
            out.setdefault("in_stock", True)
        if "nearest" in accepted:
            out.setdefault("nearest", True)
        return out

    # ------------------------------------------------------------------ nothing matched
    @staticmethod
    def keep_matches(goal: Goal, result: Any) -> Any:
        """A search's result as the flow sees it: the items that match. The item the search found nearest
        when none matched (marked ``missed``) is kept aside for :meth:`nothing_matched`, never offered as a
        match."""
        goal.slots.pop(NEAREST, None)
        if isinstance(result, list) and result and all(isinstance(i, dict) and "missed" in i for i in result):
            goal.slots[NEAREST] = dict(result[0])
            return []
        return result

    def nothing_matched(self, goal: Goal, language: str | None = None) -> str:
        """What the shopper asked for that nothing has, and the nearest item ("Nothing <wish> under <budget>;
        the cheapest <wish> one is …"); '' when the last search found no near item."""
        near = goal.slots.get(NEAREST)
        if not isinstance(near, dict):
            return ""
        said = goal.slots.get(self.decl.slots.get("features", "features"))
        wished = [str(w) for w in said] if isinstance(said, list) else []
        missed = near.get("missed") if isinstance(near.get("missed"), dict) else {}
        limit = next((goal.slots[s] for s in (self.decl.slots.get("budget", "budget"),) if s in goal.slots), None)
        bound = missed.get("budget", missed.get("max_price", limit))
        money = T.format_money(float(bound), self.currency) if isinstance(bound, int | float) else ""
        category = str(goal.slots.get(self.decl.slots.get("category", "category")) or "").lower()
        words = goal.slots.get(MEASURED) if isinstance(goal.slots.get(MEASURED), dict) else {}
        said = [str(w) for a, w in words.items() if a not in (missed.get("measures") or {})]
        quantity = f"({', '.join(said)})" if said else ""  # "<category> (2 people)"
        what = " ".join([*wished, category, quantity]).strip() or say("nothing_items", language)
        item = render.item_line(near, self.currency, language)
        head = say("nothing_under" if money else "nothing_with", language, what=what, limit=money)
        if "features" in missed:
            return head + say("nearest_without", language, item=item, what=" ".join(map(str, missed["features"])))
        if "brand" in missed:
            return head + say("nearest_other_brand", language, item=item)
        if isinstance(missed.get("measures"), dict) and missed["measures"]:
            attr = next(iter(missed["measures"]))
            value = near.get(attr) or say("not_listed", language)
            return head + say("nearest_measure", language, item=item, attribute=str(attr).lower(), value=value)
        one = " ".join([*wished, category or say("nothing_one", language), quantity]).strip()
        return head + say("nearest_cheapest", language, item=item, what=one)

    def features_said(self, text: str, labels: set[str], goal: Goal | None = None) -> dict[str, list[str]]:
        """Attribute values of the store's items the customer named ("a wireless one"), under the features
        role, with the values the goal already holds: a new value of the same attribute replaces the old one
        ("a blue one instead" after "red"). Words that label what the SOP asks for ("budget 35k") are not
        wishes."""
        low = f" {' '.join(T.words(text))} "
        found = [f for f in self.vocab.features if f" {' '.join(T.words(f))} " in low and f not in labels]
        # "long battery life" said: not "long" too
        found = [f for f in found if not any(f != g and f" {f} " in f" {g} " for g in found)]
        if not found:
            return {}
        slot = self.decl.slots.get("features", "features")
        held = goal.slots.get(slot) if goal is not None else None
        changed = {self._attribute_of.get(f) for f in found} - {None}
        kept = [str(h) for h in held if self._attribute_of.get(str(h).lower()) not in changed] \
            if isinstance(held, list) else []
        return {slot: list(dict.fromkeys([*kept, *found]))}

    # ------------------------------------------------------------------ quantities
    def measures_said(self, text: str, goal: Goal | None = None) -> tuple[dict[str, Any], set[float]]:
        """The quantities a message gives by what they measure ("a 70 m rope", "for 6 diners", "size M"), each
        under the attribute that measures it (``measures`` role: attribute -> bound, value, measure), with the
        goal's other measures kept; and the numbers they were said with, which are never a budget."""
        found = M.quantities(text)
        numbers = {q.said for q in found if q.said is not None}
        slot = self.decl.slots.get("measures", "measures")
        held = goal.slots.get(slot) if goal is not None else None
        measures = dict(held) if isinstance(held, dict) else {}
        words = dict(goal.slots.get(MEASURED) or {}) if goal is not None else {}
        for q in found:
            attr = self._measured_by(q)
            if attr:
                measures[attr], words[attr] = q.spec, q.words
        return ({slot: measures, MEASURED: words} if measures != (held or {}) else {}), numbers

    def _measured_by(self, q: M.Quantity) -> str:
        """The attribute a quantity fills: one named by a size word (a size), one named by or holding a
        word for people that counts (a headcount), else the one whose values carry the most amounts of the
        quantity's measure; '' when none does."""
        def named(attr: str, key: str) -> bool:
            return bool({T.stem(w) for w in T.words(attr)} & {T.stem(w) for w in LEX.phrases(key)})

        if q.measure == M.SIZE:
            return next((a for a in self.attributes if named(a, "size_words")), "")
        if q.measure == M.HEADCOUNT:  # "Sleeps" holding numbers, or values such as "2-person"
            def counts(a: str) -> bool:
                numbered = [v for v in self.attributes[a] if M.cell_count(v) is not None]
                return len(numbered) * 2 >= len(self.attributes[a]) > 0
            found = next((a for a in self.attributes if (named(a, "headcount_columns") and counts(a)) or any(
                M.counted_people(v) is not None for v in self.attributes[a])), "")
            # no column counts people, but the items' names do ("Dome 4-Person")
            return found or ("name" if any(M.counted_people(t) is not None for _c, t in self.items) else "")
        scored = {a: sum(1 for v in vals if (c := M.cell_quantity(v)) is not None and c[0] == q.measure)
                  for a, vals in self.attributes.items()}
        best = max(scored, key=lambda a: scored[a], default="")
        return best if best and scored[best] else ""

    def not_budget(self, found: dict[str, Any], numbers: set[float]) -> dict[str, Any]:
        """The values read from a message without a budget that is only a quantity's number ("for 12
        guests" gives no budget of 12)."""
        budget = self.decl.slots.get("budget", "budget")
        value = found.get(budget)
        if isinstance(value, int | float) and not isinstance(value, bool) and float(value) in numbers:
            return {k: v for k, v in found.items() if k != budget}
        return found

    # ------------------------------------------------------------------ the shop's own words
    def product_words(self, text: str, sop: Sop | None = None) -> tuple[list[str], set[int]]:
        """The words of a message that the store's items use (a product type, a model's name, a maker; plurals
        too) and the items holding all of them; the words the shopping SOP itself uses to ask or be
        asked for ("looking", "budget") are the request's, not the product's. Words that find no item
        together are left out from the last one said."""
        own = {T.stem(w) for w in T.words(" ".join([sop.title, *sop.triggers, *(n.text for n in sop.nodes.values())]))
               } if sop is not None else set()
        found: list[tuple[str, set[int]]] = []
        for w in T.words(text):
            if w in T.STOPWORDS or T.stem(w) in own or any(ch.isdigit() for ch in w):
                continue
            rows = set().union(*(self._item_words.get(f, set()) for f in T.plural_forms(w)))
            if rows:
                found.append((w, rows))
        while found:
            together = set.intersection(*(rows for _w, rows in found))
            if together:
                return [w for w, _rows in found], together
            found.pop()
        return [], set()

    def products_said(self, text: str, sop: Sop, goal: Goal) -> dict[str, Any]:
        """What a message's product words give the search (a product type, "something by <maker>"):
        the category of the items they find, when they are all of one and the goal has none yet, and the
        words themselves as the search's free text (under the ``query`` role)."""
        words, rows = self.product_words(text, sop)
        if not words:
            return {}
        out: dict[str, Any] = {self.decl.slots.get("query", "query"): " ".join(words)}
        cat_slot = self.decl.slots.get("category", "category")
        categories = {self.items[i][0] for i in rows} - {""}
        if len(categories) == 1 and goal.slots.get(cat_slot) in (None, ""):
            out[cat_slot] = next(iter(categories))
        return out

    def words_for_new_category(self, changes: dict[str, Any], text: str, sop: Sop, goal: Goal) -> dict[str, Any]:
        """A new category leaves the product words said for the old one behind ("<category> instead" after a
        model's name): the search's free text becomes the message's own product words, or none."""
        cat, query = self.decl.slots.get("category", "category"), self.decl.slots.get("query", "query")
        if cat not in changes or changes[cat] == goal.slots.get(cat) or not goal.slots.get(query):
            return {}
        return {query: " ".join(self.product_words(text, sop)[0])}

    def names_products(self, text: str, sops: list[Sop]) -> set[str]:
        """The SOP that searches the inventory, when a message names the store's products by its own words
        (a maker, a product type, a value of an attribute) and only one SOP searches; else nothing."""
        shopping = [s for s in sops if self.searches(s)]
        if len(shopping) != 1 or not self.product_words(text, shopping[0])[0]:
            return set()
        return {shopping[0].id}

    # ------------------------------------------------------------------ questions about items
    def read(self, goal: Goal | None, text: str) -> ItemQuestion | None:
        """An offered item the words point at, or a category/brand of the store they name; else None."""
        items = offered(goal)
        if goal is not None and items and (self.measures_said(text, goal)[0] or (
                (not T.is_question(text) or narrows(text))
                and self.features_said(M.without_quantities(text), set(), goal))):
            return None  # "do you have it in size L?", "one in red?": a narrower search, not a question on it
        category = find_vocab(text, self.vocab.categories) or ""
        brand = find_vocab(text, self.vocab.brands) or ""
        other_category = bool(category) and all(str(i.get("category", category)).lower() != category.lower()
                                                for i in items)
        ref = resolve_reference(text, items) if items and not other_category else None
        if ref is not None and ref.get("sku"):
            attribute, value = self.asked_attribute(text)
            return ItemQuestion(text, sku=str(ref["sku"]), name=str(ref.get("name") or ""), attribute=attribute,
                                value=value)
        if category or brand:
            return ItemQuestion(text, category=category, brand=brand)
        return None

    @staticmethod
    def narrows(text: str) -> bool:
        """Whether a message asks for other items than those shown (:func:`narrows`)."""
        return narrows(text)

    def asks_about_offered(self, goal: Goal, text: str) -> bool:
        """Whether a question asks about an attribute of an offered item ("what size is the second one?",
        "is the <name> good for beginners?") rather than picking it."""
        question = self.read(goal, text)
        return question is not None and bool(question.sku) and bool(question.attribute)

    def asked_attribute(self, text: str) -> tuple[str, str]:
        """The attribute a question about an item asks for: one its words name ("what's the weight?"), one
        measuring what it asks ("how heavy is it?"), or one holding a value it names ("is it good for
        beginners?": the attribute and the value); ('', '') when it asks none (its stock or price)."""
        said = {T.stem(w) for w in T.words(text)}
        named = [a for a in self.attributes if (words := {T.stem(w) for w in T.words(a)} - T.STOPWORDS)
                 and words <= said]
        said_values = [v for v in sorted(self.vocab.features, key=len, reverse=True) if v in self._attribute_of
                       and f" {' '.join(T.words(v))} " in f" {' '.join(T.words(text))} "]
        if named:
            attr = max(named, key=len)  # "is it good for beginners?": that value of the attribute named
            return attr, next((v for v in said_values if self._attribute_of[v] == attr), "")
        measure = M.asked_measure(text)
        if measure:
            attr = self._measured_by(M.Quantity(measure, None if measure == M.SIZE else 0.0, "=", ""))
            if attr:
                return attr, ""
        return (self._attribute_of[said_values[0]], said_values[0]) if said_values else ("", "")

    def answer_attribute(self, item: dict[str, Any], q: ItemQuestion, language: str) -> str:
        """An item's attribute from its row: the value, whether it holds the value asked for, or that the
        listing does not say."""
        name = render.as_text(item.get("name", q.name))
        cell = str(item.get(q.attribute) or "").strip()
        what = q.attribute.lower()
        if not cell:
            return say("listing_silent", language, name=name, attribute=what)
        if q.value:
            key = "item_has_value" if q.value.lower() in value_parts(cell) else "item_lacks_value"
            return say(key, language, name=name, attribute=what, value=render.as_text(cell), asked=q.value)
        return say("item_attribute", language, name=name, attribute=what, value=render.as_text(cell))

    def answer(self, q: ItemQuestion, call: Callable[[str, dict[str, Any]], ToolCall], language: str) -> str:
        """Look the item(s) up with the search tool and say what the inventory holds: an attribute of an
        item from its row, else its stock and price."""
        if q.sku:
            result = call(self.search_tool, {"sku": q.sku})
            if not (result.ok and result.result):
                return say("item_check_failed", language)
            item = result.result[0]
            if q.attribute:
                return self.answer_attribute(item, q, language)
            stock = item.get("stock")
            price = (say("item_price", language, price=T.format_money(float(item["price"]), self.currency))
                     if "price" in item else "")
            key = "item_in_stock" if stock and float(stock) > 0 else "item_out_of_stock"
            return say(key, language, name=item.get("name", q.name), stock=stock, price=price)
        args: dict[str, Any] = {"in_stock": True, "limit": 3}
        if q.category:
            args["category"] = q.category
        if q.brand:
            args["brand"] = q.brand
        result = call(self.search_tool, args)
        if result.ok and result.result:
            lines = "\n".join(f"- {render.item_line(i, self.currency)}" for i in result.result)
            return say("items_in_stock", language, what=(q.category or q.brand).lower(), items=lines)
        return say("out_of_stock_any" if result.ok else "stock_check_failed", language)

    # ------------------------------------------------------------------ reaching the SOP
    def triggers(self, sops: list[Sop]) -> dict[str, list[str]]:
        """Trigger phrases from the store's own categories for the one SOP that searches the inventory.

        SOP authors write triggers for the catalogue they know; when the inventory is replaced
        (tents instead of mice), "recommend a tent" must still reach the SOP.
        """
        shopping = [s.id for s in sops if self.searches(s)]
        if len(shopping) != 1:  # several product SOPs: their own triggers tell them apart
            return {}
        out = []
        for cat in (c.lower() for c in self.vocab.categories):
            plural = next((f for f in sorted(T.plural_forms(cat)) if f != cat), cat)
            out += [p.format(c=cat, p=plural) for p in phrases("shopping_requests")]
        return {shopping[0]: out}
