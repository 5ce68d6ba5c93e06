"""SOP studio: list, create, edit, duplicate and delete SOPs with live lint and a graph; edit the GAR; undo."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st
from streamlit_ace import st_ace

from core.playground import CheckResult, templates
from core.shared.errors import UserInputError
from core.workspace.gar_file import GAR_COLUMNS
from ui import canvas as canvas_ui
from ui import services, widgets
from ui import simulate as simulate_ui

pg = services.current()
generation = st.session_state.setdefault("studio_generation", 0)
gen = f"{services.workspace_tag(pg.root)}_{generation}"  # editors' keys: this workspace's files, this version
PICKED = "studio_sop"  # the SOP file shown, kept across reruns, tabs and pages
HELD = "studio_held"  # a save held back because it would break conversation tests: {rel, text}
PLAIN = "studio_plain_editor"  # the plain text area instead of the highlighting editor
PLAIN_KEPT = "studio_plain_kept"  # that choice, kept across pages
VIEW = "studio_view"  # the SOP as text or as a canvas of steps
VIEW_KEPT = "studio_view_kept"


def refresh() -> None:
    """Redraw the editors from what is on disk and in the drafts (after a save, undo, create, delete)."""
    st.session_state["studio_generation"] = generation + 1


def quick_fix(step: str) -> None:
    """Add a step no GAR row matches to the GAR, its row guessed from the workspace's own rows."""
    guess = pg.studio.suggest_gar_row(step)
    with st.expander(f"Quick fix: add “{step}” to the GAR", icon=":material/build:"):
        with st.form(f"fix_{step}", border=False):
            kinds = ["ask_user_input", "message_to_user", "api_call", "external_knowledge",
                     "api_call|external_knowledge", "ask_user_input|api_call"]
            kind = st.selectbox("action_type", kinds, index=kinds.index(guess["action_type"])
                                if guess["action_type"] in kinds else 1)
            meta = st.text_input("user_interaction_metadata", guess["user_interaction_metadata"],
                                 help="For an ask: what a valid answer is. For a message: the message to convey.")
            api = st.text_input("api", guess["api"], help="For an api_call: the tool's name.")
            params = st.text_input("params", guess["params"], help="Slot names joined with |; ? marks an optional one.")
            if st.form_submit_button("Add to the GAR", type="primary", icon=":material/add:"):
                try:
                    result = pg.studio.add_gar_row({"action": step, "action_type": kind,
                                                    "user_interaction_metadata": meta, "api": api, "params": params})
                    widgets.saved(result, "gar.csv")
                    if result.saved:
                        refresh()
                        st.rerun()
                except UserInputError as exc:
                    st.error(str(exc))


def held_save(rel: str, text: str, save: Callable[[str], CheckResult], what: str) -> bool:
    """A save that would break conversation tests that pass now: what breaks, and the two ways on. Whether it
    was saved now (the status lines below then say so)."""
    held = st.session_state.get(HELD)
    if not held or held["rel"] != rel or held["text"] != text:
        return False
    done = None
    with st.container(horizontal=True, wrap=True, key="held_save_buttons"):  # each button as wide as its label, wrapped
        if st.button("Save anyway", icon=":material/warning:", key=f"anyway_{rel}"):
            done = save("skip")
        if st.button("Accept the new replies", icon=":material/published_with_changes:", key=f"accept_{rel}",
                     help="Save, and update the expectations of the tests that break to what the agent does now "
                          "(each test keeps the keys and comments it has). One undo takes both back."):
            done = save("accept")
        if st.button("Keep editing", key=f"keep_{rel}"):
            st.session_state.pop(HELD, None)
            st.rerun()
    if done is not None:
        st.session_state.pop(HELD, None)
        if done.saved:
            refresh()
        widgets.saved(done, what, redraw=rel == "gar.csv")  # the GAR: the page again, its pickers included
        if done.saved:
            return True
    return False


HELD_ACTION = "studio_held_action"  # a create, duplicate or delete held by conversation tests: {what, run, after}


def checked_action(what: str, run: Callable[[str], CheckResult], after: Callable[[], None]) -> None:
    """Run a checked change (a new, duplicated or deleted SOP) the way every save runs: when conversation tests
    would break, keep it held with the same three ways on as an edit (see :func:`held_action`)."""
    result = run("check")
    if result.saved:
        st.session_state.pop(HELD_ACTION, None)
        widgets.saved(result, what)
        after()
    elif result.broken:
        st.session_state[HELD_ACTION] = {"what": what, "run": run, "after": after, "result": result}
        st.rerun()
    else:
        widgets.saved(result, what)


def held_action() -> None:
    """A held create, duplicate or delete: what breaks, then Save anyway, Accept the new replies, or Keep
    editing (drop it), as for every save."""
    held = st.session_state.get(HELD_ACTION)
    if not held:
        return
    with st.container(border=True, key="held_action"):
        widgets.saved(held["result"], held["what"])
        done = None
        if st.button("Save anyway", icon=":material/warning:", key="held_action_anyway", width="stretch"):
            done = held["run"]("skip")
        if st.button("Accept the new replies", icon=":material/published_with_changes:", key="held_action_accept",
                     width="stretch", help="Save, and update the expectations of the tests that break to what the "
                                           "agent does now. One undo takes both back."):
            done = held["run"]("accept")
        if st.button("Keep editing", key="held_action_keep", width="stretch",
                     help="Leave it unsaved: pick another name, or change what breaks the tests first."):
            st.session_state.pop(HELD_ACTION, None)
            st.rerun()
        if done is not None:
            st.session_state.pop(HELD_ACTION, None)
            widgets.saved(done, held["what"])
            if done.saved:
                held["after"]()


st.title("SOP studio")
st.caption("Write SOPs as indented text in the paper's style or as JSON node graphs. Lint runs as you edit; "
           "saving is refused while there are errors, and every save can be undone.")
tab_sops, tab_gar, tab_replay, tab_sim, tab_history = st.tabs(["SOPs", "Global Action Repository",
                                                               "Replay a conversation", "Simulated customers",
                                                               "History and undo"])

with tab_sops:
    files = pg.studio.sop_files()
    services.keep(VIEW, VIEW_KEPT, "Text")
    on_canvas = st.session_state.get(VIEW) == "Canvas"
    cols = st.columns([1.15, 4.85] if on_canvas else [1.15, 2.5, 2.35], gap="medium")  # the canvas takes the graph's
    col_list, col_edit = cols[0], cols[1]
    with col_list:
        names = [f.name for f in files]
        labels = {f.name: f.name + (" (new, not saved)" if not f.saved else "" if f.compiled else " (has errors)")
                  for f in files}
        unsaved = {f.name for f in files if not f.saved}
        kept = st.session_state.get(PICKED)
        choice = st.radio("SOP files", names, format_func=lambda n: labels[n], key=f"sop_choice_{gen}",
                          index=names.index(kept) if kept in names else 0) if names else None
        st.session_state[PICKED] = choice
        drafted = [n for n in names if f"sops/{n}" in set(pg.drafts.names()) and n not in unsaved]
        if drafted:  # beside the list, not in its labels: a changing label would clear the selection
            st.caption("Unsaved drafts: " + ", ".join(drafted))
        with st.popover("New SOP", icon=":material/add:", width="stretch"):
            new_name = st.text_input("File name", placeholder="refund_request.sop", key="new_sop_name")
            fmt = st.radio("Format", ["text", "json"], horizontal=True, key="new_sop_format")
            if st.button("Create", key="create_sop"):
                try:
                    stem = new_name.strip().rsplit(".", 1)[0] if new_name.strip() else ""
                    fname = f"{stem}.{'sop' if fmt == 'text' else 'json'}" if stem else ""
                    source = templates.new_sop(pg.workspace, stem, fmt)
                    st.session_state[PICKED] = pg.studio.start_sop(fname, source)  # a draft until first saved
                    refresh()
                    st.rerun()
                except UserInputError as exc:
                    st.error(str(exc))
        with st.popover("Import STAR flow", icon=":material/input:", width="stretch"):
            st.caption("A STAR-format task (flowchart JSON + API schema) becomes a JSON SOP, GAR rows, a mock "
                       "tool and an agent in this workspace.")
            star_dir = st.text_input("Task folder on the server", placeholder="…/star/tasks/bank_balance",
                                     key="star_dir")
            flow_up = st.file_uploader("…or upload the flowchart (<task>.json)", type=["json"], key="star_flow")
            api_up = st.file_uploader("…and its API schema (apis/<task>.json)", type=["json"], key="star_api")
            if st.button("Import", key="import_star", disabled=not (star_dir.strip() or flow_up)):
                try:
                    if flow_up is not None:
                        imported, result = pg.studio.import_star_upload(
                            (flow_up.name, flow_up.getvalue()), (api_up.name, api_up.getvalue()) if api_up else None)
                    else:
                        imported, result = pg.studio.import_star(star_dir.strip())
                    widgets.saved(result, f"STAR task {imported.task} ({imported.sop_id})")
                    for note in imported.notes:
                        st.caption(note)
                    if result.saved:
                        refresh()
                except UserInputError as exc:
                    st.error(str(exc))
        if choice and choice not in unsaved:
            with st.popover("Duplicate", icon=":material/content_copy:", width="stretch"):
                suffix = choice.rsplit(".", 1)[1]
                copy_name = st.text_input("New file name", value=f"{choice.rsplit('.', 1)[0]}_copy.{suffix}",
                                          key=f"dup_name_{choice}")
                if st.button("Duplicate", key="duplicate_sop"):
                    try:
                        checked_action(f"sops/{copy_name}", lambda mode, c=choice, n=copy_name: pg.studio.duplicate_sop(
                            c, n, tests=mode), lambda: (refresh(), st.rerun()))
                    except UserInputError as exc:
                        st.error(str(exc))
            with st.popover("Delete", icon=":material/delete:", width="stretch"):
                st.write(f"Delete `sops/{choice}`? It is backed up and can be undone.")
                if st.button("Delete", type="primary", key="delete_sop"):
                    checked_action(f"deletion of sops/{choice}",
                                   lambda mode, c=choice: pg.studio.delete_sop(c, tests=mode),
                                   lambda: (refresh(), st.rerun()))
        held_action()

    with col_edit:
        if not choice:
            st.info("No SOPs yet: create one with **New SOP**.")
        else:
            rel = f"sops/{choice}"
            source = pg.studio.read_sop(choice)
            draft = pg.studio.draft(rel)
            shown = source if draft is None else draft
            view = st.segmented_control("View", ["Text", "Canvas"], key=VIEW, label_visibility="collapsed",
                                        required=True)
            st.session_state[VIEW_KEPT] = view
            if view == "Canvas":  # the same draft as the text editor, edited step by step
                edited = shown
                check = pg.studio.check_sop(choice, edited)
                canvas_ui.editor(pg, rel, edited, check, refresh)
            else:
                services.keep(PLAIN, PLAIN_KEPT, False)
                plain = st.toggle("Plain text editor", key=PLAIN, help="Without highlighting and lint markers.")
                st.session_state[PLAIN_KEPT] = plain
                if plain:
                    edited = st.text_area(rel, value=shown, height=440, key=f"src_{gen}_{choice}",
                                          help="Press Ctrl+Enter (or click outside) to lint.")
                else:
                    st.caption(f"`{rel}` · Ctrl+Enter (or **Apply**) lints; errors and warnings are marked in the "
                               "margin at their line (hover for the message).")
                    marks = st.session_state.get(f"marks_{rel}", [])
                    edited = st_ace(value=shown, language="json" if choice.endswith(".json") else "yaml",
                                    theme="chrome", min_lines=24, max_lines=40, wrap=True, font_size=13,
                                    annotations=marks, key=f"ace_{gen}_{choice}")
                pg.studio.keep_draft(rel, edited)  # kept until saved or discarded: tabs, pages and reloads lose nothing
                check = pg.studio.check_sop(choice, edited)
                marks = widgets.annotations([p for p in check.problems if p.file == rel])
                if not plain and marks != st.session_state.get(f"marks_{rel}", []):
                    st.session_state[f"marks_{rel}"] = marks  # the editor shows them from the next run
                    st.rerun()
            dirty = edited != source
            grant = None  # store.yaml changed in the same save, once the author confirms it
            if check.grant is not None and st.checkbox(f"{check.grant.sentence()} when saving", key=f"grant_{rel}",
                                                       help="Lint refuses a procedure whose agent may not call its "
                                                            "tools; this lets it, in the same checked save."):
                grant = check.grant
                check = pg.studio.check_sop(choice, edited, grant)
            c1, c2 = st.columns([1, 2])
            if c1.button("Save", type="primary", disabled=not (dirty or grant), key="save_sop",
                         icon=":material/save:"):
                result = pg.studio.save_sop(choice, edited, grant=grant)
                widgets.saved(result, rel)
                if result.broken:
                    st.session_state[HELD] = {"rel": rel, "text": edited}
                if result.saved:
                    check, dirty = pg.studio.check_sop(choice, edited), False
                    refresh()
            if held_save(rel, edited, lambda mode: pg.studio.save_sop(choice, edited, tests=mode, grant=grant), rel):
                check, dirty = pg.studio.check_sop(choice, edited), False
            if dirty:
                c2.caption("New SOP: not in the chat until it is first saved." if choice in unsaved else
                           "Unsaved draft: kept if you leave this page, not used by the chat until saved.")
                with c2.popover("Discard draft", icon=":material/delete_sweep:"):
                    st.write(f"Throw away the unsaved changes to `{rel}` and go back to the saved version?")
                    if st.button("Discard", type="primary", key="discard_sop"):
                        pg.studio.discard_draft(rel)
                        refresh()
                        st.rerun()
            else:
                c2.caption("Saved; the next chat turn uses this version.")
            widgets.problems(check.problems, ok_text="Compiles: no errors.")
            for step in dict.fromkeys(p.unknown_action for p in check.problems if p.unknown_action):
                quick_fix(step)
    with cols[-1]:
        if on_canvas:
            pass
        elif choice and check.sop is not None:
            st.markdown(f"**{check.sop.title}** · id `{check.sop.id}` · priority {check.sop.priority} · "
                        f"{len(check.sop.nodes)} nodes · {len(check.sop.triggers)} triggers")
            st.graphviz_chart(check.sop.to_dot(), width="stretch")
        elif choice:
            st.caption("The graph appears when the SOP compiles.")

with tab_gar:
    st.caption("Each SOP step of a text SOP is matched to an action here (exact name, else similarity ≥ 0.80). "
               "`action_type` is api_call, ask_user_input, message_to_user or external_knowledge (join with |); "
               "`params` are slot names joined with |, `?` marks an optional one.")
    widgets.flash()  # a GAR save redraws the page (the canvas's pickers read the new rows): what it did
    editor_key = f"gar_{gen}"
    if editor_key not in st.session_state or "gar_base" not in st.session_state:  # drawn afresh: saved or draft
        st.session_state["gar_base"] = pg.studio.gar_rows(draft=True)
    edited_gar = st.data_editor(pd.DataFrame(st.session_state["gar_base"], columns=list(GAR_COLUMNS)),
                                num_rows="dynamic", width="stretch", key=editor_key, height=460)
    gar_rows = edited_gar.to_dict("records")
    pg.studio.keep_gar_draft(gar_rows)
    gar_dirty = pg.studio.draft("gar.csv") is not None
    g1, g2 = st.columns([1, 2])
    if g1.button("Save GAR", type="primary", icon=":material/save:", key="save_gar", disabled=not gar_dirty):
        result = pg.studio.save_gar(gar_rows)
        if result.broken:
            st.session_state[HELD] = {"rel": "gar.csv", "text": pg.studio.gar_text(gar_rows)}
        if result.saved:
            refresh()
        widgets.saved(result, "gar.csv", redraw=True)  # saved: the page again, the SOPs tab's pickers included
    if held_save("gar.csv", pg.studio.gar_text(gar_rows), lambda mode: pg.studio.save_gar(gar_rows, tests=mode),
                 "gar.csv"):
        gar_dirty = False
    if gar_dirty:
        g2.caption("Unsaved draft: kept if you leave this page, not used by the chat until saved.")
        with g2.popover("Discard draft", icon=":material/delete_sweep:"):
            st.write("Throw away the unsaved changes to `gar.csv` and go back to the saved version?")
            if st.button("Discard", type="primary", key="discard_gar"):
                pg.studio.discard_draft("gar.csv")
                refresh()
                st.rerun()
    else:
        g2.caption("Saved; the next chat turn uses this version.")
    widgets.problems([p for p in pg.problems if p.file == "gar.csv"])

with tab_replay:
    drafts = pg.drafts.names()
    st.caption("Send a recorded chat (or a conversation test) again to the SOPs with your unsaved drafts, beside the "
               "workspace as saved, and see which replies and decisions change before you save. Tool results come "
               "from the recording; a tool that changes things is never run again for a recorded chat.")
    st.markdown("**Drafts compared:** " + (", ".join(f"`{d}`" for d in drafts) if drafts else
                "none: a chat is compared with what it did when it was recorded"))
    source = st.radio("Recording", ["A chat", "A conversation test"], horizontal=True, key="replay_source")
    chats, tests = pg.chat.sessions(), pg.runs.conversation_files()
    picked_chat, picked_test = "", None
    if source == "A chat":
        by_label = {f"{widgets.session_label(c)} · {c['session_id']}": c["session_id"] for c in chats}
        if by_label:
            shown, mine = list(by_label), services.session_id()
            here = next((i for i, label in enumerate(shown) if by_label[label] == mine), 0)
            picked_chat = by_label.get(st.selectbox("Chat", shown, index=here, key="replay_chat") or "", "")
        else:
            st.info("No chats yet: talk to the agent on the Chat page first.")
    else:
        rel_tests = {str(t.relative_to(pg.root)): t for t in tests}
        name = st.selectbox("Conversation test", list(rel_tests), key="replay_test") if rel_tests else None
        picked_test = rel_tests.get(name) if name else None
        if not rel_tests:
            st.info("No conversation tests in this workspace yet.")
    if st.button("Replay", type="primary", icon=":material/replay:", key="replay_run",
                 disabled=not (picked_chat or picked_test)):
        bar = st.progress(0.0, text="replaying")
        try:
            st.session_state["replay_report"] = pg.runs.replay(
                session_id=picked_chat, test=picked_test, progress=lambda f, s: bar.progress(f, text=s)).to_dict()
        except UserInputError as exc:
            st.error(str(exc))
    if st.session_state.get("replay_report"):
        widgets.replay_report(st.session_state["replay_report"])

with tab_sim:
    simulate_ui.tab(pg)

with tab_history:
    saved_changes = pg.history.backups()
    if not saved_changes:
        st.info("Nothing to undo yet.")
    else:
        st.markdown(f"Last change: **{saved_changes[0].label}** ({saved_changes[0].stamp})")
        if st.button("Undo last change", icon=":material/undo:", key="undo"):
            done = pg.history.undo()
            if done is not None:
                st.toast(f"Undone: {done.label}")
            refresh()
            st.rerun()
        st.caption("Each saved change, newest first, with what it changed.")
        for i, change in enumerate(saved_changes[:20]):
            d, t = change.stamp[:8], change.stamp[9:15]
            when = f"{d[:4]}-{d[4:6]}-{d[6:]} {t[:2]}:{t[2:4]}:{t[4:]} UTC"
            with st.expander(f"{change.label} · {when}", expanded=i == 0):
                for diff in pg.history.change_diff(change).values():
                    st.code(diff, language="diff")
    st.markdown("**Workspace lint**")
    widgets.problems(pg.problems, ok_text="The workspace lints clean.")
