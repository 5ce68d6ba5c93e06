"""The chat page's goal panel: the request in progress, those waiting and finished, the flow so far as a graph,
the engine's view (goal, slots, stack) and what is remembered about the customer."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.playground.service import Playground
from ui import widgets


def headline(pg: Playground, sid: str) -> str:
    """The panel's one-line summary: the request in progress, else the last finished one, else none yet."""
    story = pg.chat.goal_story(pg.chat.state(sid))
    if story["now"]:
        return str(story["now"])
    if story["finished"]:
        return f"Finished: {story['finished'][0]['request']}"
    return "No request yet"


def panel(pg: Playground, sid: str, customer: str, suffix: str = "") -> None:
    """The goal panel's content (``suffix`` tells apart the keys of a second copy of it on the page)."""
    state = pg.chat.state(sid)
    engine, story = pg.chat.goal_panel(state), pg.chat.goal_story(state)
    if story["now"]:
        st.markdown(f"**{story['now']}**")
    if story["handoff"]:
        st.warning(f"The customer asked for a person at turn {story['handoff']}: the team takes it from here.",
                   icon=":material/support_agent:")
    if story["waiting"]:
        st.caption("Waiting their turn: " + "; ".join(story["waiting"]))
    if story["finished"]:
        st.markdown("**Finished:** " + "; ".join(f"{f['request']}: {f['outcome']}" for f in story["finished"][:5]))
    if not engine["active_goal"] and not story["finished"]:
        st.caption("No request yet.")
    flow = pg.chat.flow(sid)
    if flow is not None:
        with st.container(key=f"flow_graph{suffix}"):
            st.caption(f"**{flow['title']}**: the path so far in blue"
                       + (", the current step outlined in red" if flow["current"] else ""))
            st.graphviz_chart(flow["dot"], width="stretch")
    with st.expander("Engine view: goal, slots, stack", expanded=False):
        if engine["active_goal"]:
            st.markdown(f"**Active goal** `{engine['active_goal']}` · **status** `{engine['status']}`"
                        + (f" · **step** `{engine['step']}`" if engine.get("step") else ""))
            st.markdown("**Slots**")
            if engine["slots"]:
                st.dataframe(pd.DataFrame([{"slot": k, "value": widgets.brief(v, 80)}
                                           for k, v in engine["slots"].items()]), hide_index=True, width="stretch")
            else:
                st.caption("none yet")
            st.markdown("**Missing:** " + (", ".join(f"`{m}`" for m in engine["missing"]) or "nothing"))
            if engine["next_question"]:
                st.markdown(f"**Next question:** {engine['next_question']}")
        else:
            st.caption("No active goal.")
        st.markdown("**Goal stack** (bottom → top)")
        if engine["stack"]:
            st.markdown(" → ".join(f"`{g}`" for g in engine["stack"]))
        else:
            st.caption("empty")
    if customer:
        prefs, warning = pg.preferences.remembered(customer)
        if warning:
            st.warning(warning, icon=":material/cloud_off:")
        if not prefs.is_empty():
            st.markdown("**Remembered about this customer**")
            st.caption(prefs.as_text())
