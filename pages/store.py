"""Store: upload and map an inventory, manage the knowledge base and re-index, create or switch workspaces."""

from __future__ import annotations

import streamlit as st

from core.playground import BLANK, STARTERS, NewStore, create_store, create_workspace
from core.playground.uploads import INVENTORY_TYPES, KB_TYPES, MAX_UPLOAD_BYTES
from core.shared.errors import UserInputError
from ui import inventory as inventory_ui
from ui import services, widgets

pg = services.current()
st.title("Store")
widgets.flash()  # what the last save did, when it redrew the page
limit_mb = MAX_UPLOAD_BYTES // (1024 * 1024)
tab_inv, tab_kb, tab_ws, tab_settings, tab_versions = st.tabs(
    ["Inventory", "Knowledge base", "Workspaces", "Settings", "Versions"],
    key="store_tab", on_change="rerun")  # the tab is kept when a save redraws the page

with tab_settings:
    now = pg.store.settings()
    with st.form("store_settings"):
        name = st.text_input("Name", value=now["name"], max_chars=80, key="set_name")
        c1, c2 = st.columns(2)
        currency = c1.text_input("Currency", value=now["currency"], max_chars=3, key="set_currency",
                                 help="ISO 4217 code (USD, EUR, THB): how prices are written and read.")
        region = c2.text_input("Region", value=now["region"], max_chars=2, key="set_region",
                               help="Two-letter country code (US, GB, TH): how customers write local phone "
                                    "numbers. Blank: the currency's country.")
        description = st.text_area("Description", value=now["description"], key="set_description",
                                   help="One or two sentences about what the store sells or does.")
        greeting = st.text_input("Greeting", value=now["greeting"], max_chars=300, key="set_greeting",
                                 placeholder="e.g. Welcome to Paws & Claws!",
                                 help="How the agent answers a hello, before it says what it can help with. "
                                      "Blank: a plain hello in the customer's language.")
        known = pg.store.known_languages()
        langs = st.multiselect("Languages customers may write in", list(known), default=now["languages"],
                               format_func=lambda c: f"{known[c]} ({c})", key="set_languages",
                               help="A message in another script gets a polite note naming these. "
                                    "None chosen: every language listed.")
        particles = ["", "ครับ", "ค่ะ"]
        if now["polite_particle"] not in particles:
            particles.append(now["polite_particle"])
        particle = st.selectbox("Thai polite particle", particles, index=particles.index(now["polite_particle"]),
                                format_func=lambda p: p or "default (ครับ)", key="set_particle",
                                help="How the agent closes its sentences to Thai customers: ครับ or ค่ะ.")
        if st.form_submit_button("Save settings", type="primary", icon=":material/save:"):
            try:
                widgets.saved(pg.store.save_settings(name, currency, region, description, greeting, langs, particle),
                              "Store settings", redraw=True)
            except UserInputError as exc:
                st.error(f"{exc} — nothing was changed.", icon=":material/error:")

with tab_inv:
    sheet = pg.store.inventory_sheet()
    if sheet is not None:
        inventory_ui.sheet_state(pg, sheet)  # before the table, so "Refresh now" shows the new copy below
    current = pg.store.inventory_frame()
    if current is None:
        st.info("This store has no inventory yet." if sheet is None else "The sheet has not been read yet.")
    else:
        st.caption(f"{len(current)} items · mapping: " +
                   ", ".join(f"{role} ← `{col}`" for role, col in pg.store.inventory_mapping().items()))
        st.dataframe(current.head(200), hide_index=True, width="stretch", height=260)
        inventory_ui.attribute_values(pg.store.inventory_attributes(), "Attributes and their values")
    st.markdown("#### Replace the inventory")
    upload = st.file_uploader(f"Inventory file (CSV or XLSX, up to {limit_mb} MB)",
                              type=[t[1:] for t in INVENTORY_TYPES], key="inventory_upload")
    if upload is not None:
        data = upload.getvalue()
        try:
            frame = pg.store.preview_inventory(upload.name, data)
        except UserInputError as exc:
            st.error(str(exc), icon=":material/error:")
        else:
            st.markdown(f"**Preview** of `{upload.name}`: {len(frame)} rows, {len(frame.columns)} columns")
            st.dataframe(frame.head(20), hide_index=True, width="stretch")
            mapping, attributes = inventory_ui.map_columns(frame, pg.store.inventory_mapping(), upload.name)
            if st.button("Apply inventory", type="primary", icon=":material/upload:", key="apply_inventory"):
                with st.spinner("Checking and re-indexing…"):
                    found, result = pg.store.upload_inventory(upload.name, data, mapping, attributes)
                widgets.mapping_problems(found)
                if result is None:
                    st.error("Inventory not applied: fix the mapping first. Nothing was changed on disk.")
                else:
                    widgets.saved(result, "Inventory", redraw=True)
    st.markdown("#### Or connect a Google Sheet")
    inventory_ui.connect_sheet(pg)



_kb_now = pg.kb_status()


@st.fragment(run_every=1.0 if _kb_now is not None and not _kb_now["ready"] else None)
def kb_indexing() -> None:
    """The knowledge base's indexing progress, refreshed every second until it is finished."""
    status = pg.kb_status()
    if status is None:
        return
    if status["error"]:
        st.error(f"Knowledge base {status['error']} (chat answers from {status['indexed']} of {status['total']} "
                 "chunks; try “Re-index everything”).", icon=":material/error:")
    elif not status["ready"]:
        done = status["indexed"] / max(status["total"], 1)
        st.progress(done, text=f"Indexing the knowledge base: {status['indexed']} of {status['total']} chunks. "
                               "The chat answers from the chunks indexed so far.")


with tab_kb:
    docs = pg.store.kb_documents()
    st.caption(f"{len(docs)} documents · {sum(d['chunks'] for d in docs)} chunks, indexed with MiniLM + FAISS")
    kb_indexing()
    for doc in docs:
        a, b, c = st.columns([5, 2, 1])
        a.markdown(f"`{doc['file']}`")
        b.caption(f"{doc['bytes'] / 1024:.1f} KB · {doc['chunks']} chunks")
        if c.button("Delete", key=f"del_{doc['file']}", icon=":material/delete:"):
            widgets.saved(pg.store.delete_kb(doc["file"]), f"deletion of {doc['file']}", redraw=True)
    kb_files = st.file_uploader(f"Add documents (.md, .txt, .pdf; up to {limit_mb} MB each)",
                                type=[t[1:] for t in KB_TYPES], accept_multiple_files=True, key="kb_upload")
    if kb_files and st.button("Add to knowledge base", type="primary", icon=":material/upload:", key="apply_kb"):
        try:
            with st.spinner("Checking…"):
                widgets.saved(pg.store.upload_kb([(f.name, f.getvalue()) for f in kb_files]), "Knowledge base",
                              redraw=True)
        except UserInputError as exc:
            st.error(f"{exc} — nothing was added.", icon=":material/error:")
    if st.button("Re-index everything", icon=":material/refresh:", key="reindex"):
        bar = st.progress(0.0, text="starting")
        pg.reload(progress=lambda f, s: bar.progress(min(max(f, 0.0), 1.0), text=s))
        st.success("Index rebuilt.")

with tab_ws:
    st.markdown(f"Open: **{pg.name}** at `{pg.root}`")
    st.markdown("#### Start a new store")
    st.caption("From scratch: your settings, your inventory and documents, and the starter SOPs you pick (or none). "
               "Nothing of the demo or of another store comes along.")
    with st.form("new_store", border=True):
        store_name = st.text_input("Name of the new store", placeholder="Harbour Outfitters", key="wiz_name")
        w1, w2 = st.columns(2)
        wiz_currency = w1.text_input("Currency", value="USD", max_chars=3, key="wiz_currency")
        wiz_region = w2.text_input("Region", max_chars=2, key="wiz_region", placeholder="US")
        known_langs = pg.store.known_languages()
        wiz_langs = st.multiselect("Languages customers may write in", list(known_langs), key="wiz_languages",
                                   format_func=lambda c: f"{known_langs[c]} ({c})")
        wiz_greeting = st.text_input("Greeting", max_chars=300, key="wiz_greeting",
                                     placeholder="e.g. Welcome to Harbour Outfitters!")
        wiz_description = st.text_area("Description", key="wiz_description", height=68,
                                       placeholder="One or two sentences about what the store sells or does.")
        st.markdown("**Starter SOPs** (edit them afterwards in the SOP studio)")
        needs = {"kb": " Needs documents.", "inventory": " Needs an inventory."}
        picked = [key for key, starter in STARTERS.items()
                  if st.checkbox(f"{starter.title}: {starter.about}{needs.get(starter.needs, '')}",
                                 key=f"wiz_starter_{key}")]
        wiz_inventory = st.file_uploader("Inventory (CSV or XLSX; columns mapped from their headers)",
                                         type=[t[1:] for t in INVENTORY_TYPES], key="wiz_inventory")
        wiz_kb = st.file_uploader("Knowledge-base documents (.md, .txt, .pdf)", type=[t[1:] for t in KB_TYPES],
                                  accept_multiple_files=True, key="wiz_kb")
        if st.form_submit_button("Create the store and open it", type="primary", icon=":material/storefront:"):
            try:
                with st.spinner("Checking and creating…"):
                    new_path = create_store(NewStore(
                        store_name, wiz_currency, wiz_region, list(wiz_langs), wiz_greeting, wiz_description, picked,
                        (wiz_inventory.name, wiz_inventory.getvalue()) if wiz_inventory is not None else None,
                        [(f.name, f.getvalue()) for f in wiz_kb or []]))
            except UserInputError as exc:
                st.error(f"{exc} — nothing was created.", icon=":material/error:")
            else:
                services.switch_to(new_path)
                st.rerun()
    st.markdown("#### Copy a workspace")
    choices = services.workspace_choices()
    templates = {f"Copy of {label}": str(path) for label, path in choices}
    templates["Blank (one KB-answer SOP)"] = BLANK
    name = st.text_input("Store name", placeholder="Trailhead Outfitters", key="new_ws_name")
    template = st.selectbox("Template", list(templates), key="new_ws_template")
    if st.button("Create and open", type="primary", icon=":material/add_business:", key="create_ws"):
        try:
            path = create_workspace(name, templates[template])
        except UserInputError as exc:
            st.error(str(exc))
        else:
            services.switch_to(path)
            st.rerun()

with tab_versions:
    known = pg.history.versions()
    now_line = st.empty()  # written after the form: a version published below is what the workspace now is
    with st.form("publish_version", border=False):
        note = st.text_input("Note", max_chars=300, key="version_note",
                             placeholder="e.g. returns flow for the Friday demo")
        if st.form_submit_button("Publish version", type="primary", icon=":material/new_releases:"):
            try:
                published = pg.history.publish_version(note)
                st.success(f"Published {published.label}: {published.note}", icon=":material/check_circle:")
                known = pg.history.versions()
            except UserInputError as exc:
                st.error(str(exc), icon=":material/error:")
    now_line.markdown(f"This workspace now: **{pg.history.current_version()}**. A chat records the version that "
                      "answered it (Inspector, trace). Publish a version before a demo or a big change; roll back to "
                      "one at any time.")
    if not known:
        st.info("No version published yet.", icon=":material/history:")
    else:
        with st.container(key="version_list"):
            st.dataframe([{"version": v.label, "note": v.note, "published (UTC)": v.created.replace("T", " "),
                           "files": len(v.files)} for v in reversed(known)], hide_index=True, width="stretch")
        labels = {v.label: v.number for v in known}
        names = [*labels, "working copy"]
        a, b = st.columns(2)
        old = a.selectbox("Compare", names, index=max(0, len(labels) - 2), key="diff_old")
        new = b.selectbox("with", names, index=len(names) - 1, key="diff_new")
        changed = pg.history.version_diff(labels.get(old), labels.get(new))
        with st.container(key="version_diff"):
            if not changed:
                st.caption(f"{old} and {new} have the same files.")
            for rel, text in changed:
                with st.expander(rel, expanded=len(changed) <= 3):
                    st.code(text, language="diff")
        c, d = st.columns([2, 1], vertical_alignment="bottom")
        back = c.selectbox("Roll back to", list(labels), index=len(labels) - 1, key="rollback_to")
        if d.button(f"Roll back to {back}", icon=":material/restore:", key="rollback"):
            try:
                widgets.saved(pg.history.roll_back(labels[back]), f"Roll back to {back}", redraw=True)
            except UserInputError as exc:
                st.error(str(exc), icon=":material/error:")
