"""The canvas's procedure settings (id, title, description, agent, triggers added and removed) written into the
SOP's draft in its own format."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace

import streamlit as st

from core.playground.service import Playground
from core.sop.canvas.model import CanvasError, Format
from core.sop.canvas.settings import ProcedureSettings, read_settings, write_settings


def settings(pg: Playground, rel: str, source: str, on_edit: Callable[[], None]) -> None:
    """The settings of the SOP ``rel`` (its draft ``source``); a change becomes the draft both views show."""
    fmt: Format = "json" if rel.endswith(".json") else "text"
    now = read_settings(source, fmt)
    k = f"proc_{rel}_{hashlib.sha1(source.encode('utf-8')).hexdigest()[:10]}"
    count = f"{len(now.triggers)} trigger" + ("" if len(now.triggers) == 1 else "s")
    with st.expander(f"Procedure settings · `{now.id or 'no id'}` · {count}",
                     icon=":material/settings:", expanded=bool(st.session_state.get(f"proc_open_{rel}"))):
        flash = st.session_state.pop(f"proc_flash_{rel}", "")
        if flash:
            st.error(flash, icon=":material/block:")
        c1, c2 = st.columns(2)
        sop_id = c1.text_input("Id", now.id, key=f"{k}_id", help="Dotted words: support.report_damage.")
        title = c2.text_input("Title", now.title, key=f"{k}_title", help="What the chat calls the procedure.")
        description = st.text_input("Description", now.description, key=f"{k}_desc")
        agents = sorted(pg.workspace.files.config.agents)
        if now.agent and now.agent not in agents:
            agents.append(now.agent)
        agent = st.selectbox("Agent", agents, index=agents.index(now.agent) if now.agent else None,
                             key=f"{k}_agent", accept_new_options=True,
                             placeholder="the agent whose goals pattern matches the id",
                             help="Pick one of store.yaml's agents, or type a new name: saving then creates it "
                                  "(with your confirmation), allowed to call the tools this procedure calls.")
        if st.button("Apply settings", icon=":material/check:", key=f"{k}_apply"):
            _write(pg, rel, source, fmt, replace(now, id=sop_id, title=title, description=description,
                                                 agent=str(agent or "")), on_edit)
        st.markdown("**Triggers** · what a customer says to start this procedure")
        with st.container(height=260 if len(now.triggers) > 5 else "content", border=len(now.triggers) > 5):
            for i, phrase in enumerate(now.triggers):
                a, b = st.columns([5, 1], vertical_alignment="center")
                a.markdown(f"“{phrase}”")
                if b.button("Remove", icon=":material/close:", key=f"{k}_rm_{i}", help=f"Remove “{phrase}”"):
                    _write(pg, rel, source, fmt, now.without_trigger(phrase), on_edit)
        with st.form(f"{k}_add", border=False, clear_on_submit=True):
            a, b = st.columns([5, 2], vertical_alignment="bottom")
            phrase = a.text_input("Add a trigger", key=f"{k}_new", placeholder="my parcel arrived broken")
            if b.form_submit_button("Add trigger", icon=":material/add:") and phrase.strip():
                _write(pg, rel, source, fmt, now.with_trigger(phrase), on_edit)


def _write(pg: Playground, rel: str, source: str, fmt: Format, new: ProcedureSettings,
           on_edit: Callable[[], None]) -> None:
    st.session_state[f"proc_open_{rel}"] = True  # the panel stays open across the redraw
    try:
        text = write_settings(source, fmt, new)
    except CanvasError as exc:
        st.session_state[f"proc_flash_{rel}"] = str(exc)
        st.rerun()
        return
    if text != source:
        pg.studio.keep_draft(rel, text)
        on_edit()
    st.rerun()

