"""``python -m core bench --api``: it runs the API with its workers, loads it and reports every figure
(no timing is asserted: figures are for the notes, not for a test)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from core.__main__ import main


def test_bench_api_reports_throughput_and_latency_per_worker_count() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["bench", "--api", "--workers", "1,2", "--stores", "sqlite", "--clients", "2",
                     "--seconds", "1", "--think-ms", "20", "--json"])
    result = json.loads(out.getvalue())
    assert code == 0 and result["floor_ms"] > 0
    rows = result["rows"]
    assert [(r["store"], r["workers"]) for r in rows] == [("sqlite", 1), ("sqlite", 2)]
    for r in rows:
        assert r["failed"] == 0 and r["turns"] >= 2 and r["turns"] % 2 == 0  # whole two-turn conversations
        assert r["turns_per_s"] > 0 and r["p95_ms"] >= r["p50_ms"] > 0 and r["single_client_p95_ms"] > 0
        assert r["paced_turns_per_s"] > 0 and r["paced_p95_ms"] > 0 and r["think_ms"] == 20
        assert r["saturated_mean_floor_ms"] == round(1000 * 2 / r["turns_per_s"], 1)  # 2 clients
    assert rows[0]["speedup"] == 1.0


def test_bench_api_refuses_bad_options() -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["bench", "--api", "--workers", "one"]) == 2
        assert main(["bench", "--api", "--stores", "mysql"]) == 2
        with pytest.raises(SystemExit):
            main(["bench", "--api", "--seconds", "0"])
    assert "--workers" in err.getvalue() and "mysql" in err.getvalue() and "above 0" in err.getvalue()
