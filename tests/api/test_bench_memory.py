"""``python -m core bench --memory``: a real server's workers are found and measured, and a worker's steps are
broken down (no size is asserted beyond plausibility: figures are for the notes, not for a test)."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import pytest

from core.__main__ import main
from core.bench.memory import children, conversation, mapped, process_memory, status_memory, worker_pids
from core.playground.workspaces import copy_workspace

ROOT = Path(__file__).resolve().parents[2]


def test_bench_memory_measures_every_worker_of_a_real_server(tmp_path: Path) -> None:
    copy_workspace(ROOT, tmp_path / "demo")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["bench", "--memory", "--workers", "2", "--conversations", "4", "--workspace",
                     str(tmp_path / "demo"), "--json"])
    result = json.loads(out.getvalue())
    sent = sum(len(conversation(i)) for i in range(4))
    assert code == 0 and result["failed"] == 0 and result["turns"] == sent
    workers = result["workers"]
    assert len(workers) == 2 and len({w["pid"] for w in workers}) == 2 and os.getpid() not in {
        w["pid"] for w in workers}
    for w in workers:
        assert 50 < w["rss"] <= w["peak"] < 4000  # a loaded worker holds a model: tens of MB at the least
        assert w["uss"] <= w["pss"] <= w["rss"] and w["loaded"]["rss"] > 50
    assert result["max_rss_mb"] == max(w["rss"] for w in workers)
    steps = result["breakdown"]["stages"]
    assert [s["stage"] for s in steps] == ["interpreter", "imports", "model", "workspace", "turns"]
    assert steps[0]["rss"] < 50 < steps[-1]["rss"]  # a bare interpreter, then a loaded worker
    assert steps[2]["rss"] > steps[1]["rss"]  # the model takes memory
    assert result["breakdown"]["turns"] == sent
    where = {m["where"]: m["mb"] for m in result["breakdown"]["mapped"]}
    assert where["anonymous"] > 0 and "onnxruntime" in where


def test_a_single_worker_is_the_server_itself_and_children_are_found() -> None:
    assert worker_pids(12345, 1) == [12345]
    assert os.getpid() in children(os.getppid())


def test_memory_figures_are_read_from_proc() -> None:
    mine = process_memory()
    assert mine["rss"] > 0 and mine["peak"] >= mine["rss"] and mine["uss"] <= mine["rss"]
    assert status_memory("Name:\tx\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n") == {"rss": 100.0, "peak": 200.0}
    assert sum(m["mb"] for m in mapped()) == pytest.approx(mine["rss"], rel=0.1)


def test_bench_memory_refuses_several_worker_counts() -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["bench", "--memory", "--workers", "1,2"]) == 2
    assert "one number" in err.getvalue()


def test_serve_exports_the_model_before_its_workers_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no export anywhere, serve makes it in a process of its own: no worker loads torch to make it."""
    from core.bench.api import ApiServer
    from core.retrieval.onnx_minilm import table_file

    copy_workspace(ROOT, tmp_path / "demo")
    monkeypatch.setenv("SOP_MODEL_CACHE", str(tmp_path / "models"))
    server = ApiServer(tmp_path / "demo", 2, f"sqlite:///{tmp_path / 'sessions.sqlite'}")
    try:
        server.wait_ready()
        workers = worker_pids(server.proc.pid, 2)
        maps = [Path(f"/proc/{pid}/maps").read_text() for pid in workers]
    finally:
        server.stop()
    exported = list((tmp_path / "models").glob("*.onnx"))
    assert len(exported) == 1 and table_file(exported[0]).is_file()
    assert len(maps) == 2 and all("onnxruntime" in m and "libtorch" not in m for m in maps)
