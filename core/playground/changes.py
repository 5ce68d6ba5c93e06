"""Safe edits to a workspace: check a change on a staged copy, commit it atomically, undo it from a backup.

Every write the playground makes (an SOP saved, the GAR edited, an inventory or KB
file uploaded) goes through :class:`ChangeSet`: the changed files are laid over a
staged view of the workspace (symlinks to everything unchanged), the whole
workspace is linted there, and only a change without errors is written, each file
by ``os.replace`` after its previous content went to ``.state/backups/``.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from core.evaluation.testing import FileResult
from core.shared.errors import UserInputError
from core.shared.problems import Problem, errors
from core.workspace.paths import leads_outside, workspace_view

BACKUP_DIR = "backups"
MANIFEST = "manifest.json"
KEEP_BACKUPS = 50


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


@contextmanager
def staged(root: Path, change: ChangeSet) -> Iterator[Path]:
    """A temporary view of the workspace with ``change`` applied; the workspace itself is untouched."""
    with tempfile.TemporaryDirectory(prefix="sop-stage-") as tmp:
        stage = Path(tmp) / root.resolve().name
        stage.mkdir()
        _overlay(root.resolve(), stage, {PurePosixPath(k): v for k, v in change.files.items()})
        with workspace_view(stage, root):  # its links into the workspace are the workspace's own files
            yield stage


def _overlay(src: Path, dst: Path, files: dict[PurePosixPath, bytes | None]) -> None:
    """Mirror ``src`` into ``dst`` by symlinks, materialising only the folders a change touches."""
    heads = {p.parts[0] for p in files}
    for entry in src.iterdir() if src.is_dir() else []:
        if entry.name == ".state" or entry.name in heads:
            continue
        (dst / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    for head in heads:
        here = {PurePosixPath(*p.parts[1:]): v for p, v in files.items() if p.parts[0] == head and len(p.parts) > 1}
        whole = files.get(PurePosixPath(head), "absent")
        if here:
            (dst / head).mkdir(exist_ok=True)
            _overlay(src / head, dst / head, here)
        elif isinstance(whole, bytes):
            (dst / head).write_bytes(whole)
        elif whole is None:
            continue  # deleted: simply not mirrored


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
    _prune(root)
    return backup


def recover(root: Path) -> list[str]:
    """Finish what a change cut off midway left (the process killed between its files): every change
    whose manifest is not marked complete is rolled back from its backup, so a workspace is always
    as it was before a change or after all of it. Returns the labels of the changes rolled back."""
    base = root / ".state" / BACKUP_DIR
    rolled: list[str] = []
    for d in sorted(base.iterdir()) if base.is_dir() else []:
        try:
            m = json.loads((d / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(m, dict) or m.get("complete", True):
            continue
        files = {str(k): bool(v) for k, v in (m.get("files") or {}).items()}
        _restore(root, d, files)
        for rel in files:  # the new versions staged beside them that never got renamed
            target = root / check_relpath(rel)
            for tmp in target.parent.glob(f".{target.name}.*.tmp"):
                tmp.unlink(missing_ok=True)
        shutil.rmtree(d, ignore_errors=True)
        rolled.append(str(m.get("label") or d.name))
    return rolled


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


def change_diff(root: Path, change: Backup, newer: list[Backup]) -> dict[str, str]:
    """What a saved change did, file by file, as unified diffs (text files; binary ones are named).

    The text before is the change's backup; the text after is the backup of the earliest of the
    ``newer`` changes (listed newest first, as :func:`backups` gives them) that replaced the file
    again, else the file on disk now.
    """
    out: dict[str, str] = {}
    for rel, existed in change.files.items():
        before = (change.path / rel).read_bytes() if existed and (change.path / rel).is_file() else b""
        later = next((b for b in reversed(newer) if rel in b.files), None)
        if later is not None:
            after = (later.path / rel).read_bytes() if later.files[rel] and (later.path / rel).is_file() else b""
        else:
            after = (root / rel).read_bytes() if (root / rel).is_file() else b""
        try:
            a, b = before.decode("utf-8"), after.decode("utf-8")
        except UnicodeDecodeError:
            out[rel] = f"(binary file: {len(before)} → {len(after)} bytes)"
            continue
        diff = difflib.unified_diff(a.splitlines(keepends=True), b.splitlines(keepends=True),
                                    fromfile=f"{rel} (before)", tofile=f"{rel} (after)", n=2)
        out[rel] = "".join(list(diff)[:2000]) or "(no change in content)"
    return out


def _prune(root: Path) -> None:
    for old in backups(root)[KEEP_BACKUPS:]:
        shutil.rmtree(old.path, ignore_errors=True)


@dataclass
class CheckResult:
    """What linting a staged change found, and whether it was written."""

    problems: list[Problem]
    blocking: list[Problem]
    backup: Path | None = None
    broken: list[FileResult] = field(default_factory=list)  # conversation tests the change would break

    @property
    def saved(self) -> bool:
        """Whether the change was committed."""
        return self.backup is not None


def apply_checked(root: Path, change: ChangeSet, lint: Callable[[Path], list[Problem]],
                  baseline: list[Problem] | None = None,
                  gate: Callable[[Path], list[FileResult]] | None = None) -> CheckResult:
    """Lint the workspace with ``change`` applied and commit it only when it adds no error.

    An error blocks the change when it is in a file the change writes, or is not
    among the ``baseline`` errors the workspace already had (so one broken SOP
    elsewhere does not freeze every other edit). A change that lints clean is then
    given to ``gate`` on the same staged view; the conversation tests it returns
    (those the change would break) stop it too. ``gate`` may add files to the change
    (updated test files), which are committed with it.
    """
    known = {(p.file, p.message) for p in errors(baseline or [])}
    broken: list[FileResult] = []
    with staged(root, change) as stage:
        problems = lint(stage)
        blocking = [p for p in errors(problems) if p.file in change.files or (p.file, p.message) not in known]
        if not blocking and gate is not None:
            broken = gate(stage)
    backup = None if blocking or broken else commit(root, change)
    return CheckResult(problems, blocking, backup, broken)
