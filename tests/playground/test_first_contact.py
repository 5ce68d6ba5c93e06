"""Fast first contact: a workspace whose texts are in its embedding cache opens without waiting for the model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OPEN = """
import sys
from core.engine.build import load_workspace
from core.retrieval.embedding import SharedModel
ws = load_workspace(sys.argv[1])
print(len(ws.sops), SharedModel.ready())
"""


def _open(ws: Path) -> str:
    done = subprocess.run([sys.executable, "-c", OPEN, str(ws)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, check=True)
    return done.stdout.split()[-2] + " " + done.stdout.split()[-1]


def test_a_cached_workspace_opens_without_loading_the_model(ws_copy: Path) -> None:
    assert not (ws_copy / ".state" / "embeddings.sqlite").exists()
    assert _open(ws_copy) == "3 True"  # first time: the texts are embedded, so the model loads
    assert _open(ws_copy) == "3 False"  # then they come from the workspace's cache: no model needed to open it
