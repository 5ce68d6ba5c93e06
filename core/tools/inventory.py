"""The built-in item search (``inventory.query`` unless store.yaml's ``commerce.search_tool`` renames it):
read-only filters over the mapped inventory (:mod:`core.tools.catalog`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from core.language import measures as M
from core.language.text import plural_forms, tokens
from core.shared.errors import ToolError
from core.tools.base import ToolSpec
from core.tools.catalog import Catalog, value_parts
from core.workspace.config import DEFAULT_SEARCH_TOOL
from core.workspace.params import Param

ROLE_ORDER = ("sku", "name", "category", "brand", "price", "stock")


@dataclass(frozen=True)
class _Row:
    """One inventory row as the filters read it (lower-cased text, plural forms, numbers)."""

    position: int
    sku: str | None
    categories: set[str] | None
    brand: str | None
    price: float | None
    stock: float
    haystack: str  # name, brand, category and attributes, for text and feature matches
    values: frozenset[str] = frozenset()  # the attribute values the row holds (a cell may list several)
    cells: dict[str, str] = field(default_factory=dict)  # each attribute's cell (and the name), as written


def search_spec(name: str = DEFAULT_SEARCH_TOOL) -> ToolSpec:
    """The item search's spec (its params all optional), with or without an inventory loaded yet."""
    return ToolSpec(name, "Search the store's inventory (read-only)", [Param(p, True) for p in InventoryTool.PARAMS])


class InventoryTool:
    """Filters over the mapped inventory: category, brand, price range, in-stock, text match, and the
    attribute values the shopper asked for (``features``: every one must hold). ``prefer_features`` only
    orders; ``nearest`` asks, when nothing passes, for the item nearest to the request: the cheapest one
    passing all filters but one (a price bound first), with ``missed`` saying which it breaks."""

    PARAMS = ("category", "brand", "budget", "min_price", "max_price", "query", "features", "in_stock", "sku",
              "name", "limit", "exclude_brands", "prefer_brands", "sort", "prefer_features", "nearest",
              "measures")

    def __init__(self, catalog: Catalog, name: str = DEFAULT_SEARCH_TOOL) -> None:
        self.catalog = catalog
        self._cache: tuple[pd.DataFrame, list[_Row]] | None = None  # the table and its plain rows
        self._records: tuple[pd.DataFrame, dict[int, dict[str, Any]]] | None = None  # rows as returned, by position
        self.spec = search_spec(name)

    def run(self, args: dict[str, Any]) -> Any:
        self.catalog.refresh()  # a Google Sheet past its interval: read again in the background
        frame = self.catalog.frame  # one table for the whole search, even if a refresh replaces it meanwhile
        keep = self._filter(args)
        rows = [r for r in self._rows(frame) if keep(r)]
        if not rows and _truthy(args.get("nearest")):
            return self._nearest(frame, args)
        feats = _words_list(args.get("prefer_features"))
        liked = _lower_set(args.get("prefer_brands"))
        price_up = str(args.get("sort") or "") in ("price", "cheapest", "price_asc")

        def order(r: _Row) -> tuple[int, int, int, bool, float]:  # in stock, preferred, features, then price
            price = r.price if r.price is not None else 0.0
            return (-int(r.stock > 0), -int(r.brand in liked), -sum(f in r.haystack for f in feats),
                    r.price is None, price if price_up else -price)

        rows.sort(key=order)  # stable: the table's order among equals
        return [self._record_at(frame, r.position) for r in rows[:_int(args.get("limit"), 5)]]

    def _record_at(self, df: pd.DataFrame, position: int) -> dict[str, Any]:
        """The record of a row as a search returns it (a copy), made once per row and table: reading a row
        through pandas costs more than the whole search."""
        if self._records is None or self._records[0] is not df:
            self._records = (df, {})
        made = self._records[1]
        if position not in made:
            made[position] = self._record(df.iloc[position])
        return dict(made[position])

    def _rows(self, df: pd.DataFrame) -> list[_Row]:
        """The inventory as plain rows (a pandas pass per query cost ~10 ms a turn), built once per table."""
        if self._cache is None or self._cache[0] is not df:
            cols = ["name", "brand", "category", *self.catalog.attributes]
            has = set(df.columns)
            rows = []
            for position, rec in enumerate(df.to_dict("records")):
                price, stock = rec.get("price"), rec.get("stock")
                rows.append(_Row(
                    position=position,
                    sku=str(rec.get("sku")).lower() if "sku" in has else None,
                    categories=plural_forms(str(rec.get("category"))) if "category" in has else None,
                    brand=str(rec.get("brand")).lower() if "brand" in has else None,
                    price=float(price) if "price" in has and pd.notna(price) else None,
                    stock=(float(stock) if pd.notna(stock) else 0.0) if "stock" in has else 1.0,
                    haystack=" ".join(str(rec[c]) for c in cols if c in rec and pd.notna(rec[c])).lower(),
                    values=frozenset(v for c in self.catalog.attributes if c in rec and pd.notna(rec[c])
                                     for v in value_parts(str(rec[c]))),
                    cells={c: str(rec[c]) for c in [*self.catalog.attributes, "name"]
                           if c in rec and pd.notna(rec[c])}))
            self._cache = (df, rows)
        return self._cache[1]

    def _filter(self, args: dict[str, Any]) -> Callable[[_Row], bool]:
        """Whether a row passes every filter the arguments set; a filter on a column the table lacks is
        off. Numbers are read once, so a bad one is an input error even on an empty table."""
        has = set(self.catalog.frame.columns)
        sku = str(args.get("sku")).strip().lower() if args.get("sku") and "sku" in has else None
        wanted = plural_forms(str(args["category"])) if args.get("category") and "category" in has else None
        brand = args.get("brand")
        brands = {str(n).strip().lower() for n in ([brand] if isinstance(brand, str) else list(brand))} \
            if brand and "brand" in has else None
        excluded = _lower_set(args.get("exclude_brands")) if "brand" in has else set()
        high = low = None
        if "price" in has:
            high, low = _num(args.get("max_price")) or _num(args.get("budget")), _num(args.get("min_price"))
        in_stock = _truthy(args.get("in_stock")) and "stock" in has
        words = [w for text in (args.get("query"), args.get("name")) if text for w in [tokens(str(text))]]
        wishes = _words_list(args.get("features"))
        measures = _measures(args.get("measures"), [*self.catalog.attributes, "name"])

        def keep(r: _Row) -> bool:
            if (sku is not None and r.sku != sku) or (wanted is not None and not (r.categories or set()) & wanted):
                return False
            if (brands is not None and r.brand not in brands) or (excluded and r.brand in excluded):
                return False
            if (high is not None or low is not None) and (
                    r.price is None or (high is not None and r.price > high) or (low is not None and r.price < low)):
                return False
            if in_stock and r.stock <= 0:
                return False
            if not all(_holds(r, w) for w in wishes):
                return False
            if measures and not all(M.holds(r.cells.get(a, ""), spec) for a, spec in measures.items()):
                return False
            return all(all(any(f in r.haystack for f in plural_forms(w)) for w in ws) for ws in words)

        return keep

    def _nearest(self, frame: pd.DataFrame, args: dict[str, Any]) -> list[dict[str, Any]]:
        """The item nearest to a request nothing passes: each filter left out in turn (the price bounds first,
        then each wished value, each quantity, then the brand), the cheapest in-stock-first item of the first that finds
        any, with ``missed`` naming the filter it breaks and its value; empty when none finds one."""
        wishes = _words_list(args.get("features"))
        bound = {k: args[k] for k in ("budget", "max_price", "min_price") if args.get(k) not in (None, "")}
        tries: list[tuple[dict[str, Any], dict[str, Any]]] = []
        if bound:
            tries.append(({k: v for k, v in args.items() if k not in bound}, bound))
        for wish in wishes:
            tries.append(({**args, "features": [w for w in wishes if w != wish]}, {"features": [wish]}))
        measures = args.get("measures") if isinstance(args.get("measures"), dict) else {}
        for attr, spec in measures.items():
            tries.append(({**args, "measures": {a: s for a, s in measures.items() if a != attr}},
                          {"measures": {attr: spec}}))
        if args.get("brand"):
            tries.append(({k: v for k, v in args.items() if k != "brand"}, {"brand": args["brand"]}))
        for relaxed, missed in tries:
            keep = self._filter(relaxed)
            rows = [r for r in self._rows(frame) if keep(r)]
            if rows:
                best = min(rows, key=lambda r: (r.stock <= 0, r.price is None, r.price or 0.0))
                return [{**self._record_at(frame, best.position), "missed": missed}]
        return []

    def _record(self, row: pd.Series) -> dict[str, Any]:
        rec: dict[str, Any] = {}
        for role in ROLE_ORDER:
            if role in row and pd.notna(row[role]):
                val = row[role]
                if role in ("price", "stock"):
                    val = int(val) if float(val).is_integer() else float(val)
                rec[role] = val
        for attr in self.catalog.attributes:
            if attr in row and str(row[attr]).strip():
                rec[attr] = str(row[attr])
        return rec


def _measures(value: Any, attributes: list[str]) -> dict[str, str]:
    """The quantities asked for, by attribute or the name (``{"Sleeps": ">= 2 headcount"}``); one on a
    column the table lacks is off, like any filter on a missing column."""
    if not isinstance(value, dict):
        return {}
    return {str(a): str(spec) for a, spec in value.items() if str(a) in attributes and str(spec).strip()}


def _words_list(value: Any) -> list[str]:
    """One value or a list of them, lower-cased, blanks left out."""
    values = [value] if isinstance(value, str) else list(value or [])
    return [str(v).strip().lower() for v in values if str(v).strip()]


def _holds(row: _Row, wish: str) -> bool:
    """Whether a row has a wished attribute value: one of its values, or the words in its text."""
    return wish in row.values or re.search(rf"(?<!\w){re.escape(wish)}(?!\w)", row.haystack) is not None


def _lower_set(value: Any) -> set[str]:
    """One name or a list of names, lower-cased."""
    names = [value] if isinstance(value, str) else list(value or [])
    return {str(n).lower() for n in names}


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "y")
    return bool(value)


def _num(value: Any) -> float | None:
    if value in (None, ""):
        return None
    try:
        return float(str(value).replace(",", ""))
    except ValueError as exc:
        raise ToolError(f"invalid number {value!r}", "invalid_input") from exc


def _int(value: Any, default: int) -> int:
    try:
        return max(1, min(50, int(value)))
    except (TypeError, ValueError):
        return default
