"""Nothing is written outside the workspace through its ``.state`` folder: a workspace whose ``.state`` is a
symbolic link to a folder elsewhere, or holds a link to a file elsewhere, is refused with the link named (the
engine, the playground, lint), and the folder elsewhere stays empty."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import build_orchestrator
from core.playground.workspaces import copy_workspace
from core.shared.errors import WorkspaceError

ROOT = Path(__file__).resolve().parents[1]


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    copy_workspace(ROOT / "examples" / "library_desk", ws)
    return ws


def test_a_state_folder_linked_elsewhere_is_refused_and_nothing_is_written_there(tmp_path: Path) -> None:
    from core.playground import Playground

    ws = _workspace(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (ws / ".state").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(WorkspaceError, match=r"\.state is a link leading outside the workspace"):
        build_orchestrator(ws)
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        Playground(ws)
    assert list(elsewhere.iterdir()) == []


def test_a_link_inside_the_state_folder_to_a_file_elsewhere_is_refused(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    target = tmp_path / "precious.sqlite"
    target.write_bytes(b"not yours")
    (ws / ".state").mkdir(exist_ok=True)
    (ws / ".state" / "sessions.sqlite").symlink_to(target)
    with pytest.raises(WorkspaceError, match=r"\.state/sessions\.sqlite is a link"):
        build_orchestrator(ws, state_url=None)
    assert target.read_bytes() == b"not yours"


def test_a_link_inside_the_workspace_is_fine(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    (ws / "cache").mkdir()
    (ws / ".state").symlink_to(ws / "cache", target_is_directory=True)
    orch = build_orchestrator(ws)
    assert orch.handle_message("s", "hello").strip()
    assert (ws / "cache" / "sessions.sqlite").exists()
