"""Safe edits to a workspace: check a change on a staged copy, commit it atomically, undo it from a backup.

Every write the playground makes (an SOP saved, the GAR edited, an inventory or KB
file uploaded) goes through :class:`ChangeSet`: the changed files are laid over a
staged view of the workspace (symlinks to everything unchanged), the whole
workspace is linted there, and only a change without errors is written, each file
by ``os.replace`` after its previous content went to ``.state/backups/`` (:mod:`core.workspace.changes`, which
also rolls back a change cut off midway whenever the workspace is opened).
"""

from __future__ import annotations

import difflib
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from core.evaluation.testing import FileResult
from core.shared.problems import Problem, errors
from core.workspace.changes import (
    BACKUP_DIR,
    KEEP_BACKUPS,
    MANIFEST,
    Backup,
    ChangeSet,
    atomic_write,
    backups,
    check_relpath,
    commit,
    recover,
    undo_last,
)
from core.workspace.paths import workspace_view

__all__ = ["BACKUP_DIR", "KEEP_BACKUPS", "MANIFEST", "Backup", "ChangeSet", "CheckResult", "apply_checked",
           "atomic_write", "backups", "change_diff", "check_relpath", "commit", "recover", "staged", "undo_last"]


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
