"""The parts of core/ stay in their layers: the import contracts in .importlinter hold, and they do catch a
part that imports one above it, a lower part that reads the customer's text, Streamlit in the engine, and a
part that reaches past the reader's door (core/understanding/__init__.py) into a module inside it."""

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
        (
            "core/engine/inner.py",
            "from core.understanding.reading.reader import RuleReader",
            "Other parts use the reader's door, never its inner modules",
        ),
        (
            "core/evaluation/inner.py",
            "import core.understanding.candidates.learned",
            "Other parts use the reader's door, never its inner modules",
        ),
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


def test_the_door_is_allowed(copy: Path) -> None:
    (copy / "core/engine/door.py").write_text(
        '"""Through the door."""\n\nfrom core.understanding import RuleReader, extract_values\n', encoding="utf-8"
    )
    run = lint(copy)
    assert run.returncode == 0, run.stdout


def test_pages_and_widgets_use_the_door_too() -> None:
    """pages/, ui/ and app.py are outside the package import-linter checks: their imports are read here."""
    import ast

    files = [ROOT / "app.py", *sorted((ROOT / "pages").rglob("*.py")), *sorted((ROOT / "ui").rglob("*.py"))]
    inner = []
    for file in files:
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
                [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            inner += [f"{file.relative_to(ROOT)}:{node.lineno}" for n in names if n.startswith("core.understanding.")]
    assert not inner, inner


def test_the_door_opens_on_every_name_and_stays_cheap() -> None:
    """Every exported name resolves; importing the door alone loads the commands, not the readers behind it."""
    code = (
        "import sys, core.understanding as u\n"
        "behind = ['core.understanding.reading.reader', 'core.understanding.brains.rule',\n"
        "          'core.understanding.brains.llm', 'core.understanding.candidates.learned']\n"
        "assert not [m for m in behind if m in sys.modules], sorted(sys.modules)\n"
        "missing = [n for n in u.__all__ if getattr(u, n, None) is None]\n"
        "assert not missing, missing\n"
        "from core.understanding import extract_values\n"
        "assert callable(extract_values) and not isinstance(extract_values, type(sys)), extract_values\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
