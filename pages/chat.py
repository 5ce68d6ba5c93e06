"""Chat with the agent; beside it the active goal and the stack; under each reply that turn's trace."""

from __future__ import annotations

import streamlit as st

from core.engine.build import BRAINS
from core.retrieval.embedding import SharedModel
from core.shared.errors import UserInputError
from ui import goal_panel, services, widgets

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
        ".st-key-goal_fold{display:none}"
        # at phone width the chat comes first: the goal panel and the graph fold into one line under the last
        # reply, so the chat input and that reply are on screen without scrolling
        "@media (max-width:640px){div[data-testid=stColumn]:has(.st-key-goal_panel){display:none}"
        ".st-key-goal_fold{display:block}}"
        # a link's label wraps instead of being cut ("Why this reply? Open turn 3 in the Inspector")
        "[data-testid=stPageLink] p,[data-testid=stPageLink] span{white-space:normal;overflow:visible;"
        "text-overflow:clip}</style>")
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
    with st.container(key="goal_fold"), st.expander(f"Goal: {goal_panel.headline(pg, sid)}", icon=":material/flag:"):
        goal_panel.panel(pg, sid, customer, "_phone")  # shown at phone width only (styles above)

with right, st.container(key="goal_panel"):  # stays in view while the chat scrolls (styles above)
    st.subheader("Goal")
    goal_panel.panel(pg, sid, customer)
