"""``python -m core bench --memory``: resident memory of a serving worker, and what it is made of.

The bench starts ``python -m core serve --workers N`` on a workspace (the demo store by default), waits
until every worker has loaded it, sends conversations over HTTP from several clients (each conversation
on a new connection, so the kernel spreads them over the workers), then reads each worker process's
memory from ``/proc``: ``VmRSS`` (resident), ``VmHWM`` (the most it was resident at once), and from
``smaps_rollup`` its PSS (shared pages divided among the processes sharing them) and USS (pages only it
holds: what stopping it would give back).

The breakdown runs the same steps in a child process of its own and reads its resident memory after
each one: the interpreter, the imports a worker makes, the embedding model (loaded and run once), the
workspace and its engine, the turns; then what is resident at the end, by where it is mapped (anonymous
memory: Python objects, arrays, the runtime's buffers; file-backed: each package's shared libraries).
"""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

MB = 1024 * 1024
CONVERSATIONS = [
    ["Recommend a gaming mouse for {name}", "{budget}", "Is the one you just recommended in stock?",
     "I'd like the second one"],
    ["My laptop keeps freezing since {n} minutes", "Lenovo Legion {n}, it freezes when gaming"],
    ["Where is my order {n}?", "What is your return policy, {name}?"],
    ["อยากได้เมาส์ไร้สาย งบ {budget} บาท", "มีของไหม"],
]
NAMES = ("Alice", "Bruno", "Chai", "Dara", "Emil", "Fah", "Gita", "Hugo")


def conversation(i: int) -> list[str]:
    """The ``i``-th conversation: a new number and name in its messages, so no embedding is cached."""
    template = CONVERSATIONS[i % len(CONVERSATIONS)]
    name = f"{NAMES[i % len(NAMES)]} {i}"
    return [t.format(name=name, n=4711 + 37 * i + j, budget=1500 + 10 * i + j) for j, t in enumerate(template)]


def process_memory(pid: int | str = "self") -> dict[str, float]:
    """A process's memory in MB: ``rss`` and ``peak`` (VmRSS, VmHWM) from ``/proc/<pid>/status``, ``pss``
    and ``uss`` from ``/proc/<pid>/smaps_rollup`` (absent where the kernel has no such file)."""
    out = status_memory(Path(f"/proc/{pid}/status").read_text())
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return out
    kb = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+):\s+(\d+) kB", rollup, re.M)}
    out["pss"] = round(kb.get("Pss", 0) / 1024, 1)
    out["uss"] = round((kb.get("Private_Clean", 0) + kb.get("Private_Dirty", 0)) / 1024, 1)
    return out


def status_memory(status: str) -> dict[str, float]:
    """``rss`` and ``peak`` in MB from the text of a ``/proc/<pid>/status`` file."""
    fields: dict[str, int] = {}
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return {"rss": round(fields["VmRSS"] / 1024, 1), "peak": round(fields["VmHWM"] / 1024, 1)}


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return sorted(found)


def worker_pids(server_pid: int, workers: int) -> list[int]:
    """The serving processes of ``python -m core serve``: the server itself with one worker, else its
    spawned children (multiprocessing's resource tracker is not one)."""
    if workers == 1:
        return [server_pid]
    pids = []
    for pid in children(server_pid):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if "resource_tracker" not in cmdline:
            pids.append(pid)
    return pids


def send_turns(base: str, conversations: int, clients: int = 4) -> dict[str, int]:
    """``conversations`` conversations over HTTP from ``clients`` threads, each on a new connection and a new
    session; the count of turns answered and failed."""
    from urllib.parse import urlsplit

    where = urlsplit(base)
    counts = {"turns": 0, "failed": 0}
    lock = threading.Lock()
    todo = list(range(conversations))

    def client() -> None:
        while True:
            with lock:
                if not todo:
                    return
                i = todo.pop()
            conn = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port, timeout=120)
            try:
                for text in conversation(i):
                    conn.request("POST", f"/sessions/mem-{i}/messages", body=json.dumps({"text": text}),
                                 headers={"Content-Type": "application/json"})
                    response = conn.getresponse()
                    response.read()
                    with lock:
                        counts["turns" if response.status == 200 else "failed"] += 1
            finally:
                conn.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return counts


def measure_workers(workspace: Path, workers: int, conversations: int) -> dict[str, Any]:
    """Start the API on ``workspace`` with ``workers`` processes, send the conversations, read each worker's
    memory."""
    from core.bench.api import ApiServer

    with tempfile.TemporaryDirectory(prefix="sop-bench-memory-") as tmp:
        server = ApiServer(workspace, workers, f"sqlite:///{Path(tmp) / 'sessions.sqlite'}")
        try:
            server.wait_ready()
            loaded = {pid: process_memory(pid) for pid in worker_pids(server.proc.pid, workers)}
            sent = send_turns(server.base, conversations)
            time.sleep(0.5)  # replies are read before their turn's last bookkeeping: let it finish
            pids = worker_pids(server.proc.pid, workers)
            rows = [{"pid": pid, "loaded": loaded.get(pid, {}), **process_memory(pid)} for pid in pids]
        finally:
            server.stop()
    return {"workers": rows, **sent}


def stages(workspace: Path, conversations: int, started: dict[str, float] | None = None) -> dict[str, Any]:
    """In this process: the resident memory after each step a serving worker takes (MB), and what is resident
    at the end by where it is mapped. ``started``: the memory read before anything was imported."""
    out: list[dict[str, Any]] = [{"stage": "interpreter", **(started or process_memory())}]

    def mark(stage: str, started: float) -> None:
        out.append({"stage": stage, "seconds": round(time.perf_counter() - started, 2), **process_memory()})

    t0 = time.perf_counter()
    import uvicorn  # noqa: F401 - what a worker imports before it loads anything

    from core.retrieval.embedding import shared_model
    from core.server.served import Served, workspace_name

    mark("imports", t0)
    t0 = time.perf_counter()
    shared_model().embed(["the model's first sentence"])
    mark("model", t0)
    t0 = time.perf_counter()
    served = Served({workspace_name(workspace): workspace}, workspace_name(workspace))
    served.load()  # as a worker loads: the workspace's embedding cache, the state store from SOP_STATE_URL
    if not served.ready.is_set():
        raise RuntimeError(served.error)
    mark("workspace", t0)
    t0 = time.perf_counter()
    orch = served.engines[served.default]
    turns = 0
    for i in range(conversations):
        for text in conversation(i):
            orch.handle_message(f"mem-{i}", text)
            turns += 1
    mark("turns", t0)
    served.close()
    return {"stages": out, "turns": turns, "mapped": mapped(), "modules": len(sys.modules)}


def mapped(pid: int | str = "self", top: int = 8) -> list[dict[str, Any]]:
    """Resident memory by where it is mapped (MB, largest first): ``anonymous`` (the heap and anonymous
    mappings: Python objects, arrays, native buffers), ``other files`` below ``top``, and each package whose
    files (shared libraries, a memory-mapped model) are resident."""
    sizes: dict[str, int] = {}
    name = "anonymous"
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        first = line.split(maxsplit=5)
        if len(first) >= 5 and "-" in first[0] and not first[0].endswith(":"):
            name = _owner(first[5] if len(first) > 5 else "")
        elif line.startswith("Rss:"):
            sizes[name] = sizes.get(name, 0) + int(line.split()[1])
    ranked = sorted(sizes.items(), key=lambda kv: -kv[1])
    shown = [{"where": k, "mb": round(v / 1024, 1)} for k, v in ranked[:top]]
    rest = sum(v for _, v in ranked[top:])
    return shown + ([{"where": "other files", "mb": round(rest / 1024, 1)}] if rest else [])


def _owner(path: str) -> str:
    """What a mapping belongs to: a package below site-packages, a system library, or anonymous memory."""
    path = path.strip()
    if not path or path.startswith("[") or path.startswith("/memfd:") or path.startswith("/dev/"):
        return "anonymous"
    if "site-packages/" in path:
        package = path.split("site-packages/", 1)[1].split("/", 1)[0]
        return re.sub(r"\.libs$", "", package).split(".")[0]
    if "/python3" in path and "/lib" in path:
        return "python"
    return Path(path).name.split(".so")[0]


def run_memory_bench(workspace: str | Path, workers: int = 2, conversations: int = 24) -> dict[str, Any]:
    """Each serving worker's memory after ``conversations`` conversations over HTTP, and the breakdown of one
    worker's steps (measured in a child process of its own)."""
    root = Path(workspace).resolve()
    served = measure_workers(root, workers, conversations)
    with tempfile.TemporaryDirectory(prefix="sop-bench-memory-") as tmp:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "SOP_STATE_URL": f"sqlite:///{Path(tmp) / 'sessions.sqlite'}"}
        if workers > 1:  # as `serve` sets for its workers
            env.setdefault("OMP_NUM_THREADS", "1")
            env.setdefault("MKL_NUM_THREADS", "1")
        done = subprocess.run([sys.executable, "-c", CHILD, str(root), str(conversations)],
                              cwd=Path(__file__).resolve().parents[2], env=env, capture_output=True, text=True,
                              timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the breakdown failed: {done.stderr[-2000:]}")
    rss = [w["rss"] for w in served["workers"]]
    return {"workspace": str(root), "workers": served["workers"], "turns": served["turns"],
            "failed": served["failed"], "max_rss_mb": max(rss) if rss else None,
            "breakdown": json.loads(done.stdout)}


def format_memory_bench(result: dict[str, Any]) -> str:
    lines = [f"python -m core serve --workers {len(result['workers'])} on {result['workspace']}: "
             f"{result['turns']} turns over HTTP ({result['failed']} failed)",
             f"{'worker pid':>10} {'RSS MB':>7} {'peak MB':>7} {'PSS MB':>7} {'USS MB':>7} {'RSS when loaded':>15}"]
    for w in result["workers"]:
        lines.append(f"{w['pid']:>10} {w['rss']:>7} {w['peak']:>7} {w.get('pss', '-')!s:>7} "
                     f"{w.get('uss', '-')!s:>7} {w['loaded'].get('rss', '-')!s:>15}")
    b = result["breakdown"]
    lines.append(f"\none worker's steps in a process of its own ({b['turns']} turns, {b['modules']} modules "
                 "imported at the end):")
    previous = 0.0
    for s in b["stages"]:
        took = f" in {s['seconds']} s" if "seconds" in s else ""
        lines.append(f"  {s['stage']:<12} RSS {s['rss']:>6} MB  (+{s['rss'] - previous:.1f}){took}")
        previous = s["rss"]
    lines.append("resident at the end, by where it is mapped:")
    lines += [f"  {m['where']:<20} {m['mb']:>6} MB" for m in b["mapped"]]
    return "\n".join(lines)


CHILD = """import sys
status = open("/proc/self/status").read()  # before anything is imported
from core.bench.memory import child_main
sys.exit(child_main(sys.argv[1:], status))
"""


def child_main(argv: list[str], status: str) -> int:
    """The breakdown's child process (``CHILD``): WORKSPACE CONVERSATIONS; prints JSON."""
    print(json.dumps(stages(Path(argv[0]), int(argv[1]), status_memory(status))))
    return 0
