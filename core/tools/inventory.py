"""The built-in item search (``inventory.query`` unless store.yaml's ``commerce.search_tool`` renames it):
read-only filters over the mapped inventory."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from core.errors import Location, ToolError, WorkspaceError
from core.problems import Problem
from core.text import plural_forms, tokens
from core.tools.base import ToolSpec
from core.workspace import DEFAULT_SEARCH_TOOL, InventoryDecl, Param, read_text_file

ROLE_ORDER = ("sku", "name", "category", "brand", "price", "stock")


@dataclass
class Catalog:
    """The inventory as a DataFrame with role-named columns, plus its vocabulary."""

    frame: pd.DataFrame
    attributes: list[str]

    @property
    def categories(self) -> list[str]:
        return _distinct(self.frame, "category")

    @property
    def brands(self) -> list[str]:
        return _distinct(self.frame, "brand")

    def feature_words(self) -> set[str]:
        """Words that appear in the attribute columns (for feature extraction)."""
        words: set[str] = set()
        for col in self.attributes:
            if col in self.frame:
                for value in self.frame[col].dropna().astype(str):
                    for part in re.split(r"[;,/|]", value.lower()):
                        part = part.strip()
                        if part and not re.fullmatch(r"[\d.\s]+\w{0,3}", part):
                            words.add(part)
        return words


def _distinct(frame: pd.DataFrame, role: str) -> list[str]:
    if role not in frame:
        return []
    return sorted({str(v).strip() for v in frame[role].dropna() if str(v).strip()})


def read_table(source: str, root: Path, sheet: str = "") -> pd.DataFrame:
    """Read a CSV/XLSX file of the workspace (or a CSV URL) as strings.

    Raises:
        WorkspaceError: naming the file and what is wrong.
    """
    if source.startswith(("http://", "https://")):
        try:
            return pd.read_csv(source, dtype=str, keep_default_na=False)
        except Exception as exc:  # noqa: BLE001 - any failure of a remote sheet is reported the same way
            raise WorkspaceError(f"cannot read the sheet: {exc}", Location(source)) from exc
    path = (root / source).resolve()
    if not path.exists():
        raise WorkspaceError("file does not exist", Location(source))
    if path.suffix.lower() in (".xlsx", ".xlsm"):
        try:
            return pd.read_excel(path, sheet_name=sheet or 0, dtype=str).fillna("")
        except Exception as exc:  # noqa: BLE001
            raise WorkspaceError(f"cannot read the spreadsheet: {exc}", Location(source)) from exc
    text = read_text_file(path)
    try:
        import io

        return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except pd.errors.ParserError as exc:
        line = _parser_line(str(exc))
        raise WorkspaceError(f"malformed CSV: {exc}", Location(source, line)) from exc
    except pd.errors.EmptyDataError as exc:
        raise WorkspaceError("the file is empty", Location(source)) from exc


def _parser_line(message: str) -> int:
    m = re.search(r"line (\d+)", message)
    return int(m.group(1)) if m else 0


def load_catalog(decl: InventoryDecl, root: Path) -> tuple[Catalog, list[Problem]]:
    """Load the inventory and rename mapped columns to their roles.

    Raises:
        WorkspaceError: when the file cannot be read or a mapped column is missing.
    """
    raw = read_table(decl.source, root, decl.sheet)
    raw.columns = [str(c).strip() for c in raw.columns]
    missing = [f"{role} -> {col!r}" for role, col in decl.columns.items() if col not in raw.columns]
    missing += [f"attribute {a!r}" for a in decl.attributes if a not in raw.columns]
    if missing:
        raise WorkspaceError(f"column(s) not in the file: {', '.join(missing)}; the file has "
                             f"{', '.join(raw.columns)}", Location(decl.source, 1))
    frame = pd.DataFrame({role: raw[col] for role, col in decl.columns.items()})
    for attr in decl.attributes:
        frame[attr] = raw[attr]
    problems: list[Problem] = []
    for role in ("price", "stock"):
        if role in frame:
            frame[role], bad = numeric_column(frame[role])
            for idx in bad[:5]:
                problems.append(Problem(decl.source, idx + 2, "warning",
                                        f"{role} value {raw[decl.columns[role]][idx]!r} is not a number"))
    return Catalog(frame, list(decl.attributes)), problems


def numeric_column(col: pd.Series) -> tuple[pd.Series, list[int]]:
    cleaned = col.astype(str).str.replace(r"[^\d.\-]", "", regex=True)
    nums = pd.to_numeric(cleaned, errors="coerce")
    bad = [i for i, (v, s) in enumerate(zip(nums, col.astype(str), strict=True)) if pd.isna(v) and s.strip()]
    return nums, bad


class InventoryTool:
    """Filters over the mapped inventory: category, brand, price range, in-stock, text match."""

    PARAMS = ("category", "brand", "budget", "min_price", "max_price", "query", "features", "in_stock", "sku",
              "name", "limit", "exclude_brands", "prefer_brands", "sort")

    def __init__(self, catalog: Catalog, name: str = DEFAULT_SEARCH_TOOL) -> None:
        self.catalog = catalog
        self.spec = ToolSpec(name, "Search the store's inventory (read-only)", [Param(p, True) for p in self.PARAMS])

    def run(self, args: dict[str, Any]) -> Any:
        df = self.catalog.frame
        mask = pd.Series(True, index=df.index)
        mask &= self._exact(df, "sku", args.get("sku"))
        mask &= self._category(df, args.get("category"))
        mask &= self._brand(df, args.get("brand"))
        mask &= self._exclude(df, args.get("exclude_brands"))
        mask &= self._price(df, args)
        if _truthy(args.get("in_stock")) and "stock" in df:
            mask &= df["stock"].fillna(0) > 0
        for text in (args.get("query"), args.get("name")):
            if text:
                mask &= self._text(df, str(text))
        rows = df[mask].copy()
        rows["_score"] = self._feature_score(rows, args.get("features"))
        rows["_pref"] = self._preferred(rows, args.get("prefer_brands"))
        rows = self._sort(rows, str(args.get("sort") or ""))
        limit = _int(args.get("limit"), 5)
        return [self._record(r) for _, r in rows.head(limit).iterrows()]

    @staticmethod
    def _exact(df: pd.DataFrame, role: str, value: Any) -> pd.Series:
        if not value or role not in df:
            return pd.Series(True, index=df.index)
        return df[role].astype(str).str.lower() == str(value).strip().lower()

    def _category(self, df: pd.DataFrame, value: Any) -> pd.Series:
        if not value or "category" not in df:
            return pd.Series(True, index=df.index)
        wanted = plural_forms(str(value))
        return df["category"].astype(str).map(lambda c: bool(plural_forms(c) & wanted))

    def _brand(self, df: pd.DataFrame, value: Any) -> pd.Series:
        if not value or "brand" not in df:
            return pd.Series(True, index=df.index)
        names = [value] if isinstance(value, str) else list(value)
        low = {str(n).strip().lower() for n in names}
        return df["brand"].astype(str).str.lower().isin(low)

    def _exclude(self, df: pd.DataFrame, value: Any) -> pd.Series:
        if not value or "brand" not in df:
            return pd.Series(True, index=df.index)
        names = [value] if isinstance(value, str) else list(value)
        return ~df["brand"].astype(str).str.lower().isin({str(n).lower() for n in names})

    def _price(self, df: pd.DataFrame, args: dict[str, Any]) -> pd.Series:
        mask = pd.Series(True, index=df.index)
        if "price" not in df:
            return mask
        high = _num(args.get("max_price")) or _num(args.get("budget"))
        low = _num(args.get("min_price"))
        if high is not None:
            mask &= df["price"] <= high
        if low is not None:
            mask &= df["price"] >= low
        return mask

    def _haystack(self, row: pd.Series) -> str:
        cols = ["name", "brand", "category", *self.catalog.attributes]
        return " ".join(str(row[c]) for c in cols if c in row and pd.notna(row[c])).lower()

    def _text(self, df: pd.DataFrame, text: str) -> pd.Series:
        words = tokens(text)
        if not words:
            return pd.Series(True, index=df.index)
        return df.apply(lambda r: all(w in self._haystack(r) for w in words), axis=1)

    def _feature_score(self, rows: pd.DataFrame, features: Any) -> pd.Series:
        if not features or rows.empty:
            return pd.Series(0, index=rows.index)
        feats = [features] if isinstance(features, str) else list(features)
        feats = [str(f).lower() for f in feats if str(f).strip()]
        return rows.apply(lambda r: sum(f in self._haystack(r) for f in feats), axis=1)

    @staticmethod
    def _preferred(rows: pd.DataFrame, brands: Any) -> pd.Series:
        if not brands or "brand" not in rows or rows.empty:
            return pd.Series(0, index=rows.index)
        names = [brands] if isinstance(brands, str) else list(brands)
        low = {str(n).lower() for n in names}
        return rows["brand"].astype(str).str.lower().isin(low).astype(int)

    @staticmethod
    def _sort(rows: pd.DataFrame, how: str) -> pd.DataFrame:
        if rows.empty:
            return rows
        if "stock" in rows:
            rows["_in"] = (rows["stock"].fillna(0) > 0).astype(int)
        else:
            rows["_in"] = 1
        price_up = how in ("price", "cheapest", "price_asc")
        keys = ["_in", "_pref", "_score"] + (["price"] if "price" in rows else [])
        order = [False, False, False] + ([price_up] if "price" in rows else [])
        return rows.sort_values(keys, ascending=order, kind="stable")

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
