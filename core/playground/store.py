"""The Store page's service: the store's own settings in store.yaml, its inventory (an uploaded file or a Google
Sheet, mapped to roles) and its knowledge-base documents; and a new store from the wizard, its settings checked
the same way."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import yaml

from core.language.lexicons import lexicons
from core.playground import newstore
from core.playground.changes import ChangeSet, CheckResult
from core.playground.newstore import NewStore
from core.playground.sheet_inventory import read_sheet, sheet_change, sheet_decl
from core.playground.uploads import (
    MappingProblem,
    UploadError,
    check_mapping,
    inventory_change,
    kb_change,
    read_inventory,
    replace_top_level_block,
)
from core.shared.errors import UserInputError
from core.shared.problems import Problem
from core.tools.catalog import Catalog
from core.tools.sheets import SheetFeed, SheetStatus
from core.tools.sheets_api import SheetRef
from core.workspace.paths import read_text_file

if TYPE_CHECKING:
    from core.playground.service import Playground


class Store:
    """The settings, inventory and knowledge base of one :class:`~core.playground.service.Playground`'s store."""

    def __init__(self, pg: Playground) -> None:
        self.pg = pg

    # ------------------------------------------------------------------ settings
    def settings(self) -> dict[str, Any]:
        """The store's own settings as the Store page edits them."""
        cfg = self.pg.workspace.files.config
        return {"name": cfg.name, "currency": cfg.currency, "region": cfg.region, "description": cfg.description,
                "greeting": cfg.greeting, "languages": list(cfg.languages), "polite_particle": cfg.polite_particle}

    @staticmethod
    def known_languages() -> dict[str, str]:
        """Language code -> its name in its own language, for every language the engine reads."""
        return {lx.language: lx.name for lx in lexicons()}

    def save_settings(self, name: str, currency: str = "", region: str = "", description: str = "",
                      greeting: str = "", languages: list[str] | None = None,
                      polite_particle: str | None = None) -> CheckResult:
        """Write the store's name, currency, region, description, greeting, languages and Thai polite particle
        (None: left as it is) into store.yaml (its other lines and comments kept), checked like every save.

        Raises:
            UploadError: naming the field that is wrong (an empty name, a currency that is not a three-letter
                ISO 4217 code, a region phone numbers are not known for, a language the engine cannot read,
                a greeting over 300 characters, a polite particle that is not a short Thai word).
        """
        checked = checked_settings(name, currency, region, description, greeting, languages, polite_particle)
        text = read_text_file(self.pg.root / "store.yaml")
        values = tuple((k, v) for k, v in checked.items() if k != "polite_particle" or polite_particle is not None)
        for key, value in values:
            if value or re.search(rf"(?m)^{key}\s*:", text):
                text = replace_top_level_block(text, key, value)
        try:
            back = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            raise UploadError(f"store.yaml would not read back after this change: {exc}") from exc
        wrong = [key for key, value in values if (value or key in back) and (back.get(key) or "") != (value or "")]
        if wrong:
            raise UploadError(f"store.yaml: {', '.join(wrong)} would not read back as written")
        return self.pg.apply(ChangeSet("save store settings").put("store.yaml", text))

    # ------------------------------------------------------------------ inventory
    def inventory_frame(self) -> pd.DataFrame | None:
        """The mapped inventory (roles as columns), or None when the store has none."""
        cat = self.pg.workspace.catalog
        return cat.frame if cat is not None else None

    def inventory_attributes(self) -> dict[str, list[str]]:
        """The attributes the mapping made (the mapped columns beyond the roles) with the values each holds:
        what a shopper's words filter on."""
        cat = self.pg.workspace.catalog
        return cat.attribute_values() if cat is not None else {}

    @staticmethod
    def preview_attributes(frame: pd.DataFrame, attributes: list[str]) -> dict[str, list[str]]:
        """The attributes a mapping would make of an uploaded table, with the values each holds."""
        return Catalog(frame, [a for a in attributes if a in frame.columns]).attribute_values()

    def inventory_mapping(self) -> dict[str, str]:
        """The current role → column mapping from store.yaml."""
        inv = self.pg.workspace.files.config.inventory
        return dict(inv.columns) if inv else {}

    def preview_inventory(self, name: str, data: bytes) -> pd.DataFrame:
        """Read an uploaded inventory for preview and mapping (raises UploadError with file:line)."""
        return read_inventory(name, data)

    def upload_inventory(self, name: str, data: bytes, mapping: dict[str, str],
                         attributes: list[str]) -> tuple[list[MappingProblem], CheckResult | None]:
        """Replace the inventory and its mapping; nothing is written when the mapping or the workspace has errors."""
        frame = read_inventory(name, data)
        found = check_mapping(name, frame, mapping, attributes)
        if any(p.severity == "error" for p in found):
            return found, None
        inv = self.pg.workspace.files.config.inventory
        store_yaml = read_text_file(self.pg.root / "store.yaml")
        change = inventory_change(store_yaml, inv.source if inv else None, name, data, mapping, attributes)
        return found, self.pg.apply(change)

    def inventory_sheet(self) -> SheetStatus | None:
        """Where a Google Sheet inventory stands (its copy, the key in use or what to set, the last failure);
        None when the inventory is a file or there is none."""
        inv = self.pg.workspace.files.config.inventory
        return SheetFeed.for_inventory(inv, self.pg.root).status() if inv is not None and inv.google_sheet else None

    def refresh_inventory(self) -> list[Problem]:
        """Read the Google Sheet inventory now ("Refresh now") and load the workspace again with it.

        Returns:
            That read's problems: a warning naming the sheet and what failed when its last copy stays in
            use, an error when there is no copy at all; none when it was read.

        Raises:
            UserInputError: the inventory is not a Google Sheet.
        """
        inv = self.pg.workspace.files.config.inventory
        if inv is None or not inv.google_sheet:
            raise UserInputError("this store's inventory is not a Google Sheet")
        try:
            _, found = read_sheet(self.pg.root, inv, fresh=True)
        except UserInputError as exc:
            loc = exc.location
            found = [Problem(loc.file if loc else "inventory", loc.line if loc else 0, "error", exc.message)]
        self.pg.reload()
        return found

    def preview_sheet(self, sheet: str, worksheet: str = "", *,
                      fresh: bool = False) -> tuple[pd.DataFrame, list[Problem]]:
        """A Google Sheet read for preview and mapping (``fresh``: from the API now, else its copy while that
        is fresh), with a warning when an older copy stands in for it.

        Raises:
            UserInputError: naming the sheet: not a sheet id or URL, no key, an HTTP error with no copy, no
                answer in time, an unusable header row.
        """
        return read_sheet(self.pg.root, sheet_decl(sheet, worksheet), fresh=fresh)

    def connect_sheet(self, sheet: str, worksheet: str, refresh_minutes: float, mapping: dict[str, str],
                      attributes: list[str]) -> tuple[list[MappingProblem], CheckResult | None]:
        """Make a Google Sheet the inventory, with its mapping; nothing is written when the mapping or the
        workspace has errors (the sheet is read from the copy the preview kept)."""
        decl = sheet_decl(sheet, worksheet, refresh_minutes)
        frame, _ = read_sheet(self.pg.root, decl)
        found = check_mapping(SheetRef(decl.google_sheet, decl.worksheet).label, frame, mapping, attributes)
        if any(p.severity == "error" for p in found):
            return found, None
        store_yaml = read_text_file(self.pg.root / "store.yaml")
        return found, self.pg.apply(sheet_change(store_yaml, decl, mapping, attributes))

    # ------------------------------------------------------------------ knowledge base
    def kb_documents(self) -> list[dict[str, Any]]:
        """The KB files with their size and number of indexed chunks."""
        kb = self.pg.workspace.kb
        out = []
        for path in self.pg.workspace.files.kb_files():
            ref = str(path.relative_to(self.pg.root))
            chunks = sum(1 for c in kb.chunks if c.ref.split("#")[0] == ref) if kb else 0
            out.append({"file": ref, "bytes": path.stat().st_size, "chunks": chunks})
        return out

    def upload_kb(self, files: list[tuple[str, bytes]]) -> CheckResult:
        """Add KB documents (.md, .txt, .pdf) in one change; an invalid file stops them all."""
        if not files:
            raise UploadError("choose at least one file")
        change = ChangeSet(f"upload KB {', '.join(n for n, _ in files)}")
        for name, data in files:
            change.files.update(kb_change(name, data).files)
        return self.pg.apply(change)

    def delete_kb(self, rel: str) -> CheckResult:
        """Remove one KB document (backed up, undoable)."""
        if not rel.startswith("kb/") or not (self.pg.root / rel).is_file():
            raise UserInputError(f"{rel} is not a knowledge-base file of this workspace")
        return self.pg.apply(ChangeSet(f"delete {rel}").delete(rel))


def checked_settings(name: str, currency: str = "", region: str = "", description: str = "", greeting: str = "",
                     languages: list[str] | None = None, polite_particle: str | None = None) -> dict[str, Any]:
    """A store's settings, tidied and checked, in store.yaml's order.

    Raises:
        UploadError: naming the field that is wrong (an empty name, a currency that is not a three-letter
            ISO 4217 code, a region phone numbers are not known for, a language the engine cannot read,
            a greeting over 300 characters, a polite particle that is not a short Thai word).
    """
    import phonenumbers

    name, currency, region = name.strip(), currency.strip().upper(), region.strip().upper()
    if not name or len(name) > 80:
        raise UploadError("store name: give a name of 1 to 80 characters")
    if currency and not re.fullmatch(r"[A-Z]{3}", currency):
        raise UploadError(f"currency: {currency!r} is not a three-letter ISO 4217 code such as USD, EUR or THB")
    if region and region not in phonenumbers.SUPPORTED_REGIONS:
        raise UploadError(f"region: {region!r} is not a two-letter country code such as US, GB or TH")
    greeting = " ".join(greeting.split())
    if len(greeting) > 300:
        raise UploadError(f"greeting: {len(greeting)} characters; keep it under 300")
    known = Store.known_languages()
    langs = [c.strip().lower() for c in languages or [] if c.strip()]
    unknown = [c for c in langs if c not in known]
    if unknown:
        raise UploadError(f"languages: {', '.join(map(repr, unknown))} not known (known: {', '.join(known)})")
    particle = (polite_particle or "").strip()
    if particle and not re.fullmatch(r"[\u0E00-\u0E7F]{1,12}", particle):
        raise UploadError(f"polite particle: {particle!r} is not a short Thai word such as ครับ or ค่ะ")
    return {"name": name, "currency": currency, "region": region, "description": " ".join(description.split()),
            "greeting": greeting, "languages": langs, "polite_particle": particle}


def create_store(spec: NewStore) -> Path:
    """A new store from the wizard's answers (:mod:`core.playground.newstore`), its settings checked like the
    Store page's; the new workspace's folder."""
    settings = checked_settings(spec.name, spec.currency, spec.region, spec.description, spec.greeting,
                                spec.languages)
    return newstore.create_store(spec, settings)



def attribute_table(values: dict[str, list[str]], shown: int = 12) -> pd.DataFrame:
    """Attributes and their values as a table for the Store page: each attribute, how many values it holds
    and the first ``shown`` of them."""
    rows = [{"attribute": a, "values": len(v), "holds": ", ".join(v[:shown]) + (" …" if len(v) > shown else "")}
            for a, v in values.items()]
    return pd.DataFrame(rows, columns=["attribute", "values", "holds"])
