"""Checked saves: staged lint, atomic commit with backup, undo; nothing is written when a change adds errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.playground.changes import ChangeSet, apply_checked, backups, check_relpath, staged, undo_last
from core.shared.errors import UserInputError
from core.shared.problems import Problem
from tests.playground.conftest import snapshot


def _ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "sops").mkdir(parents=True)
    (root / "sops" / "a.sop").write_text("old a\n", encoding="utf-8")
    (root / "store.yaml").write_text("name: X\n", encoding="utf-8")
    return root


def test_staged_view_overlays_changes_without_touching_the_workspace(tmp_path: Path) -> None:
    root = _ws(tmp_path)
    before = snapshot(root)
    change = ChangeSet("t").put("sops/a.sop", "new a\n").put("sops/b.sop", "b\n").delete("store.yaml")
    with staged(root, change) as stage:
        assert (stage / "sops" / "a.sop").read_text() == "new a\n"
        assert (stage / "sops" / "b.sop").read_text() == "b\n"
        assert not (stage / "store.yaml").exists()
    assert snapshot(root) == before


def test_commit_backs_up_and_undo_restores(tmp_path: Path) -> None:
    root = _ws(tmp_path)
    before = snapshot(root)
    result = apply_checked(root, ChangeSet("edit a").put("sops/a.sop", "new a\n").put("sops/b.sop", "b\n"),
                           lambda _stage: [])
    assert result.saved and (root / "sops" / "a.sop").read_text() == "new a\n"
    assert [b.label for b in backups(root)] == ["edit a"]
    undone = undo_last(root)
    assert undone is not None and undone.label == "edit a"
    assert snapshot(root) == before
    assert undo_last(root) is None


def test_an_error_in_the_changed_file_blocks_the_write(tmp_path: Path) -> None:
    root = _ws(tmp_path)
    before = snapshot(root)

    def lint(stage: Path) -> list[Problem]:
        text = (stage / "sops" / "a.sop").read_text()
        return [Problem("sops/a.sop", 1, "error", "broken")] if "broken" in text else []

    result = apply_checked(root, ChangeSet("bad").put("sops/a.sop", "broken\n"), lint)
    assert not result.saved and [p.message for p in result.blocking] == ["broken"]
    assert snapshot(root) == before and backups(root) == []


def test_errors_the_workspace_already_had_do_not_block_other_edits(tmp_path: Path) -> None:
    root = _ws(tmp_path)
    old = Problem("sops/z.sop", 3, "error", "already broken")
    result = apply_checked(root, ChangeSet("ok").put("sops/a.sop", "fine\n"), lambda _s: [old], baseline=[old])
    assert result.saved
    fresh = Problem("gar.csv", 2, "error", "new breakage elsewhere")
    result = apply_checked(root, ChangeSet("ok2").put("sops/a.sop", "fine again\n"), lambda _s: [old, fresh],
                           baseline=[old])
    assert not result.saved and result.blocking == [fresh]


@pytest.mark.parametrize("bad", ["../escape.sop", "/etc/passwd", ".state/sessions.sqlite", "sops/../../x"])
def test_paths_outside_the_workspace_are_refused(bad: str) -> None:
    with pytest.raises(UserInputError):
        check_relpath(bad)


KILLED_MIDWAY = ("import os, signal, sys; sys.path.insert(0, sys.argv[1])\n"
                 "from pathlib import Path\n"
                 "from core.playground.changes import ChangeSet, commit\n"
                 "real, done = os.replace, []\n"
                 "def replace(a, b):\n"
                 "    if done and not str(b).endswith('manifest.json'):\n"
                 "        os.kill(os.getpid(), signal.SIGKILL)  # killed between the change's two files\n"
                 "    real(a, b)\n"
                 "    done.append(b) if not str(b).endswith('manifest.json') else None\n"
                 "os.replace = replace\n"
                 "commit(Path(sys.argv[2]), ChangeSet('inventory upload').put('inventory.csv', 'sku,name\\nB,new\\n')"
                 ".put('store.yaml', 'name: X\\ninventory: {source: inventory.csv}\\n'))\n")


def test_a_change_killed_between_its_files_is_rolled_back_whole(tmp_path: Path) -> None:
    import subprocess
    import sys

    from core.playground.changes import recover

    root = _ws(tmp_path)
    (root / "inventory.csv").write_text("sku,name\nA,old\n", encoding="utf-8")
    before = snapshot(root)
    repo = Path(__file__).resolve().parents[2]
    run = subprocess.run([sys.executable, "-c", KILLED_MIDWAY, str(repo), str(root)], capture_output=True, timeout=60)
    assert run.returncode == -9
    assert snapshot(root) != before  # half of the change landed
    assert list(root.glob(".store.yaml.*.tmp"))  # the second file was staged, never renamed
    assert recover(root) == ["inventory upload"]
    assert snapshot(root) == before and backups(root) == []  # all of it undone, nothing half-done to undo
    assert not list(root.glob(".*.tmp"))
    assert recover(root) == []
