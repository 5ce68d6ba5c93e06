"""SOP Agent Playground: write SOPs, chat with the agent, inspect every decision, switch stores.

Run with ``streamlit run app.py`` (or ``make run``). The pages are thin: every action goes
through ``core.playground``; the model and workspace indexes load once per process.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from ui import services

ICON = Path(__file__).resolve().parent / "ui" / "icon.png"  # a local file: the app works offline
st.set_page_config(page_title="SOP Agent Playground", page_icon=str(ICON), layout="wide")
nav = st.navigation([  # first, so the sidebar shows page titles while the rest loads
    st.Page("pages/chat.py", title="Chat", icon=":material/chat:", default=True),
    st.Page("pages/studio.py", title="SOP studio", icon=":material/account_tree:"),
    st.Page("pages/inspector.py", title="Inspector", icon=":material/manage_search:"),
    st.Page("pages/store.py", title="Store", icon=":material/storefront:"),
    st.Page("pages/tests.py", title="Test runs", icon=":material/checklist:"),
])
pg = services.current()  # while the model and the workspace load: a progress bar, then a rerun

with st.sidebar:
    st.markdown(f"### {pg.name}")
    choices = services.workspace_choices()
    labels = [label for label, _ in choices]
    here = next((i for i, (_, path) in enumerate(choices) if path == pg.root), 0)
    picked = st.selectbox("Workspace", labels, index=here, key=services.picker_key(pg.root),
                          help="Switch store: the demo, an example, or a workspace you created on the Store page.")
    target = choices[labels.index(picked)][1]
    if target != pg.root:
        services.switch_to(target)
        st.rerun()
    untrusted = pg.trust_notice()
    if untrusted:  # its Python tools and MCP servers wait until someone trusts it
        st.warning(untrusted, icon=":material/gpp_maybe:")
        if st.button("Trust this workspace", key=f"trust_{services.workspace_tag(pg.root)}"):
            pg.trust()
            st.rerun()
    if services.URL_PROBLEM in st.session_state:
        st.warning(st.session_state.pop(services.URL_PROBLEM), icon=":material/link_off:")
    status = st.container()  # filled after the page ran, so a save on the page shows at once

services.write_url()
nav.run()
services.write_url()  # the page may have started a new session or opened another workspace

pg = services.current()
with status:
    errs = [p for p in pg.problems if p.severity == "error"]
    if errs:
        st.error(f"{len(errs)} error(s) in this workspace: see the SOP studio.", icon=":material/error:")
    drafts = pg.drafts.names()
    if drafts:
        st.warning("Unsaved drafts (kept, not in use until saved in the SOP studio): "
                   + ", ".join(f"`{d}`" for d in drafts), icon=":material/edit_note:")
    st.caption(f"{len(pg.workspace.sops)} SOPs · "
               f"{len(pg.workspace.catalog.frame) if pg.workspace.catalog else 0} items · "
               f"{len(pg.workspace.kb.chunks) if pg.workspace.kb else 0} KB chunks")
