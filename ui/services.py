"""Services built once per process (``st.cache_resource``) and the per-browser-session choices."""

from __future__ import annotations

import hashlib
import os
import re
import threading
from pathlib import Path

import streamlit as st

from core.playground import Playground, known_workspaces
from core.playground.chat import Chat
from core.playground.workspaces import REPO_ROOT
from core.retrieval.embedding import SharedModel

WORKSPACE_KEY = "workspace"
SESSION_KEY = "session_id"
CUSTOMER_KEY = "customer_id"
PICKER_KEY = "workspace_picker"  # the sidebar's workspace picker: one widget per open workspace (picker_key)
URL_WORKSPACE, URL_SESSION = "ws", "session"  # ?ws=examples/outdoor&session=...: a reload or a link reopens them
URL_TURN = "turn"  # the Inspector opens on this turn of the session (a link under each chat reply)
URL_READ = "url_read"
URL_PROBLEM = "url_problem"
SESSION_ID = re.compile(r"[A-Za-z0-9._:-]{1,80}")


class Loader:
    """Loads a workspace's Playground in a background thread, so the page can show its progress meanwhile."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fraction, self.stage = 0.0, "starting"
        self.result: Playground | None = None
        self.error = ""
        self.done = threading.Event()
        threading.Thread(target=self._load, name=f"load {path}", daemon=True).start()

    def _progress(self, fraction: float, stage: str) -> None:
        self.fraction, self.stage = 0.05 + 0.95 * max(0.0, min(1.0, fraction)), stage

    def _load(self) -> None:
        try:
            SharedModel.warm()  # the model loads beside the workspace; only texts not in its cache need it
            self.fraction, self.stage = 0.05, "reading the workspace"
            self.result = Playground(self.path, progress=self._progress)
        except Exception as exc:  # noqa: BLE001 - shown on the page instead of a blank screen
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.done.set()


@st.cache_resource(show_spinner=False)
def loader_for(path: str) -> Loader:
    """One loader, hence one Playground, per workspace folder, shared by every page and browser session."""
    return Loader(path)


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
    """The Playground of this browser session's workspace; while it loads, the page shows a progress bar
    and checks again shortly (nothing else of the page runs until it is ready)."""
    loader = loader_for(str(current_path()))
    if loader.result is not None:
        return loader.result
    st.title("SOP Agent Playground")
    if loader.error:
        st.error(f"The workspace {current_path()} could not be loaded: {loader.error}", icon=":material/error:")
        st.stop()
    st.progress(loader.fraction, text=f"Getting ready: {loader.stage}…")
    st.caption("The embedding model and the workspace's indexes load once per process; this takes a few "
               "seconds the first time.")
    loader.done.wait(1.0)  # back as soon as it is ready, else in a second with the next stage
    st.rerun()


def workspace_tag(path: Path) -> str:
    """A short tag of a workspace folder, for the keys of widgets that show its files: a value the browser still
    holds for a widget of another workspace is never taken for one of this workspace."""
    return hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10]


def picker_key(path: Path) -> str:
    """The sidebar picker's key while ``path`` is open. A picker per workspace starts on the workspace open (its
    index), so a value the browser still holds for another picker (a click made during a rerun, a picker drawn
    afresh) never switches the workspace back."""
    return f"{PICKER_KEY}_{workspace_tag(path)}"


# what a browser session keeps when it opens another workspace: everything else (the SOP picked, drafts shown,
# a held save, test and replay results, editors' tables) belongs to the workspace it was made in
KEPT_ACROSS_WORKSPACES = {URL_READ, CUSTOMER_KEY, "customer_widget", "llm_model", "llm_base_url", "llm_key"}


def switch_to(path: Path) -> None:
    """Open another workspace in this browser session: a fresh chat session starts, and what the pages held
    about the last workspace is forgotten (a held save or a table of its rows must never be written here)."""
    for key in list(st.session_state):
        if key not in KEPT_ACROSS_WORKSPACES and not str(key).endswith("_kept"):
            del st.session_state[key]
    st.session_state[WORKSPACE_KEY] = str(path.resolve())


def session_id() -> str:
    """The chat session of this browser session (created on first use)."""
    if SESSION_KEY not in st.session_state:
        st.session_state[SESSION_KEY] = Chat.new_session_id()
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
