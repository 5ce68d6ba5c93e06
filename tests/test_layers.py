"""The parts of core/ stay in their layers: the import contracts in .importlinter hold, and they do catch a
part that imports one above it, a lower part that reads the customer's text, and Streamlit in the engine."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def lint(where: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(where)}
    return subprocess.run([str(LINT), "--no-cache"], cwd=where, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The package and its contracts, copied: a wrong import is tried on the copy, never on the project."""
    shutil.copytree(ROOT / "core", tmp_path / "core", ignore=shutil.ignore_patterns("__pycache__", "*.yaml"))
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    return tmp_path


def test_the_project_keeps_its_layers() -> None:
    run = lint(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        (
            "core/language/upward.py",
            "from core.engine import orchestrator",
            "core.language is not allowed to import core.engine",
        ),
        (
            "core/workspace/upward.py",
            "from core.understanding import extract",
            "Only the understanding part and the parts above it read the customer's text",
        ),
        ("core/state/upward.py", "from core.tools import gateway", "core.state is not allowed to import core.tools"),
        ("core/engine/page.py", "import streamlit", "The engine never imports Streamlit"),
    ],
)
def test_a_wrong_import_breaks_a_contract_and_names_the_line(copy: Path, module: str, line: str, broken: str) -> None:
    (copy / module).write_text(f'"""An import the layers forbid."""\n\n{line}\n', encoding="utf-8")
    run = lint(copy)
    assert run.returncode == 1, run.stdout + run.stderr
    assert broken in run.stdout
    dotted = module.removesuffix(".py").replace("/", ".")
    assert f"{dotted} -> " in run.stdout and "(l.3)" in run.stdout


def test_an_import_downwards_is_allowed(copy: Path) -> None:
    (copy / "core/engine/downward.py").write_text(
        '"""Imports below."""\n\nfrom core.language import text\n', encoding="utf-8"
    )
    run = lint(copy)
    assert run.returncode == 0, run.stdout
