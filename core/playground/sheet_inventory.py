"""Connecting a Google Sheet as the inventory from the Store page: read it for preview and mapping, then write
store.yaml's ``inventory`` block (nothing here writes to disk but the sheet's copy in ``.state/sheets/``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from core.playground.changes import ChangeSet
from core.playground.uploads import UploadError, replace_top_level_block
from core.shared.errors import Location
from core.shared.problems import Problem
from core.tools.sheets import SheetFeed, sheet_table
from core.workspace.config import SHEET_REFRESH_MINUTES, SPREADSHEET_ID, SPREADSHEET_URL, InventoryDecl


def spreadsheet_id(text: str) -> str:
    """The spreadsheet id in a Google Sheet's URL, or the id itself.

    Raises:
        UploadError: the text is neither.
    """
    text = text.strip()
    found = SPREADSHEET_URL.match(text)
    if found:
        return found.group(1)
    if SPREADSHEET_ID.match(text):
        return text
    raise UploadError(f"{text!r} is neither a Google Sheet's id nor its URL "
                      "(https://docs.google.com/spreadsheets/d/<id>/edit)", Location("Google Sheet"))


def sheet_decl(text: str, worksheet: str = "", refresh_minutes: float = SHEET_REFRESH_MINUTES) -> InventoryDecl:
    """An inventory declaration for a Google Sheet, its columns not yet mapped.

    Raises:
        UploadError: the sheet is neither an id nor a URL, or the interval is below zero.
    """
    if refresh_minutes < 0:
        raise UploadError("the refresh interval must be 0 minutes or more", Location("Google Sheet"))
    return InventoryDecl(source="", columns={}, attributes=[], google_sheet=spreadsheet_id(text),
                         worksheet=worksheet.strip(), refresh_minutes=float(refresh_minutes))


def read_sheet(root: Path, decl: InventoryDecl, *, fresh: bool = False) -> tuple[pd.DataFrame, list[Problem]]:
    """The sheet as a table of strings (``fresh``: read from the API now, else its copy while that is fresh),
    with a warning when an older copy stands in for it; the copy is kept, so applying the mapping reads no
    further.

    Raises:
        WorkspaceError: the sheet cannot be read (no key, an HTTP error, no answer in time) and there is no
            copy, or its header row is unusable; the message names the sheet.
    """
    feed = SheetFeed.for_inventory(decl, root)
    values, problems = feed.read(force=fresh)
    table, _ = sheet_table(values, feed.label)
    return table, problems


def sheet_change(store_yaml: str, decl: InventoryDecl, mapping: dict[str, str], attributes: list[str]) -> ChangeSet:
    """store.yaml with its ``inventory`` block naming the Google Sheet and the mapping (the file a previous
    inventory came from stays, unused)."""
    block: dict[str, Any] = {"sheet": decl.google_sheet}
    if decl.worksheet:
        block["worksheet"] = decl.worksheet
    block["columns"] = {r: c for r, c in mapping.items() if c}
    if attributes:
        block["attributes"] = list(attributes)
    minutes = decl.refresh_minutes
    block["refresh_minutes"] = int(minutes) if float(minutes).is_integer() else minutes
    change = ChangeSet(f"connect Google Sheet {decl.google_sheet}")
    return change.put("store.yaml", replace_top_level_block(store_yaml, "inventory", block))
