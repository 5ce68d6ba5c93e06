"""The canvas's trigger trial box: which of the workspace's SOPs a sentence would start, with the scores."""

from __future__ import annotations

import streamlit as st

from core.playground.service import Playground
from core.sop.canvas.settings import read_settings


def trial_box(pg: Playground, rel: str, source: str) -> None:
    """A sentence typed as a customer would, and which SOP it would start with every SOP's score (the draft's
    triggers as they are now)."""
    with st.expander("Try a sentence", icon=":material/science:",
                     expanded=bool(st.session_state.get(f"trial_{rel}"))), st.container(key="trigger_trial"):
        sentence = st.text_input("A customer's first message: which procedure would it start?",
                                 key=f"trial_{rel}", placeholder="the mug I ordered arrived cracked",
                                 help="Press Enter to try it.")
        if not sentence.strip():
            st.caption("Scored against every procedure's title and triggers as the chat scores an opening "
                       "message, this draft included.")
            return
        found = pg.studio.trial_triggers(sentence, rel, source)
        mine = read_settings(source, "json" if rel.endswith(".json") else "text").id
        best = found.starts
        if best is None:
            top = f" (best {found.scores[0].score:.2f})" if found.scores else ""
            st.warning(f"Starts no procedure: no score reaches {found.threshold:.2f}{top}.", icon=":material/block:")
        elif best.sop_id == mine:
            st.success(f"Starts this procedure, **{best.title}**, score {best.score:.2f}.",
                       icon=":material/check_circle:")
        else:
            st.info(f"Starts **{best.title}** (`{best.sop_id}`), score {best.score:.2f}, not this procedure.",
                    icon=":material/call_split:")
        st.markdown("\n".join(f"- {'**' if s.sop_id == mine else ''}{s.title}{'**' if s.sop_id == mine else ''} "
                              f"`{s.sop_id}` · {s.score:.2f}" for s in found.scores[:6]))
        st.caption(f"A procedure starts at {found.threshold:.2f} or more (store.yaml settings: intent_threshold).")
