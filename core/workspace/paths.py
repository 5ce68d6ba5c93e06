"""A workspace's paths: a user's text file read safely, the files a path really leads to (outside the
workspace or not), and staged views of a workspace whose links lead into it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.shared.errors import Location, WorkspaceError

MAX_FILE_BYTES = 20 * 1024 * 1024


def read_text_file(path: Path, *, limit: int = MAX_FILE_BYTES, name: str = "") -> str:
    """Read a user's text file, refusing binary, non-UTF-8 or oversized content with a clear error
    (located at ``name``, the file as the user knows it, when given; else the path)."""
    where = name or str(path)
    size = path.stat().st_size
    if size > limit:
        raise WorkspaceError(f"file is {size / 1e6:.1f} MB; the limit is {limit / 1e6:.0f} MB", Location(where))
    raw = path.read_bytes()
    if b"\x00" in raw[:8192]:
        raise WorkspaceError("binary file, expected UTF-8 text", Location(where))
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise WorkspaceError(f"not UTF-8 text (bad byte at offset {exc.start})", Location(where, line)) from exc


_VIEWS: dict[Path, Path] = {}  # a staged view of a workspace (resolved) -> the workspace it mirrors (resolved)
_VIEWS_LOCK = threading.Lock()


def _resolved(path: Path) -> Path:
    """``path`` with ``..``, symbolic links and a relative start resolved (a link loop or a NUL stays as written)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):
        return path.absolute()


@contextmanager
def workspace_view(view: Path, of: Path) -> Iterator[None]:
    """While it lasts, files of ``view`` (a staged copy of the workspace ``of``, made of symbolic links into
    it) may lead into ``of``: they are that workspace's own files."""
    key = _resolved(view)
    with _VIEWS_LOCK:
        _VIEWS[key] = _resolved(of)
    try:
        yield
    finally:
        with _VIEWS_LOCK:
            _VIEWS.pop(key, None)


def view_home(root: Path) -> Path:
    """The workspace ``root`` stands for: the one it mirrors when it is a staged view (:func:`workspace_view`),
    else itself (resolved). Its ``.state/`` holds what a view has none of (cached copies of remote sheets)."""
    key = _resolved(root)
    with _VIEWS_LOCK:
        return _VIEWS.get(key, key)


def view_origin(root: Path) -> Path:
    """The workspace a staged view (:func:`workspace_view`) mirrors, resolved; ``root`` itself when it is none."""
    key = _resolved(root)
    with _VIEWS_LOCK:
        return _VIEWS.get(key, key)


def leads_outside(root: Path, rel: str | Path) -> Path | None:
    """Where ``rel`` (a path a workspace names, relative to its folder ``root``) really leads when that is
    outside the workspace, once ``..``, absolute paths and symbolic links are followed; None when it stays
    inside."""
    home = _resolved(root)
    with _VIEWS_LOCK:
        homes = [home, *([_VIEWS[home]] if home in _VIEWS else [])]
    target = _resolved(home / rel)
    return None if any(target.is_relative_to(h) for h in homes) else target


STATE = ".state"


def state_folder(root: Path) -> Path:
    """The workspace's ``.state/`` folder (sessions, caches, drafts, versions, backups), checked: neither it nor
    anything in it may be a symbolic link leading outside the workspace, so nothing is ever written elsewhere.

    Raises:
        WorkspaceError: naming the link and where it leads.
    """
    folder = Path(root) / STATE
    if not folder.is_symlink() and not folder.exists():
        return folder
    for rel in [Path(STATE), *_links_in(folder)]:
        outside = leads_outside(root, rel)
        if outside is not None:
            raise WorkspaceError(f"{rel.as_posix()} is a link leading outside the workspace (to {outside}); nothing "
                                 "is written there: remove the link (the engine makes its own .state folder)",
                                 Location(rel.as_posix(), 0))
    return folder


def _links_in(folder: Path) -> list[Path]:
    """The symbolic links inside ``folder``, relative to its parent (the folder is walked without following
    any link)."""
    import os

    found: list[Path] = []
    if folder.is_symlink() or not folder.is_dir():
        return found
    for here, dirs, files in os.walk(folder, followlinks=False):
        for name in dirs + files:
            path = Path(here) / name
            if path.is_symlink():
                found.append(path.relative_to(folder.parent))
    return found


def workspace_path(root: Path, rel: str, key: str, *, file: str = "store.yaml", line: int = 0) -> Path:
    """The path ``rel`` names under ``key`` of ``file`` (``tools.orders.python`` of store.yaml), inside the
    workspace ``root``.

    Raises:
        WorkspaceError: when it leads outside the workspace (after ``..``, an absolute path or a symbolic
            link), naming the file, the key and the path.
    """
    outside = leads_outside(root, rel)
    if outside is not None:
        raise WorkspaceError(f"{key}: {rel!r} leads outside the workspace (to {outside}); a workspace may only "
                             "use files inside its own folder", Location(file, line))
    return root / rel
