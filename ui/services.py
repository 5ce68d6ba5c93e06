"""Services built once per process (``st.cache_resource``) and the per-browser-session choices."""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from core.playground import Playground, known_workspaces
from core.playground.workspaces import REPO_ROOT
from core.retrieval import MiniLMEmbedder, shared_model

WORKSPACE_KEY = "workspace"
SESSION_KEY = "session_id"
CUSTOMER_KEY = "customer_id"
PICKER_KEY = "workspace_picker"


@st.cache_resource(show_spinner="Loading the embedding model…")
def embedding_model() -> MiniLMEmbedder:
    """The MiniLM model, loaded once per process."""
    return shared_model()


@st.cache_resource(show_spinner="Loading the workspace (SOPs, inventory, knowledge-base index)…")
def playground_for(path: str) -> Playground:
    """One Playground per workspace folder, shared by every page and browser session."""
    embedding_model()
    return Playground(path)


def default_workspace() -> Path:
    """``SOP_WORKSPACE`` when set, else the demo workspace at the project root."""
    return Path(os.environ.get("SOP_WORKSPACE") or REPO_ROOT).resolve()


def current_path() -> Path:
    """The workspace this browser session works on."""
    if WORKSPACE_KEY not in st.session_state:
        st.session_state[WORKSPACE_KEY] = str(default_workspace())
    return Path(st.session_state[WORKSPACE_KEY])


def current() -> Playground:
    """The Playground of this browser session's workspace."""
    return playground_for(str(current_path()))


def switch_to(path: Path) -> None:
    """Open another workspace in this browser session (a fresh chat session starts)."""
    st.session_state[WORKSPACE_KEY] = str(path.resolve())
    st.session_state.pop(SESSION_KEY, None)
    st.session_state.pop(PICKER_KEY, None)  # the picker shows the new workspace, not the last one picked


def session_id() -> str:
    """The chat session of this browser session (created on first use)."""
    if SESSION_KEY not in st.session_state:
        st.session_state[SESSION_KEY] = Playground.new_session_id()
    return str(st.session_state[SESSION_KEY])


def workspace_choices() -> list[tuple[str, Path]]:
    """(label, path) of every workspace that can be opened, the current and default ones included."""
    infos = known_workspaces(extra=[default_workspace(), current_path()])
    return [(i.label, i.path) for i in infos]


def keep(widget_key: str, store_key: str, default: object) -> None:
    """Seed a widget from a value kept across pages (Streamlit forgets widgets a page does not draw)."""
    if widget_key not in st.session_state:
        st.session_state[widget_key] = st.session_state.get(store_key, default)
