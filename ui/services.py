"""Services built once per process (``st.cache_resource``) and the per-browser-session choices."""

from __future__ import annotations

import os
import re
from pathlib import Path

import streamlit as st

from core.playground import Playground, known_workspaces
from core.playground.workspaces import REPO_ROOT
from core.retrieval import MiniLMEmbedder, shared_model

WORKSPACE_KEY = "workspace"
SESSION_KEY = "session_id"
CUSTOMER_KEY = "customer_id"
PICKER_KEY = "workspace_picker"
PICKER_SYNC = "workspace_picker_sync"  # set when the workspace changed elsewhere: the picker shows it next run
URL_WORKSPACE, URL_SESSION = "ws", "session"  # ?ws=examples/outdoor&session=...: a reload or a link reopens them
URL_TURN = "turn"  # the Inspector opens on this turn of the session (a link under each chat reply)
URL_READ = "url_read"
URL_PROBLEM = "url_problem"
SESSION_ID = re.compile(r"[A-Za-z0-9._:-]{1,80}")


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
    """The workspace this browser session works on: the one the URL names on its first run, else the
    default one."""
    _read_url()
    if WORKSPACE_KEY not in st.session_state:
        st.session_state[WORKSPACE_KEY] = str(default_workspace())
    return Path(st.session_state[WORKSPACE_KEY])


def url_name(path: Path) -> str:
    """How the URL names a workspace: its folder relative to the project, else its full path."""
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path.resolve())


def _read_url() -> None:
    """Once per browser session: open the workspace and chat session the URL names. A workspace that
    cannot be opened here (unknown, or not a workspace) is named in a warning; the default opens."""
    if st.session_state.get(URL_READ):
        return
    st.session_state[URL_READ] = True
    wanted = st.query_params.get(URL_WORKSPACE)
    if wanted:
        known = {url_name(path): path for _, path in workspace_choices()}
        if wanted in known:
            st.session_state[WORKSPACE_KEY] = str(known[wanted])
        else:
            st.session_state[URL_PROBLEM] = f"The link names a workspace that is not here: {wanted}"
    session = st.query_params.get(URL_SESSION)
    if session and SESSION_ID.fullmatch(session):
        st.session_state[SESSION_KEY] = session


def write_url() -> None:
    """Put the open workspace and chat session in the address bar (a reload or a shared link reopens them)."""
    values = {URL_WORKSPACE: url_name(current_path()), URL_SESSION: session_id()}
    if any(st.query_params.get(k) != v for k, v in values.items()):
        st.query_params.update(values)


def current() -> Playground:
    """The Playground of this browser session's workspace."""
    return playground_for(str(current_path()))


def switch_to(path: Path) -> None:
    """Open another workspace in this browser session (a fresh chat session starts)."""
    st.session_state[WORKSPACE_KEY] = str(path.resolve())
    st.session_state.pop(SESSION_KEY, None)
    st.session_state[PICKER_SYNC] = True  # the picker shows the new workspace, not the last one picked


def session_id() -> str:
    """The chat session of this browser session (created on first use)."""
    if SESSION_KEY not in st.session_state:
        st.session_state[SESSION_KEY] = Playground.new_session_id()
    return str(st.session_state[SESSION_KEY])


def workspace_choices() -> list[tuple[str, Path]]:
    """(label, path) of every workspace that can be opened, the current and default ones included."""
    extra = [default_workspace()]
    if WORKSPACE_KEY in st.session_state:
        extra.append(Path(st.session_state[WORKSPACE_KEY]))
    infos = known_workspaces(extra=extra)
    return [(i.label, i.path) for i in infos]


def keep(widget_key: str, store_key: str, default: object) -> None:
    """Seed a widget from a value kept across pages (Streamlit forgets widgets a page does not draw)."""
    if widget_key not in st.session_state:
        st.session_state[widget_key] = st.session_state.get(store_key, default)
