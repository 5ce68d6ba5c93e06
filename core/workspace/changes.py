"""Changes to a workspace's files that a killed process never leaves half-done: each change is written file by
file after what it replaces went to ``.state/backups/`` with a manifest, and a change whose manifest is not marked
complete is rolled back whole by :func:`recover`, which every way of opening a workspace runs
(:func:`core.workspace.files.load_workspace_files`: lint, chat, test, the HTTP API and the playground).

A lock file (``.state/changes.lock``, an OS lock the kernel releases when its holder dies) is held while a change
is written, so a change still being written by a live process is never taken for one cut off.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from core.shared.errors import UserInputError
from core.workspace.paths import leads_outside, state_folder

try:  # POSIX; elsewhere a change in progress is not told from one cut off
    import fcntl
except ImportError:  # pragma: no cover - not on Linux
    fcntl = None  # type: ignore[assignment]

BACKUP_DIR = "backups"
MANIFEST = "manifest.json"
LOCK_FILE = "changes.lock"
KEEP_BACKUPS = 50
LOCK_WAIT_S = 30.0


def check_relpath(rel: str) -> str:
    """A workspace-relative POSIX path without ``..``, absolute parts or the state folder.

    Raises:
        UserInputError: when the path would leave the workspace or touch ``.state``.
    """
    p = PurePosixPath(rel.replace("\\", "/"))
    if p.is_absolute() or not p.parts or any(part in ("..", "") for part in p.parts) or p.parts[0] == ".state":
        raise UserInputError(f"not a path inside the workspace: {rel!r}")
    return str(p)


@dataclass
class ChangeSet:
    """New contents (``None`` deletes) for workspace-relative paths, with a label for the backup."""

    label: str
    files: dict[str, bytes | None] = field(default_factory=dict)

    def put(self, rel: str, data: bytes | str) -> ChangeSet:
        """Write ``data`` (text is stored as UTF-8) at ``rel``."""
        self.files[check_relpath(rel)] = data.encode("utf-8") if isinstance(data, str) else data
        return self

    def delete(self, rel: str) -> ChangeSet:
        """Remove ``rel``."""
        self.files[check_relpath(rel)] = None
        return self


@dataclass(frozen=True)
class RolledBack:
    """A change cut off midway and rolled back: its label and the files it was writing."""

    label: str
    files: tuple[str, ...]

    def sentence(self) -> str:
        """What was rolled back, in one sentence."""
        names = list(self.files)
        listed = ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else (names[0] if names else "")
        return (f"the change '{self.label}' was cut off midway (its process stopped) and has been rolled back: "
                f"{listed} {'are' if len(names) > 1 else 'is'} as before it")


@contextmanager
def change_lock(root: Path, wait_s: float = LOCK_WAIT_S) -> Iterator[bool]:
    """Hold the workspace's change lock for the body; yields False when another process held it all of
    ``wait_s`` (the body then runs without it)."""
    folder = state_folder(root)
    folder.mkdir(parents=True, exist_ok=True)
    if fcntl is None:  # pragma: no cover - not on Linux
        yield True
        return
    fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        held, until = False, time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = True
                break
            except BlockingIOError:
                if time.monotonic() >= until:
                    break
                time.sleep(0.01)
        try:
            yield held
        finally:
            if held:
                fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def commit(root: Path, change: ChangeSet) -> Path:
    """Write a change: back up what it replaces, then replace each file atomically.

    Returns:
        The backup folder (what :func:`undo_last` restores).

    Raises:
        UserInputError: a path of the change leads outside the workspace through a symbolic link (a ``kb``
            folder linked elsewhere): nothing is read or written there.
    """
    for rel in change.files:
        outside = leads_outside(root, rel)
        if outside is not None:
            raise UserInputError(f"{rel} leads outside the workspace (to {outside}); nothing was written: a "
                                 "workspace may only change files inside its own folder")
    with change_lock(root):  # no open takes it for a change cut off while it is written
        backup = _commit(root, change)
    _prune(root)
    return backup


def _commit(root: Path, change: ChangeSet) -> Path:
    """:func:`commit` under the change lock."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    backup = root / ".state" / BACKUP_DIR / stamp
    backup.mkdir(parents=True)
    existed: dict[str, bool] = {}
    for rel in change.files:
        target = root / rel
        existed[rel] = target.is_file()
        if existed[rel]:
            (backup / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(target, backup / rel)
    manifest = {"label": change.label, "stamp": stamp, "files": existed, "complete": False}
    atomic_write(backup / MANIFEST, json.dumps(manifest, indent=1).encode("utf-8"))
    staged: dict[str, Path] = {}
    try:  # every new file written beside its target first; then the quick renames
        for rel, data in change.files.items():
            if data is not None:
                staged[rel] = _staged(root / rel, data)
        for rel, data in change.files.items():
            if data is None:
                (root / rel).unlink(missing_ok=True)
            else:
                os.replace(staged.pop(rel), root / rel)
    except BaseException:
        for tmp in staged.values():
            tmp.unlink(missing_ok=True)
        _restore(root, backup, existed)
        shutil.rmtree(backup, ignore_errors=True)
        raise
    atomic_write(backup / MANIFEST, json.dumps({**manifest, "complete": True}, indent=1).encode("utf-8"))
    return backup


def recover(root: Path) -> list[str]:
    """Roll back every change cut off midway (:func:`recover_changes`); returns their labels."""
    return [r.label for r in recover_changes(root)]


def recover_changes(root: Path) -> list[RolledBack]:
    """Finish what a change cut off midway left (the process killed between its files): every change
    whose manifest is not marked complete is rolled back from its backup, so a workspace is always
    as it was before a change or after all of it. A change being written right now (its writer holds the
    change lock) is left to its writer. Returns what was rolled back, oldest first."""
    base = Path(root) / ".state" / BACKUP_DIR
    if not base.is_dir() or base.is_symlink() or not _cut_off(base):
        return []
    with change_lock(Path(root)) as held:
        if not held:
            return []  # a change is being written now: the next open looks again
        rolled: list[RolledBack] = []
        for d, m in _cut_off(base):
            try:
                files = {check_relpath(str(k)): bool(v) for k, v in dict(m.get("files") or {}).items()}
            except (UserInputError, TypeError, ValueError):
                continue  # not a manifest this engine wrote: nothing is done after it
            _restore(root, d, files)
            for rel in files:  # the new versions staged beside them that never got renamed
                target = root / rel
                for tmp in target.parent.glob(f".{target.name}.*.tmp"):
                    tmp.unlink(missing_ok=True)
            shutil.rmtree(d, ignore_errors=True)
            rolled.append(RolledBack(str(m.get("label") or d.name), tuple(files)))
        return rolled


def _cut_off(base: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The backups whose manifest says their change never completed, oldest first."""
    out = []
    for d in sorted(base.iterdir()):
        try:
            m = json.loads((d / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(m, dict) and not m.get("complete", True):
            out.append((d, m))
    return out


def _staged(target: Path, data: bytes) -> Path:
    """``data`` in a temporary file beside ``target`` (removed again if writing it fails)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def _restore(root: Path, backup: Path, existed: dict[str, bool]) -> None:
    """Put back the files a change replaced (and remove those it added)."""
    for rel, was in existed.items():
        target = root / check_relpath(rel)
        if was and (backup / rel).is_file():
            atomic_write(target, (backup / rel).read_bytes())
        elif not was:
            target.unlink(missing_ok=True)


def atomic_write(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` through a temporary file in the same folder and ``os.replace``."""
    tmp = _staged(target, data)
    try:
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class Backup:
    """One saved change that can be undone."""

    path: Path
    label: str
    stamp: str
    files: dict[str, bool]


def backups(root: Path) -> list[Backup]:
    """Saved changes, newest first."""
    base = root / ".state" / BACKUP_DIR
    out: list[Backup] = []
    for d in sorted(base.iterdir(), reverse=True) if base.is_dir() else []:
        try:
            m = json.loads((d / MANIFEST).read_text(encoding="utf-8"))
            if not m.get("complete", True):
                continue  # cut off midway: rolled back by recover(), not an undoable change
            out.append(Backup(d, str(m["label"]), str(m["stamp"]), {str(k): bool(v) for k, v in m["files"].items()}))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # an interrupted backup without a manifest is not undoable
    return out


def undo_last(root: Path) -> Backup | None:
    """Restore the files of the newest change and forget that backup; None when there is nothing to undo."""
    found = backups(root)
    if not found:
        return None
    last = found[0]
    for rel, existed in last.files.items():
        target = root / check_relpath(rel)
        if existed:
            atomic_write(target, (last.path / rel).read_bytes())
        else:
            target.unlink(missing_ok=True)
    shutil.rmtree(last.path)
    return last


def _prune(root: Path) -> None:
    for old in backups(root)[KEEP_BACKUPS:]:
        shutil.rmtree(old.path, ignore_errors=True)


