"""``python -m core bench --api --workers 1,2,4,8``: the HTTP API under load, on SQLite and PostgreSQL.

For each store and each worker count the bench starts ``python -m core serve --workers N`` on the
benchmark's ticket-desk workspace (``core.bench.processes``), waits until every worker has loaded,
then runs clients that send two-turn conversations opening a ticket (a side-effecting tool), each
conversation on a new session, for a fixed time: one client, ``clients`` clients sending each message as
soon as the previous reply comes (saturation: throughput), and ``clients`` clients pausing a random
think time before each message (a load the server keeps up with: latency). Figures per run: turns per
second over all clients, p50 and p95 latency of a turn as the client sees it (HTTP included); the
per-turn floor (one query embedding + one SQLite commit) is measured in the same run. The load
generator runs on the same machine and takes a share of the cores, kept small (the standard library's
HTTP client).
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

from core.bench.processes import write_workspace
from core.bench.turns import _percentile, floor_ms
from core.state.sessions.pgserver import free_port

READY_WAIT_S = 600.0
THINK_MS = 100.0  # the paced clients' mean pause before a message (people take seconds: this is a busy desk)


class ApiServer:
    """``python -m core serve`` in a child process (the benchmark's and the tests'), ready when all its
    workers have started."""

    def __init__(self, workspace: Path, workers: int, state_url: str, token: str = "") -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "SOP_STATE_URL": state_url, "SOP_API_TOKEN": token, "HF_HUB_OFFLINE": "1"}
        root = Path(__file__).resolve().parents[2]
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


def _load(base: str, clients: int, seconds: float, tag: str, think_ms: float = 0.0) -> dict[str, Any]:
    """``clients`` threads sending two-turn conversations for ``seconds``, each conversation a new session
    (a desk serving many customers), each client over a kept-alive connection of its own; ``think_ms``
    is the mean of a random pause (exponential, as people's are) before each message, 0 for clients that
    send the next message as soon as the reply comes. Every client runs for the whole time, so a worker
    whose clients finish early never idles while another still works. The standard library's HTTP
    client: the load generator shares the machine's cores with the server, so it should cost little."""
    import http.client
    import json
    import random
    from urllib.parse import urlsplit

    where = urlsplit(base)
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)
    headers = {"Content-Type": "application/json"}
    deadline = [0.0]

    def client(i: int) -> None:
        pause = random.Random(i)
        conn = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port, timeout=120)
        try:
            conn.request("GET", "/health")
            conn.getresponse().read()  # the connection is open before the clock starts
            start.wait()
            n = 0
            while time.perf_counter() < deadline[0]:
                for text in ("I need to open a ticket", f"printer {tag}-{i}-{n} is jammed"):
                    if think_ms:
                        time.sleep(pause.expovariate(1000.0 / think_ms))
                    body = json.dumps({"text": text})
                    t0 = time.perf_counter()
                    conn.request("POST", f"/sessions/{tag}-c{i}-{n}/messages", body=body, headers=headers)
                    response = conn.getresponse()
                    answer = response.read()
                    took = (time.perf_counter() - t0) * 1000
                    with lock:
                        (latencies.append(took) if response.status == 200
                         else failures.append(answer[:200].decode("utf-8", "replace")))
                n += 1
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    deadline[0] = t0 + seconds
    start.wait()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    return {"turns": len(latencies), "failed": len(failures), "seconds": round(elapsed, 2),
            "turns_per_s": round(len(latencies) / elapsed, 1) if elapsed else 0.0,
            "p50_ms": round(_percentile(latencies, 0.5), 1) if latencies else None,
            "p95_ms": round(_percentile(latencies, 0.95), 1) if latencies else None,
            "first_failure": failures[0] if failures else ""}


def run_api_bench(workers: list[int], stores: list[str], clients: int = 8, seconds: float = 10.0,
                  think_ms: float = THINK_MS) -> dict[str, Any]:
    """One row per store and worker count, each load running ``seconds``: one client, ``clients`` clients
    sending as fast as replies come (throughput, latency at saturation) and ``clients`` clients pausing
    ``think_ms`` on average before each message (latency at a load the server can keep up with); the
    floor measured in the same run."""
    from core.retrieval.embedding import CachedEmbedder, shared_model
    from core.state.sessions.pgserver import LocalPostgres, wait_ready

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
                        _load(server.base, 2 * n, min(2.0, seconds), f"warm{n}")  # every worker's first turns
                        one = _load(server.base, 1, seconds, f"one{n}")
                        many = _load(server.base, clients, seconds, f"many{n}")
                        paced = _load(server.base, clients, seconds, f"paced{n}", think_ms)
                    finally:
                        server.stop()
                    rows.append({"store": store, "workers": n, "clients": clients, **many,
                                 "failed": many["failed"] + one["failed"] + paced["failed"],
                                 "first_failure": many["first_failure"] or one["first_failure"]
                                 or paced["first_failure"],
                                 "single_client_p95_ms": one["p95_ms"], "single_client_turns_per_s": one["turns_per_s"],
                                 "p95_vs_single": _ratio(many["p95_ms"], one["p95_ms"]),
                                 # Little's law: clients that always have a message out wait this long on
                                 # average at this throughput, however the server schedules them
                                 "saturated_mean_floor_ms": round(1000 * clients / many["turns_per_s"], 1)
                                 if many["turns_per_s"] else None,
                                 "think_ms": think_ms, "paced_turns_per_s": paced["turns_per_s"],
                                 "paced_p95_ms": paced["p95_ms"],
                                 "paced_vs_single": _ratio(paced["p95_ms"], one["p95_ms"])})
            finally:
                if pg is not None:
                    pg.stop()
    for row in rows:
        base = next((r for r in rows if r["store"] == row["store"] and r["workers"] == min(workers)), None)
        row["speedup"] = round(row["turns_per_s"] / base["turns_per_s"], 2) if base and base["turns_per_s"] else None
    return {"floor_ms": round(floor, 2), "cores": os.cpu_count(), "rows": rows}


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def format_api_bench(result: dict[str, Any]) -> str:
    rows = result["rows"]
    clients = rows[0]["clients"] if rows else 0
    think = rows[0]["think_ms"] if rows else THINK_MS
    lines = [f"HTTP API on {result['cores']} cores; floor (1 embedding + 1 SQLite commit) {result['floor_ms']} ms",
             f"saturated: {clients} clients sending as soon as a reply comes (mean latency can be no less than "
             f"{clients} / turns per second: 'queue' ms); paced: {clients} clients pausing {think:g} ms on average "
             "before each message",
             f"{'store':<9} {'workers':>7} {'turns/s':>8} {'speedup':>7} {'p50 ms':>7} {'p95 ms':>7} {'queue':>6} "
             f"{'1-client p95':>12} {'sat/1-client':>12} {'paced p95':>9} {'paced/1-client':>14} {'failed':>6}"]
    for r in rows:
        lines.append(f"{r['store']:<9} {r['workers']:>7} {r['turns_per_s']:>8} {r['speedup']!s:>7} {r['p50_ms']!s:>7} "
                     f"{r['p95_ms']!s:>7} {r['saturated_mean_floor_ms']!s:>6} {r['single_client_p95_ms']!s:>12} "
                     f"{r['p95_vs_single']!s:>12} {r['paced_p95_ms']!s:>9} {r['paced_vs_single']!s:>14} "
                     f"{r['failed']:>6}")
        if r["first_failure"]:
            lines.append(f"  first failure: {r['first_failure']}")
    return "\n".join(lines)
