"""Where the exported ONNX model is kept and found, ``python -m core models``, and how texts are grouped into
runs of the model."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from core.__main__ import main
from core.retrieval import onnx_minilm as M
from core.retrieval.embedding import model_path, shared_model

ROOT = Path(__file__).resolve().parents[1]
PROJECT_MODELS = ROOT / ".state" / "models"


@pytest.fixture
def no_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOP_MODEL_CACHE", raising=False)


@pytest.fixture
def venv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_override: None) -> Path:
    """This process as if it ran from a virtual environment at ``tmp_path / "venv"``."""
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    return tmp_path / "venv"


def test_a_virtual_environment_is_looked_in_first_then_the_project(venv: Path) -> None:
    shared = venv / "share" / "sop-playground" / "models"
    assert M.cache_dirs() == [shared, PROJECT_MODELS]
    assert M.cache_dir() == shared  # not there yet, but it may be made: a new export goes there


def test_outside_a_virtual_environment_the_project_keeps_it(monkeypatch: pytest.MonkeyPatch,
                                                            no_override: None) -> None:
    monkeypatch.setattr(sys, "prefix", "/usr")
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    assert M.cache_dirs() == [PROJECT_MODELS]


def test_sop_model_cache_is_the_only_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, venv: Path) -> None:
    monkeypatch.setenv("SOP_MODEL_CACHE", str(tmp_path / "mine"))
    assert M.cache_dirs() == [tmp_path / "mine"] == [M.cache_dir()]


def test_an_environment_it_may_not_write_to_leaves_the_export_to_the_project(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch,
                                                                             no_override: None) -> None:
    blocked = tmp_path / "venv"
    blocked.write_text("a file where the environment's folders would be")
    monkeypatch.setattr(sys, "prefix", str(blocked))
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    assert not M.writable(blocked / "share" / "sop-playground" / "models")
    assert M.writable(tmp_path / "not" / "yet" / "made")
    assert M.cache_dir() == PROJECT_MODELS


@pytest.fixture(scope="session")
def real_export() -> Path:
    """The export this test session uses, found where the real environment keeps it (before any test makes
    this process look like another environment)."""
    return M.exported(Path(model_path()))


def test_an_export_in_the_environment_is_found_before_exporting_again(real_export: Path, venv: Path) -> None:
    source = Path(model_path())
    existing = real_export
    shared = venv / "share" / "sop-playground" / "models"
    shared.mkdir(parents=True)
    shutil.copyfile(existing, shared / existing.name)
    assert M.cached(source) != shared / existing.name  # a graph without its token table is no export
    shutil.copyfile(M.table_file(existing), M.table_file(shared / existing.name))
    assert M.cached(source) == shared / existing.name == M.exported(source)


def _models(*args: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["models", "--json", *args]) == 0
    return json.loads(out.getvalue())


def test_models_exports_once_then_finds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOP_MODEL_CACHE", str(tmp_path / "models"))
    first = _models()
    path = Path(first["path"])
    assert first["exported_now"] and path.parent == tmp_path / "models"
    assert path.stat().st_size + M.table_file(path).stat().st_size > 85_000_000  # the model's weights, all of them
    assert first["looked_in"] == [str(tmp_path / "models")]
    again = _models()
    assert again == {**again, "path": str(path), "exported_now": False}
    fresh = M.OnnxMiniLM(Path(model_path()))  # the new export gives the model's vectors
    sentences = ["Recommend a gaming mouse.", "where is my refund", "1500"]
    assert np.array_equal(fresh.embed(sentences), shared_model().embed(sentences))


def test_models_says_where_in_words(monkeypatch: pytest.MonkeyPatch) -> None:
    existing = M.exported(Path(model_path()))
    monkeypatch.setenv("SOP_MODEL_CACHE", str(existing.parent))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["models"]) == 0
    assert out.getvalue().strip() == f"embedding model for ONNX Runtime: {existing} (already exported)"


@pytest.mark.parametrize(("lengths", "expected"), [
    ([300, 200, 100, 100, 100, 50, 50, 2, 2], [(0, 1), (1, 3), (3, 8), (8, 9)]),
    ([600, 600], [(0, 1), (1, 2)]),  # longer than a run: alone
    ([3] * 200, [(0, 64), (64, 128), (128, 192), (192, 200)]),  # short texts: 64 a run
    ([], []),
])
def test_runs_hold_at_most_512_padded_tokens_and_64_texts(lengths: list[int], expected: list[tuple[int, int]]) -> None:
    assert [(r.start, r.stop) for r in M.runs(lengths)] == expected


def test_every_text_gets_its_own_vector_whatever_the_runs_and_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    model = shared_model()
    texts = [f"question {i}: " + "where is my parcel " * (i % 9) for i in range(60)]
    alone = np.stack([model.embed([t])[0] for t in texts])
    monkeypatch.setattr(M, "ENCODE_BLOCK", 7)  # several blocks, each sorted and cut into runs of its own
    together = model.embed(texts)
    assert float(np.max(np.abs(together - alone))) < 1e-5
    assert all(int(np.argmax(together @ alone[i])) == i for i in range(len(texts)))
