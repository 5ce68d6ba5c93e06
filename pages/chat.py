"""Chat with the agent; beside it the active goal and the stack; under each reply that turn's trace."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.engine.build import BRAINS
from core.retrieval.embedding import SharedModel
from core.shared.errors import UserInputError
from ui import services, widgets

pg = services.current()

with st.sidebar:
    st.divider()
    if st.button("New session", icon=":material/add_comment:", width="stretch"):
        st.session_state[services.SESSION_KEY] = pg.chat.new_session_id()
    with st.popover("Save chat as test", icon=":material/playlist_add_check:", width="stretch",
                    help="The messages of this chat become a conversation test of the workspace; what the agent "
                         "did at each turn becomes its expectations. SOP and GAR saves then check it."):
        test_name = st.text_input("Test name", key="chat_test_name", placeholder="e.g. mouse purchase on a budget")
        if st.button("Save as test", type="primary", key="save_chat_test"):
            widgets.saved_test(lambda: pg.runs.save_chat_as_test(services.session_id(), test_name))
    services.keep("customer_widget", services.CUSTOMER_KEY, "")
    customer = st.text_input("Customer id", key="customer_widget", placeholder="e.g. cust-1",
                             help="Preferences are remembered per customer across sessions.")
    st.session_state[services.CUSTOMER_KEY] = customer
    with st.form("brain_settings", border=False):
        brain = st.selectbox("Brain", BRAINS, index=list(BRAINS).index(pg.brain_in_use), key="brain",
                             help="rule: offline. hybrid: rules first, the model only when they are unsure. "
                                  "llm: the model reads every message. The setting applies to this workspace "
                                  "for everyone using this app.")
        with st.expander("LLM endpoint (OpenAI-compatible)"):
            model = st.text_input("Model", key="llm_model", placeholder="gpt-4o-mini · qwen2.5:7b · …")
            base_url = st.text_input("Base URL", key="llm_base_url", placeholder="http://localhost:11434/v1")
            api_key = st.text_input("API key", key="llm_key", type="password")
            st.caption("Blank fields use OPENAI_API_KEY, OPENAI_BASE_URL and SOP_LLM_MODEL.")
        if st.form_submit_button("Apply brain", icon=":material/psychology:", width="stretch"):
            try:
                pg.set_brain(brain, model, base_url, api_key)
                st.toast(f"Brain: {pg.brain_in_use}")
            except UserInputError as exc:
                st.error(str(exc), icon=":material/error:")

sid = services.session_id()
st.title("Chat")
st.caption(f"Session `{sid}` · workspace **{pg.name}** · brain **{pg.brain_in_use}**")
if not SharedModel.ready():
    st.caption(":material/hourglass_top: The embedding model is still loading in the background: the first "
               "reply may take a few seconds.")

prompt = st.chat_input("Message the agent", key="chat_input")
if prompt:
    try:
        pg.chat.send(sid, prompt, customer or None)
    except UserInputError as exc:
        st.error(str(exc), icon=":material/error:")

st.html("<style>div[data-testid=stColumn]:has(.st-key-goal_panel){position:sticky;top:3.75rem;"
        "align-self:flex-start;max-height:calc(100vh - 4.5rem);overflow-y:auto}"
        # at phone width the columns stack: the goal panel goes above the chat, so the newest reply is what
        # ends the page (where the chat scrolls after each message), not the flow graph
        "@media (max-width:640px){div[data-testid=stColumn]:has(.st-key-goal_panel){order:-1;position:static;"
        "max-height:none}}</style>")
left, right = st.columns([3, 2], gap="large")
with left:
    turns = pg.chat.traces(sid)
    if not turns:
        titles = [sop.title.lower() for sop in pg.workspace.sops if sop.title][:4]
        st.info("Say hello" + (", or ask me to " + "; ".join(titles) if titles else "") + ".",
                icon=":material/waving_hand:")
    for tr in turns:
        with st.chat_message("user"):
            st.markdown(widgets.user_text(tr.get("user", "")))
        with st.chat_message("assistant"):
            st.markdown(tr.get("reply", ""))
            with st.expander(f"Trace of turn {tr.get('turn')}"):
                widgets.trace(tr)
            st.page_link("pages/inspector.py", label=f"Why this reply? Open turn {tr.get('turn')} in the Inspector",
                         icon=":material/manage_search:", query_params={
                             services.URL_WORKSPACE: services.url_name(pg.root), services.URL_SESSION: sid,
                             services.URL_TURN: str(tr.get("turn"))})

with right, st.container(key="goal_panel"):  # stays in view while the chat scrolls (styles below)
    state = pg.chat.state(sid)
    panel, story = pg.chat.goal_panel(state), pg.chat.goal_story(state)
    st.subheader("Goal")
    if story["now"]:
        st.markdown(f"**{story['now']}**")
    if story["handoff"]:
        st.warning(f"The customer asked for a person at turn {story['handoff']}: the team takes it from here.",
                   icon=":material/support_agent:")
    if story["waiting"]:
        st.caption("Waiting their turn: " + "; ".join(story["waiting"]))
    if story["finished"]:
        st.markdown("**Finished:** " + "; ".join(f"{f['request']}: {f['outcome']}" for f in story["finished"][:5]))
    if not panel["active_goal"] and not story["finished"]:
        st.caption("No request yet.")
    flow = pg.chat.flow(sid)
    if flow is not None:
        with st.container(key="flow_graph"):
            st.caption(f"**{flow['title']}**: the path so far in blue"
                       + (", the current step outlined in red" if flow["current"] else ""))
            st.graphviz_chart(flow["dot"], width="stretch")
    with st.expander("Engine view: goal, slots, stack", expanded=False):
        if panel["active_goal"]:
            st.markdown(f"**Active goal** `{panel['active_goal']}` · **status** `{panel['status']}`"
                        + (f" · **step** `{panel['step']}`" if panel.get("step") else ""))
            st.markdown("**Slots**")
            if panel["slots"]:
                st.dataframe(pd.DataFrame([{"slot": k, "value": widgets.brief(v, 80)}
                                           for k, v in panel["slots"].items()]), hide_index=True, width="stretch")
            else:
                st.caption("none yet")
            st.markdown("**Missing:** " + (", ".join(f"`{m}`" for m in panel["missing"]) or "nothing"))
            if panel["next_question"]:
                st.markdown(f"**Next question:** {panel['next_question']}")
        else:
            st.caption("No active goal.")
        st.markdown("**Goal stack** (bottom → top)")
        if panel["stack"]:
            st.markdown(" → ".join(f"`{g}`" for g in panel["stack"]))
        else:
            st.caption("empty")
    if customer:
        prefs, warning = pg.preferences.remembered(customer)
        if warning:
            st.warning(warning, icon=":material/cloud_off:")
        if not prefs.is_empty():
            st.markdown("**Remembered about this customer**")
            st.caption(prefs.as_text())
