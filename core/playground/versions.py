"""Named versions of a workspace: publish the files as they are with a note, list them, diff two, roll back.

A version is a copy of the workspace's own files (store.yaml, the GAR, SOPs, knowledge base, data, tests, the
inventory and Python tools it names: what :func:`core.playground.workspaces.copy_workspace` copies) under
``.state/versions/<n>/``, with ``version.json`` saying its number, note, time and each file's hash. Versions
are numbered 1, 2, … and never change once published. Beyond the undo of single saves, they give a team
points to talk about ("v3 is what the demo ran") and to go back to.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from core.playground.changes import ChangeSet
from core.shared.errors import UserInputError

VERSIONS = Path(".state") / "versions"
META = "version.json"
WORKING = "working copy"  # how the files as they are now are named in a diff
MAX_NOTE = 300


@dataclass(frozen=True)
class Version:
    """One published version."""

    number: int
    note: str
    created: str  # ISO time, UTC
    files: dict[str, str]  # workspace-relative path -> sha256

    @property
    def label(self) -> str:
        return f"v{self.number}"


def _content(root: Path) -> dict[str, bytes]:
    """The workspace's own files, as a copy of it holds them."""
    from core.playground.workspaces import copy_workspace

    with tempfile.TemporaryDirectory(prefix="sop-version-") as tmp:
        dst = Path(tmp) / "ws"
        dst.mkdir()
        copy_workspace(root, dst)
        return {p.relative_to(dst).as_posix(): p.read_bytes() for p in sorted(dst.rglob("*")) if p.is_file()}


def _hashes(files: dict[str, bytes]) -> dict[str, str]:
    return {rel: hashlib.sha256(data).hexdigest() for rel, data in files.items()}


def versions(root: Path) -> list[Version]:
    """The published versions, oldest first."""
    base = root / VERSIONS
    out = []
    for d in base.iterdir() if base.is_dir() else []:
        meta = d / META
        if d.name.isdigit() and meta.is_file():
            data = json.loads(meta.read_text(encoding="utf-8"))
            out.append(Version(int(data["number"]), str(data.get("note", "")), str(data.get("created", "")),
                               dict(data.get("files", {}))))
    return sorted(out, key=lambda v: v.number)


def publish(root: Path, note: str) -> Version:
    """Publish the workspace's files as they are now as the next version.

    Raises:
        UserInputError: an empty or over-long note, or files identical to the latest version's.
    """
    note = " ".join(note.split())
    if not note:
        raise UserInputError("say in a few words what this version is (the note is how the team finds it)")
    if len(note) > MAX_NOTE:
        raise UserInputError(f"the note has {len(note)} characters; keep it under {MAX_NOTE}")
    files = _content(root)
    known = versions(root)
    if known and known[-1].files == _hashes(files):
        raise UserInputError(f"nothing changed since {known[-1].label} ({known[-1].note})")
    number = known[-1].number + 1 if known else 1
    base = root / VERSIONS
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".v{number}-", dir=base) as tmp:
        build = Path(tmp) / "v"
        for rel, data in files.items():
            (build / rel).parent.mkdir(parents=True, exist_ok=True)
            (build / rel).write_bytes(data)
        version = Version(number, note, datetime.now(UTC).isoformat(timespec="seconds"), _hashes(files))
        build.mkdir(exist_ok=True)
        (build / META).write_text(json.dumps({"number": number, "note": note, "created": version.created,
                                              "files": version.files}, indent=1), encoding="utf-8")
        build.rename(base / str(number))  # the version appears whole or not at all
    return version


def current(root: Path) -> str:
    """Which version the files are now: ``v3`` when they are that version's, ``v3 + edits`` after changes
    since, ``unpublished`` before the first version."""
    known = versions(root)
    if not known:
        return "unpublished"
    files = _hashes(_content(root))
    same = next((v for v in reversed(known) if v.files == files), None)
    return same.label if same is not None else f"{known[-1].label} + edits"


def _files_of(root: Path, version: int | None) -> dict[str, bytes]:
    if version is None:
        return _content(root)
    d = root / VERSIONS / str(version)
    if not (d / META).is_file():
        raise UserInputError(f"there is no version v{version}")
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file() and p != d / META}


def diff(root: Path, old: int | None, new: int | None) -> list[tuple[str, str]]:
    """Per changed file, its unified diff from version ``old`` to version ``new`` (None: the working copy);
    binary files say only that they changed."""
    a, b = _files_of(root, old), _files_of(root, new)
    name_a = f"v{old}" if old is not None else WORKING
    name_b = f"v{new}" if new is not None else WORKING
    out = []
    for rel in sorted(set(a) | set(b)):
        if a.get(rel) == b.get(rel):
            continue
        try:
            left = a[rel].decode("utf-8").splitlines(keepends=True) if rel in a else []
            right = b[rel].decode("utf-8").splitlines(keepends=True) if rel in b else []
        except UnicodeDecodeError:
            out.append((rel, f"binary file {'added' if rel not in a else 'removed' if rel not in b else 'changed'}"))
            continue
        text = "".join(difflib.unified_diff(left, right, f"{name_a}/{rel}" if rel in a else "/dev/null",
                                            f"{name_b}/{rel}" if rel in b else "/dev/null"))
        out.append((rel, text))
    return out


def rollback_change(root: Path, version: int) -> ChangeSet:
    """The change that makes the workspace's files those of ``version`` (files added since are removed)."""
    target = _files_of(root, version)
    now = _content(root)
    change = ChangeSet(f"roll back to v{version}")
    for rel, data in target.items():
        if now.get(rel) != data:
            change.put(rel, data)
    for rel in now:
        if rel not in target:
            change.delete(rel)
    if not change.files:
        raise UserInputError(f"the workspace already is v{version}")
    return change

