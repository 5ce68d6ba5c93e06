"""``python -m core bench``: handle_message latency on replayed scenarios next to the floor."""

from __future__ import annotations

import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from core.build import build_orchestrator, load_workspace
from core.memory import LocalPreferenceMemory
from core.retrieval import CachedEmbedder, shared_model
from core.store import open_state_store

SCENARIOS = [
    ["Recommend a gaming mouse.", "1500", "Is the one you just recommended in stock?", "the first one"],
    ["My laptop keeps freezing.", "Lenovo Legion, freezes when gaming."],
    ["Recommend a laptop, budget 35k", "Is the one you just recommended in stock?",
     "My screen is frozen, what do I do?", "It's a Dell XPS 13", "never mind"],
]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[idx]


def floor_ms(embedder: CachedEmbedder, tmp: Path, n: int = 30) -> float:
    """Median of one fresh query embedding plus one SQLite commit."""
    db = sqlite3.connect(str(tmp / "floor.sqlite"))
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)")
    samples = []
    for i in range(n):
        embedder.clear_memory()
        t0 = time.perf_counter()
        embedder.embed([f"floor query number {i} about a product"])
        db.execute("INSERT OR REPLACE INTO t VALUES (?, ?)", (str(i), "x" * 2000))
        db.commit()
        samples.append((time.perf_counter() - t0) * 1000)
    db.close()
    return statistics.median(samples)


def run_bench(workspace: str, rounds: int = 5) -> dict[str, Any]:
    """Replay the scenarios ``rounds`` times on fresh sessions (no embedding cache between rounds)."""
    embedder = CachedEmbedder(shared_model(), None)
    ws = load_workspace(workspace, embedder)
    with tempfile.TemporaryDirectory(prefix="sop-bench-") as tmpdir:
        tmp = Path(tmpdir)
        store = open_state_store(f"sqlite:///{tmp}/sessions.sqlite")
        memory = LocalPreferenceMemory(tmp / "preferences.sqlite")
        orch = build_orchestrator(workspace, store=store, memory=memory, loaded=ws)
        for i, scenario in enumerate(SCENARIOS):  # warm-up
            for text in scenario:
                orch.handle_message(f"warm-{i}", text, customer_id="bench")
        latencies: list[float] = []
        for r in range(rounds):
            for i, scenario in enumerate(SCENARIOS):
                embedder.clear_memory()
                for text in scenario:
                    t0 = time.perf_counter()
                    orch.handle_message(f"r{r}-s{i}", text, customer_id=f"bench-{r}")
                    latencies.append((time.perf_counter() - t0) * 1000)
        floor = floor_ms(embedder, tmp)
        store.close()
        memory.close()
    p50, p95 = statistics.median(latencies), _percentile(latencies, 0.95)
    return {"p50_ms": round(p50, 2), "p95_ms": round(p95, 2), "floor_ms": round(floor, 2),
            "ratio": round(p95 / floor, 2) if floor else None, "turns": len(latencies)}


def compile_times(nodes: int) -> dict[int, float]:
    """Seconds to compile a generated JSON SOP of ``nodes // 10`` and of ``nodes`` steps (best of three)."""
    import json

    from core.gar import GarIndex
    from core.sop.load import compile_sop

    out: dict[int, float] = {}
    for n in dict.fromkeys([max(1, nodes // 10), nodes]):
        steps: dict[str, object] = {f"n{i}": {"type": "action", "description": f"tell the customer step {i}",
                                              "messageTemplate": f"Step {i}.", "nextNodes": [f"n{i + 1}"]}
                                    for i in range(n)}
        steps[f"n{n}"] = {"type": "end"}
        source = json.dumps({"id": "big", "startNode": "n0", "nodes": steps}, indent=1)
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            compile_sop(source + " " * _, "sops/big.json", "json", GarIndex([], None))  # a new text each time: no cache
            best = min(best, time.perf_counter() - started)
        out[n] = round(best, 4)
    return out
