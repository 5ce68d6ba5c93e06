"""An inventory upload killed between its two files (the new table written, store.yaml's mapping of it not yet) is
rolled back whole the next time the workspace is opened from the command line, with one sentence saying what was
rolled back; before, `lint` reported the half-written inventory and only opening the playground recovered it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from core.bench.processes import write_workspace

ROOT = Path(__file__).resolve().parents[1]
OLD_TABLE = "sku,name,category,price,stock\nA-1,Desk lamp,Lamp,20,3\n"
NEW_TABLE = "code,title,kind,cost,qty\nB-1,Floor lamp,Lamp,45,2\n"
MAPPING = "inventory:\n  source: inventory.csv\n  columns: {{sku: {0}, name: {1}, category: {2}, price: {3}, stock: {4}}}\n"
UPLOAD = ("import os, signal, sys; sys.path.insert(0, sys.argv[1])\n"
          "from pathlib import Path\n"
          "from core.playground.changes import ChangeSet, commit\n"
          "root = Path(sys.argv[2])\n"
          "real, done = os.replace, []\n"
          "def replace(a, b):\n"
          "    if done and not str(b).endswith('manifest.json'):\n"
          "        os.kill(os.getpid(), signal.SIGKILL)  # killed between the upload's two files\n"
          "    real(a, b)\n"
          "    done.append(b) if not str(b).endswith('manifest.json') else None\n"
          "os.replace = replace\n"
          "yaml = (root / 'store.yaml').read_text().split('inventory:')[0]\n"
          "commit(root, ChangeSet('upload inventory lamps.csv').put('inventory.csv', sys.argv[3])"
          ".put('store.yaml', yaml + sys.argv[4]))\n")
SENTENCE = ("the change 'upload inventory lamps.csv' was cut off midway (its process stopped) and has been rolled "
            "back: inventory.csv and store.yaml are as before it")


def _half_uploaded(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    ws = write_workspace(tmp_path / "ws")
    (ws / "inventory.csv").write_text(OLD_TABLE, encoding="utf-8")
    with (ws / "store.yaml").open("a", encoding="utf-8") as fh:
        fh.write(MAPPING.format("sku", "name", "category", "price", "stock"))
    before = {n: (ws / n).read_text(encoding="utf-8") for n in ("inventory.csv", "store.yaml")}
    run = subprocess.run([sys.executable, "-c", UPLOAD, str(ROOT), str(ws), NEW_TABLE,
                          MAPPING.format("code", "title", "kind", "cost", "qty")], capture_output=True, timeout=60)
    assert run.returncode == -9
    assert (ws / "inventory.csv").read_text(encoding="utf-8") == NEW_TABLE  # half of it landed
    assert (ws / "store.yaml").read_text(encoding="utf-8") == before["store.yaml"]
    return ws, before


def _cli(ws: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "core", *args, "--workspace", str(ws)], input=stdin,
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


@pytest.mark.parametrize("command", ["lint", "chat"])
def test_a_half_written_inventory_upload_is_rolled_back_by_the_command_line(command: str, tmp_path: Path) -> None:
    ws, before = _half_uploaded(tmp_path)
    first = _cli(ws, command, stdin="quit\n")
    assert first.returncode == 0, first.stdout + first.stderr
    assert SENTENCE in first.stdout
    assert {n: (ws / n).read_text(encoding="utf-8") for n in before} == before  # the whole upload undone
    assert not list(ws.glob(".*.tmp")) and not list((ws / ".state" / "backups").iterdir())
    again = _cli(ws, "lint")
    assert again.returncode == 0 and "cut off midway" not in again.stdout and ": error:" not in again.stdout


def test_a_half_written_inventory_upload_is_rolled_back_when_the_api_opens_the_workspace(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from fastapi.testclient import TestClient

    from core import build_orchestrator
    from core.server.api import create_app

    ws, before = _half_uploaded(tmp_path)
    app = create_app([ws], token="", load_in_background=False,
                     build=lambda root, loaded: build_orchestrator(root, state_url=f"sqlite:///{tmp_path}/s.db",
                                                                   loaded=loaded))
    with caplog.at_level("WARNING"), TestClient(app) as client:
        assert client.get("/ready").status_code == 200
        assert {n: (ws / n).read_text(encoding="utf-8") for n in before} == before
        assert any(SENTENCE in r.getMessage() for r in caplog.records)
        r = client.post("/sessions/s1/messages", json={"text": "I need to open a ticket"})
        assert r.status_code == 200 and r.json()["turn"] == 1
