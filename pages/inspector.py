"""Inspector: any session's state, goal/stack timeline, execution memory, tool calls, memory, export."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.shared.errors import UserInputError
from ui import services, widgets

pg = services.current()
st.title("Inspector")

sessions = pg.chat.sessions()
if not sessions:
    st.info("No sessions yet: chat with the agent first.")
    st.stop()

ids = [s["session_id"] for s in sessions]
meta = {s["session_id"]: s for s in sessions}
mine = services.session_id()
sid = st.selectbox("Session", ids, index=ids.index(mine) if mine in ids else 0,
                   format_func=lambda i: widgets.session_label(meta[i]),
                   help="By first message and time of the last turn; the session id is in the caption below.")
st.caption(f"Session `{sid}`" + (" (this chat)" if sid == mine else ""))
with st.popover("Delete session", icon=":material/delete:"):
    st.write(f"Delete session `{sid}` and its traces? This cannot be undone.")
    if st.button("Delete", type="primary", key="delete_session"):
        pg.chat.delete_session(sid)
        st.rerun()
state = pg.chat.state(sid)
if state is None:
    st.warning("That session no longer exists.")
    st.stop()

if state.handoff_turn is not None:  # the team takes it from here: say so above everything else
    how = next((tr.get("handoff") or {} for tr in pg.chat.traces(sid) if tr.get("turn") == state.handoff_turn), {})
    by = "an SOP step handed it off" if how.get("by") == "sop" else "the customer asked for a person"
    sent = f"; sent through `{how['tool']}` ({how['sent']})" if how.get("tool") else ""
    st.warning(f"Handed off to the team at turn {state.handoff_turn}: {by}{sent}.", icon=":material/support_agent:")
c1, c2, c3 = st.columns([1, 1, 1])
c1.metric("Turns", state.turn)
c2.metric("Version", state.version)
c3.metric("Goals", len(state.goals))
active = state.active_goal
st.markdown(f"**Active goal:** `{active.type}` ({active.status.value})" if active else "**Active goal:** none"
            + (" · **stack:** " + " → ".join(f"`{state.goals[g].type}`" for g in state.goal_stack)
               if state.goal_stack else ""))

wanted = st.query_params.get(services.URL_TURN)
if wanted and st.query_params.get(services.URL_SESSION) == sid:
    found = next((tr for tr in pg.chat.traces(sid) if str(tr.get("turn")) == wanted), None)
    if found is None:
        st.warning(f"Turn {wanted} is not in this session.")
    else:
        st.subheader(f"Turn {wanted}")
        st.markdown(f"**Customer:** {widgets.user_text(found.get('user', ''))}")
        st.markdown(f"**Reply:** {found.get('reply', '')}")
        widgets.trace(found)
        st.divider()

tabs = st.tabs(["Timeline", "Flow", "Execution memory", "Tool calls", "Preference memory", "SessionState JSON",
               "Export"])
with tabs[0]:
    st.caption("Goal and stack changes turn by turn (stack shown bottom → top after the turn).")
    st.dataframe(pd.DataFrame(pg.inspector.timeline(sid)), hide_index=True, width="stretch")
with tabs[1]:
    flow = pg.chat.flow(sid)
    if flow is None:
        st.caption("No SOP has run in this session.")
    else:
        st.caption(f"**{flow['title']}**: the path this session took in blue"
                   + (", its current step outlined in red." if flow["current"] else "."))
        st.graphviz_chart(flow["dot"], width="stretch")
with tabs[2]:
    rows = pg.inspector.execution_memory(state)
    if rows:
        frame = pd.DataFrame(rows)
        for goal, part in frame.groupby("goal", sort=False):
            st.markdown(f"**{goal}** · {state.goals[str(goal).split()[0]].status.value}")
            st.dataframe(part.drop(columns="goal"), hide_index=True, width="stretch")
    else:
        st.caption("No steps recorded yet.")
with tabs[3]:
    calls = pg.inspector.tool_calls(sid)
    if calls:
        st.dataframe(pd.DataFrame(calls), hide_index=True, width="stretch")
    else:
        st.caption("No tool calls.")
with tabs[4]:
    customer = state.customer_id
    if not customer:
        st.caption("This session has no customer id, so nothing is remembered across sessions.")
    else:
        st.caption(f"Preferences are kept in {pg.memory.label}.")
        prefs, warning = pg.preferences.remembered(customer)
        if warning:
            st.warning(warning, icon=":material/cloud_off:")
        st.markdown(f"Customer **{customer}**: {prefs.as_text() or 'nothing remembered yet'}")
        try:
            entries = pg.preferences.preference_entries(customer)
        except UserInputError as exc:
            st.error(str(exc))
            entries = []
        for entry in entries:
            a, b, c, d = st.columns([2, 3, 4, 2])
            a.markdown(f"`{entry.field}`")
            new_value = b.text_input("value", entry.value, key=f"pref_{entry.id}", label_visibility="collapsed")
            c.caption(f"from session {entry.session_id or '—'}, turn {entry.turn}: “{entry.message}”")
            if new_value != entry.value:
                try:
                    pg.preferences.edit_preference(customer, entry.id, new_value)
                    st.rerun()
                except UserInputError as exc:
                    st.error(str(exc))
            if d.button("Forget", key=f"forget_{entry.id}", icon=":material/delete:"):
                pg.preferences.forget_preference(customer, entry.id)
                st.rerun()
with tabs[5]:
    st.json(state.model_dump(mode="json"), expanded=2)
with tabs[6]:
    st.download_button("Download session JSON", pg.inspector.export_session(sid), file_name=f"session-{sid}.json",
                       mime="application/json", icon=":material/download:")
    st.caption("State, every turn's trace, SOP versions and the customer's memory: attach it to a bug report.")
