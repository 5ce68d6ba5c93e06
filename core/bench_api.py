"""``python -m core bench --api --workers 1,2,4,8``: the HTTP API under load, on SQLite and PostgreSQL.

For each store and each worker count the bench starts ``python -m core serve --workers N`` on the
benchmark's ticket-desk workspace (``core.bench_processes``), waits until every worker has loaded,
then runs concurrent clients, each on a session of its own sending two-turn conversations that open
a ticket (a side-effecting tool). Figures per run: turns per second over all clients, p50 and p95
latency of a turn as the client sees it (HTTP included), with one client (the single-client p95) and
with ``clients`` clients; the per-turn floor (one query embedding + one SQLite commit) is measured in
the same run. The load generator runs on the same machine, so it takes a share of the cores too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from core.bench import _percentile, floor_ms
from core.bench_processes import write_workspace
from core.store.pgserver import free_port

READY_WAIT_S = 600.0


class ApiServer:
    """``python -m core serve`` in a child process (the benchmark's and the tests'), ready when all its
    workers have started."""

    def __init__(self, workspace: Path, workers: int, state_url: str, token: str = "") -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "SOP_STATE_URL": state_url, "SOP_API_TOKEN": token, "HF_HUB_OFFLINE": "1"}
        root = Path(__file__).resolve().parents[1]
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([sys.executable, "-m", "core", "serve", "--workspace", str(workspace),
                                      "--port", str(self.port), "--workers", str(workers), "--log-level", "info"],
                                     cwd=root, env=env, stdout=self.log, stderr=subprocess.STDOUT, text=True)
        self.workers = workers

    def wait_ready(self, timeout_s: float = READY_WAIT_S) -> None:
        """Until every worker has loaded its workspaces (RuntimeError with the server's log if it stops)."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.log.seek(0)
            text = self.log.read()
            if text.count("Application startup complete") >= self.workers:
                return
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the API did not start: {text[-2000:]}")
            time.sleep(0.3)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.log.close()


def _load(base: str, clients: int, conversations: int, tag: str) -> dict[str, Any]:
    """``clients`` threads, each ``conversations`` two-turn conversations on a session of its own."""
    import httpx

    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(clients)

    def client(i: int) -> None:
        with httpx.Client(base_url=base, timeout=120) as http:
            http.get("/health")  # the connection is open before the clock starts
            start.wait()
            for n in range(conversations):
                for text in ("I need to open a ticket", f"printer {tag}-{i}-{n} is jammed"):
                    t0 = time.perf_counter()
                    r = http.post(f"/sessions/{tag}-c{i}/messages", json={"text": text})
                    took = (time.perf_counter() - t0) * 1000
                    with lock:
                        (latencies.append(took) if r.status_code == 200 else failures.append(r.text[:200]))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    return {"turns": len(latencies), "failed": len(failures), "seconds": round(elapsed, 2),
            "turns_per_s": round(len(latencies) / elapsed, 1) if elapsed else 0.0,
            "p50_ms": round(_percentile(latencies, 0.5), 1) if latencies else None,
            "p95_ms": round(_percentile(latencies, 0.95), 1) if latencies else None,
            "first_failure": failures[0] if failures else ""}


def run_api_bench(workers: list[int], stores: list[str], clients: int = 8, conversations: int = 15) -> dict[str, Any]:
    """One row per store and worker count; the floor measured in the same run."""
    from core.retrieval import CachedEmbedder, shared_model
    from core.store.pgserver import LocalPostgres, wait_ready

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="sop-bench-api-") as tmp:
        tmpdir = Path(tmp)
        floor = floor_ms(CachedEmbedder(shared_model(), None), tmpdir)
        for store in stores:
            pg = LocalPostgres(max_connections=400).start() if store == "postgres" else None
            try:
                for n in workers:
                    ws = write_workspace(tmpdir / f"ws-{store}-{n}")
                    if pg is not None:
                        wait_ready(pg.url)
                        url = pg.url
                    else:
                        url = f"sqlite:///{tmpdir / f'{store}-{n}.sqlite'}"
                    server = ApiServer(ws, n, url)
                    try:
                        server.wait_ready()
                        _load(server.base, 2 * n, 3, f"warm{n}")  # every worker's first turns (caches, pools)
                        one = _load(server.base, 1, conversations, f"one{n}")
                        many = _load(server.base, clients, conversations, f"many{n}")
                    finally:
                        server.stop()
                    rows.append({"store": store, "workers": n, "clients": clients, **many,
                                 "single_client_p95_ms": one["p95_ms"], "single_client_turns_per_s": one["turns_per_s"],
                                 "p95_vs_single": round(many["p95_ms"] / one["p95_ms"], 2)
                                 if many["p95_ms"] and one["p95_ms"] else None})
            finally:
                if pg is not None:
                    pg.stop()
    for row in rows:
        base = next((r for r in rows if r["store"] == row["store"] and r["workers"] == min(workers)), None)
        row["speedup"] = round(row["turns_per_s"] / base["turns_per_s"], 2) if base and base["turns_per_s"] else None
    return {"floor_ms": round(floor, 2), "cores": os.cpu_count(), "rows": rows}


def format_api_bench(result: dict[str, Any]) -> str:
    lines = [f"HTTP API, {result['rows'][0]['clients'] if result['rows'] else 0} concurrent clients on "
             f"{result['cores']} cores; floor (1 embedding + 1 SQLite commit) {result['floor_ms']} ms",
             f"{'store':<9} {'workers':>7} {'turns/s':>8} {'speedup':>7} {'p50 ms':>7} {'p95 ms':>7} "
             f"{'1-client p95':>12} {'p95/1-client':>12} {'failed':>6}"]
    for r in result["rows"]:
        lines.append(f"{r['store']:<9} {r['workers']:>7} {r['turns_per_s']:>8} {r['speedup']!s:>7} {r['p50_ms']!s:>7} "
                     f"{r['p95_ms']!s:>7} {r['single_client_p95_ms']!s:>12} {r['p95_vs_single']!s:>12} "
                     f"{r['failed']:>6}")
        if r["first_failure"]:
            lines.append(f"  first failure: {r['first_failure']}")
    return "\n".join(lines)
