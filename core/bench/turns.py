"""``python -m core bench``: handle_message latency on replayed scenarios next to the floor."""

from __future__ import annotations

import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from core.engine.build import build_orchestrator, load_workspace
from core.retrieval.embedding import CachedEmbedder, Embedder, MiniLMEmbedder, shared_model
from core.shared.resident import resident_mb
from core.state.memory import LocalPreferenceMemory
from core.state.sessions import open_state_store
from core.understanding import READER_USAGE, SlotWords, learned_reader

SCENARIOS = [
    ["Recommend a gaming mouse.", "1500", "Is the one you just recommended in stock?", "the first one"],
    ["My laptop keeps freezing.", "Lenovo Legion, freezes when gaming."],
    ["Recommend a laptop, budget 35k", "Is the one you just recommended in stock?",
     "My screen is frozen, what do I do?", "It's a Dell XPS 13", "never mind"],
]

FRESH_SCENARIOS = [
    ["Recommend a gaming mouse for {name}.", "{budget}", "Is the one you just recommended in stock, {name}?",
     "the second one, order {n}"],
    ["My laptop keeps freezing since {n} minutes.", "Lenovo Legion {n}, freezes when gaming."],
    ["Recommend a laptop for {name}, budget {budget}", "Is the one you just recommended in stock, {name}?",
     "My screen is frozen since {n} minutes, what do I do?", "It's a Dell XPS {n}", "never mind, {name}"],
]
NAMES = ("Alice", "Bruno", "Chai", "Dara", "Emil", "Fah", "Gita", "Hugo", "Ines", "Jun", "Kamal", "Lena")


def fresh_scenarios(round_: int) -> list[list[str]]:
    """The scenarios with a new number and name in every message of ``round_``: no embedding cache hits."""
    out = []
    for i, scenario in enumerate(FRESH_SCENARIOS):
        n = 1000 * round_ + 100 * i + 17
        name = f"{NAMES[(round_ + i) % len(NAMES)]} {NAMES[(7 * round_ + i + 1) % len(NAMES)]}{round_}"
        out.append([t.format(name=name, n=n + j, budget=1500 + 10 * round_ + j) for j, t in enumerate(scenario)])
    return out


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


def embedding_ms(model: Embedder, n: int = 100) -> tuple[float, float]:
    """p50 and p95 of embedding one new sentence (a new number in each), after a warm-up."""
    model.embed(["warm up the embedding model"])
    samples = []
    for i in range(n):
        started = time.perf_counter()
        model.embed([f"Where is my order {4711 + 37 * i}, placed {i % 28 + 1} days ago?"])
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples), _percentile(samples, 0.95)


def embedding_figures(n: int = 100) -> dict[str, Any]:
    """The embedding backend in use and its per-sentence latency beside torch's in the same run, and
    each one's floor (one embedding plus one SQLite commit)."""
    model = shared_model()
    torch_model = model if model.backend == "torch" else MiniLMEmbedder("torch")
    out: dict[str, Any] = {"backend": model.backend}
    with tempfile.TemporaryDirectory(prefix="sop-bench-emb-") as tmpdir:
        for name, each in (("", model), ("torch_", torch_model)):
            p50, p95 = embedding_ms(each, n)
            out[f"{name}embed_p50_ms"], out[f"{name}embed_p95_ms"] = round(p50, 2), round(p95, 2)
            sub = Path(tmpdir) / (name or "current")
            sub.mkdir()
            out[f"{name}floor_ms"] = round(floor_ms(CachedEmbedder(each, None), sub), 2)
    return out


def run_bench(workspace: str, rounds: int = 5, cached: bool = False, session_turns: int = 300) -> dict[str, Any]:
    """Replay the scenarios ``rounds`` times on fresh sessions. By default every message carries a new number
    or name, so its embedding is never cached; ``cached`` replays the same messages, whose embeddings are
    then cached after the warm-up (what a repeated message costs)."""
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
        READER_USAGE.reset()
        for r in range(rounds):
            for i, scenario in enumerate(SCENARIOS if cached else fresh_scenarios(r)):
                for text in scenario:
                    t0 = time.perf_counter()
                    orch.handle_message(f"r{r}-s{i}", text, customer_id=f"bench-{r}")
                    latencies.append((time.perf_counter() - t0) * 1000)
        model = {"model_calls": READER_USAGE.calls, "model_ms": round(1000 * READER_USAGE.seconds, 2),
                 "model_share": round(1000 * READER_USAGE.seconds / sum(latencies), 4) if latencies else 0.0,
                 **learned_call_ms()}
        long = long_session(orch, session_turns) if session_turns else {}
        resident = resident_mb()  # this process: the model, the workspace and the sessions it served
        store.close()
        memory.close()
    figures = embedding_figures()
    p50, p95 = statistics.median(latencies), _percentile(latencies, 0.95)
    floor = figures["floor_ms"]
    return {"messages": "cached" if cached else "fresh", "p50_ms": round(p50, 2), "p95_ms": round(p95, 2),
            **figures, "ratio": round(p95 / floor, 2) if floor else None,
            "torch_ratio": round(p95 / figures["torch_floor_ms"], 2) if figures["torch_floor_ms"] else None,
            "turns": len(latencies), **model, **long, "resident_mb": round(resident, 1)}


def learned_call_ms(n: int = 30) -> dict[str, Any]:
    """The learned reader's cost of one call on one thread (p50 in ms), for one slot and for five slots of a
    turn; empty when the model is off or missing."""
    reader = learned_reader()
    if reader is None:
        return {}
    slots = [SlotWords(name, what) for name, what in (
        ("destination", "the city to travel to"), ("date", "the day of travel"), ("party_size", "the number of guests"),
        ("name", "the name on the booking"), ("budget", "the most to spend"))]
    out: dict[str, Any] = {}
    for k in (1, 5):
        timings = []
        for i in range(n):
            t0 = time.perf_counter()
            reader.spans(slots[:k], "Where would you like to go?", f"to Porto on the {i % 28 + 1}th for two, please")
            timings.append((time.perf_counter() - t0) * 1000)
        out[f"model_{k}_slot_p50_ms"] = round(statistics.median(timings), 2)
    return out


def long_session(orch: Any, turns: int) -> dict[str, Any]:
    """One session of ``turns`` turns: the fresh scenarios one after another (each opens a request, most
    finish it), so finished requests pile up as in a long chat. The cost of the first turns against the last:
    the median over the same number of whole passes over the scenarios at the start and at the end (three
    passes, 33 turns, when the session is long enough), so both cover the same kinds of turns and one slow
    turn on a busy machine does not decide the figure."""
    passes = sum(len(scenario) for scenario in FRESH_SCENARIOS)
    size = passes * max(1, min(3, turns // (2 * passes)))
    timings: list[float] = []
    for n in range(turns):
        block = [text for scenario in fresh_scenarios(100 + n // passes) for text in scenario]  # new words each pass
        t0 = time.perf_counter()
        orch.handle_message("long-session", block[n % passes], customer_id="bench-long")
        timings.append((time.perf_counter() - t0) * 1000)
    first = statistics.median(timings[:size])
    last = statistics.median(timings[-size:])
    hot, whole = orch.store.load("long-session"), orch.load_state("long-session")
    return {"session_turns": turns, "session_block": size, "session_first_ms": round(first, 2),
            "session_last_ms": round(last, 2), "session_ratio": round(last / first, 2) if first else None,
            "session_hot_goals": len(hot.goals) if hot is not None else 0,
            "session_goals": len(whole.goals) if whole is not None else 0}


def compile_times(nodes: int) -> dict[int, float]:
    """Seconds to compile a generated JSON SOP of ``nodes // 10`` and of ``nodes`` steps (best of three)."""
    import json

    from core.sop.load import compile_sop
    from core.workspace.gar import GarIndex

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


def _generated_document(size: int, seed: int = 11) -> str:
    """A Markdown help article of about ``size`` bytes: sections of generated sentences (distinct texts)."""
    import random

    words = ("order parcel refund label warranty battery charger screen cable courier invoice account "
             "password store voucher exchange repair receipt delivery address payment card size colour "
             "week day hours team form number box item model manual update setting reset button light").split()
    rng = random.Random(seed)
    parts, total, n = ["# Generated help article"], 0, 0
    while total < size:
        n += 1
        section = [f"## Topic {n}: {' '.join(rng.sample(words, 3))}"]
        for _ in range(3):
            section.append(" ".join(f"The {rng.choice(words)} {rng.choice(words)} needs a {rng.choice(words)} "
                                    f"within {rng.randint(2, 90)} days of the {rng.choice(words)}."
                                    for _ in range(4)))
        text = "\n\n".join(section)
        parts.append(text)
        total += len(text) + 2
    return "\n\n".join(parts) + "\n"


def kb_upload_times(workspace: str, megabytes: float = 2.0) -> dict[str, Any]:
    """Upload a generated KB document of ``megabytes`` to a copy of ``workspace`` through the playground:
    seconds until the upload call returns, until the document is searchable, and one chat turn's
    latency while it is being indexed (nothing cached: a fresh copy and embedding cache)."""
    import shutil
    import threading

    from core.playground.service import Playground

    with tempfile.TemporaryDirectory(prefix="sop-bench-kb-") as tmpdir:
        root = Path(tmpdir) / "ws"
        shutil.copytree(workspace, root, ignore=shutil.ignore_patterns(".state", ".changes", "__pycache__"))
        pg = Playground(root)
        shared_model().embed(["warm up"])
        doc = _generated_document(int(megabytes * 1_000_000)).encode("utf-8")
        turn_ms: list[float] = []
        done = threading.Event()

        def chat(n: int, pause: float) -> None:
            sid = pg.chat.new_session_id()
            for _ in range(n):
                if done.is_set():
                    return
                started = time.perf_counter()
                pg.chat.send(sid, f"How long does a refund take after {len(turn_ms) + 2} days?")  # a new text each time
                turn_ms.append((time.perf_counter() - started) * 1000)
                time.sleep(pause)

        chat(10, 0.0)
        quiet = statistics.median(turn_ms)
        turn_ms.clear()
        chat_meanwhile = lambda: chat(20, 0.5)  # noqa: E731

        chatter = threading.Thread(target=chat_meanwhile, daemon=True)
        started = time.perf_counter()
        chatter.start()
        result = pg.store.upload_kb([("generated-article.md", doc)])
        returned = time.perf_counter() - started
        kb_wait = getattr(pg, "wait_for_kb", None)
        if kb_wait is not None:
            kb_wait()
        searchable = time.perf_counter() - started
        done.set()
        chatter.join(timeout=60)
        chunks = sum(d["chunks"] for d in pg.store.kb_documents() if d["file"] == "kb/generated-article.md")
        pg.close()
    return {"bytes": len(doc), "saved": result.saved, "chunks": chunks, "upload_returned_s": round(returned, 2),
            "searchable_s": round(searchable, 2), "quiet_turn_p50_ms": round(quiet, 1),
            "chat_turn_p50_ms": round(statistics.median(turn_ms), 1) if turn_ms else None,
            "chat_turn_max_ms": round(max(turn_ms), 1) if turn_ms else None, "chat_turns": len(turn_ms)}
