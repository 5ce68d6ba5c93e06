"""A workspace's conversation tests as a save sees them: finding them, running them on a loaded workspace, and
the gate a checked save passes (no passing test broken, or their expectations accepted).

:meth:`core.playground.service.Playground.apply` runs the gate; the Tests page runs the tests themselves
through :mod:`core.playground.testruns`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

import yaml

from core.engine.build import Workspace
from core.evaluation.recording import accept
from core.evaluation.testing import FileResult, WorkspaceCache, run_file
from core.playground.changes import ChangeSet
from core.workspace.paths import leads_outside, read_text_file

TEST_FOLDERS = ("conversations", "tests/conversations")
Tests = Literal["check", "skip", "accept"]  # what a save does with the conversation tests it would break


def conversation_files(root: Path) -> list[Path]:
    """The workspace's conversation test files (``conversations/`` or ``tests/conversations/``)."""
    found: list[Path] = []
    for folder in TEST_FOLDERS:
        d = root / folder
        if d.is_dir():
            found += sorted([*d.rglob("*.yaml"), *d.rglob("*.yml")])
    return [p for p in found if leads_outside(root, p) is None and _targets(root, p)]


def _targets(root: Path, path: Path) -> bool:
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return True  # listed, so the run reports why it cannot be read
    target = spec.get("workspace") if isinstance(spec, dict) else None
    return not target or (path.parent / str(target)).resolve() == root


def run_on(root: Path, workspace: Workspace, files: list[Path]) -> list[FileResult]:
    """Run conversation files on ``workspace`` (loaded from ``root`` or a staged copy of it)."""
    if workspace.kb is not None:
        workspace.kb.wait()  # a test sees the whole knowledge base, never the part indexed so far
    cache = WorkspaceCache()
    cache.put(root, workspace)
    return [run_file(path, root, cache) for path in files]


def save_gate(root: Path, now: Workspace, change: ChangeSet, tests: Tests,
              loaded: list[Workspace]) -> Callable[[Path], list[FileResult]]:
    """The gate of a checked save of ``change``: the conversation tests of ``root`` that pass with ``now`` (the
    workspace in use) and fail with the staged workspace (the last of ``loaded``); ``tests="accept"`` puts
    those tests with their expectations updated into ``change`` and leaves only the ones it cannot update."""
    files = conversation_files(root)

    def gate(stage: Path) -> list[FileResult]:
        if not files:
            return []
        failing = [r for r in run_on(root, loaded[-1], files) if not r.passed]
        if not failing:
            return []
        unreadable = {r.file for r in failing if r.error and not r.turns}  # a test that cannot run checks
        readable = [Path(r.file) for r in failing if r.file not in unreadable]  # nothing: a save waits for it
        passed_before = {r.file for r in run_on(root, now, readable) if r.passed}
        broken = [r for r in failing if r.file in passed_before or r.file in unreadable]
        if tests == "accept":
            for r in [r for r in broken if not r.error]:
                path = Path(r.file)
                change.put(path.relative_to(root).as_posix(), accept(read_text_file(path), r))
            return [r for r in broken if r.error]
        return broken
    return gate
