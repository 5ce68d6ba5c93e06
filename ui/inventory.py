"""The Store page's inventory parts: mapping a table's columns to roles, and a Google Sheet inventory (its
state, "Refresh now", connecting one)."""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from core.playground import Playground, suggest_mapping
from core.playground.store import Store, attribute_table
from core.shared.errors import UserInputError
from core.tools.sheets import SheetStatus
from core.workspace.config import ROLES, SHEET_REFRESH_MINUTES
from ui import widgets

PREVIEWED = "sheet_previewed"  # the (sheet, worksheet) whose preview is shown


def map_columns(frame: pd.DataFrame, current: dict[str, str], key: str) -> tuple[dict[str, str], list[str]]:
    """A role -> column picker for each role (guessed from the headers and the current mapping) and the
    attributes (the other columns); what is picked."""
    cols = list(frame.columns)
    guess = suggest_mapping(cols, current)
    st.markdown("**Map columns to roles** (name and price are required)")
    grid = st.columns(4)
    mapping: dict[str, str] = {}
    for i, role in enumerate(ROLES):
        options = ["—", *cols]
        pick = grid[i % 4].selectbox(role, options, index=options.index(guess[role]) if role in guess else 0,
                                     key=f"map_{key}_{role}")
        if pick != "—":
            mapping[role] = pick
    rest = [c for c in cols if c not in mapping.values()]
    attributes = st.multiselect("Attributes (more columns shown and searched)", rest, default=rest,
                                key=f"attrs_{key}")
    attribute_values(Store.preview_attributes(frame, attributes), "The attributes this mapping makes")
    return mapping, attributes


def attribute_values(values: dict[str, list[str]], title: str) -> None:
    """The attributes of a mapping and the values each holds (what a shopper's words filter on)."""
    if not values:
        return
    st.markdown(f"**{title}** (a shopper naming one of their values gets only the items holding it)")
    st.dataframe(attribute_table(values), hide_index=True, width="stretch", key=f"attr_table_{title}")


def sheet_state(pg: Playground, status: SheetStatus) -> None:
    """Where the store's Google Sheet stands, what to set when no key is, and "Refresh now"."""
    read = (f"the copy in use was read {_ago(status.fetched_at)} ({status.rows} items)" if status.fetched_at
            else "no copy of it has been read yet")
    every = f"{status.refresh_minutes:g} minute{'s' if status.refresh_minutes != 1 else ''}"
    st.markdown(f"Inventory from **[{status.label}]({status.url})**, read again every {every}; {read}.")
    if status.missing_key:
        st.warning(f"No key for the Google Sheets API is set, so the sheet cannot be read again: {status.missing_key}."
                   + (" The last copy read stays in use." if status.fetched_at else ""), icon=":material/key_off:")
    elif status.error:
        st.warning(f"The last read of the sheet failed: {status.error}."
                   + (" The last copy read stays in use." if status.fetched_at else ""), icon=":material/warning:")
    else:
        st.caption(f"Read with the key in `{status.credentials}`.")
    if st.button("Refresh now", icon=":material/sync:", key="refresh_sheet",
                 help="Read the sheet now instead of waiting for the interval"):
        with st.spinner("Reading the sheet…"):
            found = pg.store.refresh_inventory()
        if found:
            widgets.problems(found)
        else:
            st.success("Read the sheet again; the inventory below is the new copy.", icon=":material/check_circle:")


def connect_sheet(pg: Playground) -> None:
    """Connect a Google Sheet as the inventory: its id or URL and tab, a preview, the mapping, then apply."""
    st.caption("A sheet the store keeps up to date: read through the Google Sheets API with the key in the "
               "environment, kept as a copy and read again after the interval.")
    c1, c2, c3 = st.columns([4, 2, 1])
    sheet = c1.text_input("Spreadsheet id or URL", key="sheet_text",
                          placeholder="https://docs.google.com/spreadsheets/d/…/edit")
    worksheet = c2.text_input("Worksheet (tab)", key="sheet_tab", placeholder="first tab")
    minutes = c3.number_input("Every (min)", min_value=0.0, value=float(SHEET_REFRESH_MINUTES), step=1.0,
                              key="sheet_minutes")
    fresh = st.button("Preview the sheet", icon=":material/table_view:", key="preview_sheet", disabled=not sheet)
    if fresh:
        st.session_state[PREVIEWED] = (sheet, worksheet)
    if not sheet or st.session_state.get(PREVIEWED) != (sheet, worksheet):
        return
    try:
        frame, found = pg.store.preview_sheet(sheet, worksheet, fresh=fresh)
    except UserInputError as exc:
        st.error(str(exc), icon=":material/error:")
        return
    widgets.problems(found)
    st.markdown(f"**Preview**: {len(frame)} rows, {len(frame.columns)} columns")
    st.dataframe(frame.head(20), hide_index=True, width="stretch")
    mapping, attributes = map_columns(frame, pg.store.inventory_mapping(), "sheet")
    if st.button("Use this sheet", type="primary", icon=":material/link:", key="apply_sheet"):
        with st.spinner("Checking and re-indexing…"):
            problems, result = pg.store.connect_sheet(sheet, worksheet, float(minutes), mapping, attributes)
        widgets.mapping_problems(problems)
        if result is None:
            st.error("Sheet not connected: fix the mapping first. Nothing was changed on disk.")
        else:
            st.session_state.pop(PREVIEWED, None)
            widgets.saved(result, "Inventory", redraw=True)


def _ago(when: float) -> str:
    minutes = int((time.time() - when) // 60)
    if minutes < 1:
        return "just now"
    if minutes < 120:
        return f"{minutes} minute{'s' if minutes != 1 else ''} ago"
    return time.strftime("on %Y-%m-%d at %H:%M", time.localtime(when))
