"""Test runs: the workspace's conversation test files, run from the browser."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ui import services, widgets

pg = services.current()
st.title("Test runs")
files = pg.conversation_files()
if not files:
    st.info(f"No conversation tests in this workspace yet: add YAML files under `{pg.root.name}/conversations/` "
            "(format in the README).")
    st.stop()

rel = {str(p.relative_to(pg.root)): p for p in files}
picked = st.multiselect("Conversation files", list(rel), default=list(rel), key="test_files")
if st.button("Run tests", type="primary", icon=":material/play_arrow:", disabled=not picked, key="run_tests"):
    bar = st.progress(0.0, text="starting")
    results = pg.run_tests([rel[r] for r in picked], progress=lambda f, s: bar.progress(f, text=s))
    st.session_state["test_results"] = [(r, str(rel_path)) for r, rel_path in zip(results, picked, strict=True)]

results = st.session_state.get("test_results") or []
if results:
    passed = sum(1 for r, _ in results if r.passed)
    (st.success if passed == len(results) else st.error)(f"{passed} of {len(results)} files passed")
    st.dataframe(pd.DataFrame([{
        "file": name, "name": r.name, "passed": r.passed, "turns": len(r.turns),
        "failed turns": sum(1 for t in r.turns if not t.passed), "error": r.error,
    } for r, name in results]), hide_index=True, width="stretch",
        column_config={"passed": st.column_config.CheckboxColumn("passed")})
    for r, name in results:
        if r.passed:
            continue
        st.subheader(f":red[:material/cancel:] {name}")
        if r.error:
            st.error(r.error)
        for i, turn in enumerate(r.turns, start=1):
            if turn.passed:
                continue
            with st.expander(f"Turn {i} (session {turn.session}): {turn.user}", expanded=True):
                for f in turn.failures:
                    st.error(f)
                st.markdown(f"**Reply:** {turn.reply}")
                if turn.trace:
                    widgets.trace(turn.trace)
