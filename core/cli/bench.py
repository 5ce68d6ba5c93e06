"""The ``bench`` command: latency, first render, compile times, KB uploads, processes, the HTTP API under load and
a worker's memory (:mod:`core.bench`)."""

from __future__ import annotations

import argparse
import json
import sys

from core.cli.arguments import workspace_folder


def cmd_bench(args: argparse.Namespace) -> int:
    from core.bench.turns import run_bench

    if args.first_render:
        from core.bench.first_render import run_first_render

        try:
            shown = run_first_render(workspace_folder(args), runs=min(args.rounds, 3))
        except RuntimeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if args.json:
            print(json.dumps(shown))
        else:
            print(f"playground cold start over {len(shown['runs'])} runs (median): server up {shown['server_s']} s; "
                  f"first page shown {shown['first_render_s']} s and chat ready {shown['ready_s']} s after "
                  "the browser asked for it")
        return 0

    if args.sop_nodes:
        from core.bench.turns import compile_times

        times = compile_times(args.sop_nodes)
        print(json.dumps(times) if args.json else "compiling a JSON SOP: " + ", ".join(
            f"{n:,} nodes {s:.3f} s" for n, s in times.items()))
        return 0

    if args.kb_megabytes:
        from core.bench.turns import kb_upload_times

        shown = kb_upload_times(str(workspace_folder(args)), args.kb_megabytes)
        print(json.dumps(shown) if args.json else
              f"uploading a {shown['bytes'] / 1e6:.1f} MB KB document ({shown['chunks']} chunks): the upload returned "
              f"after {shown['upload_returned_s']} s, searchable after {shown['searchable_s']} s; "
              f"{shown['chat_turns']} chat turns meanwhile: p50 {shown['chat_turn_p50_ms']} ms, "
              f"max {shown['chat_turn_max_ms']} ms (p50 {shown['quiet_turn_p50_ms']} ms before the upload)")
        return 0 if shown["saved"] else 1

    if args.memory:
        return _bench_memory(args)

    if args.api:
        from core.bench.api import format_api_bench, run_api_bench

        try:
            counts = [int(x) for x in (args.workers or "1,2,4,8").split(",") if x.strip()]
        except ValueError:
            print(f"error: --workers takes numbers such as 1,2,4,8; got {args.workers!r}", file=sys.stderr)
            return 2
        stores = [s.strip() for s in args.stores.split(",") if s.strip()]
        unknown = [s for s in stores if s not in ("sqlite", "postgres")]
        if unknown or not counts or min(counts) < 1:
            print(f"error: --stores takes sqlite and/or postgres, --workers positive numbers; got "
                  f"{args.stores!r}, {args.workers!r}", file=sys.stderr)
            return 2
        api = run_api_bench(counts, stores, clients=args.clients, seconds=args.seconds, think_ms=args.think_ms)
        print(json.dumps(api) if args.json else format_api_bench(api))
        return 0 if all(r["failed"] == 0 for r in api["rows"]) else 1

    if args.soak_kills:
        from core.bench.kills import format_soak, run_kill_soak

        try:
            soak = run_kill_soak(args.soak_kills)
        except RuntimeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(json.dumps(soak) if args.json else format_soak(soak))
        return 0 if soak["unrecorded"] == 0 and soak["wrong_turn"] == 0 else 1

    if args.processes:
        from core.bench.processes import format_result, run_processes

        shown = [run_processes(n, args.conversations or 25, same_session=same)
                 for n in dict.fromkeys([1, args.processes]) for same in (True, False) if n > 1 or same]
        print(json.dumps(shown) if args.json else "\n".join(format_result(r) for r in shown))
        return 0 if all(r["errors"] == 0 and r["lost"] == 0 and r["orphans"] == 0 and r["wrong_turn"] == 0
                        for r in shown) else 1

    result = run_bench(str(workspace_folder(args)), rounds=args.rounds, cached=args.cached,
                       session_turns=args.session_turns)
    if args.json:
        print(json.dumps(result))
    else:
        r = result
        print(f"embedding one new sentence with {r['backend']}: p50 {r['embed_p50_ms']} ms, p95 {r['embed_p95_ms']} ms "
              f"(torch: p50 {r['torch_embed_p50_ms']} ms, p95 {r['torch_embed_p95_ms']} ms)\n"
              f"handle_message over {r['turns']} turns ({r['messages']} messages): p50 {r['p50_ms']} ms, "
              f"p95 {r['p95_ms']} ms; floor (1 embedding + 1 SQLite commit) {r['floor_ms']} ms with {r['backend']}, "
              f"{r['torch_floor_ms']} ms with torch; p95/floor = {r['ratio']} ({r['torch_ratio']} against torch's)")
        if "model_1_slot_p50_ms" in r:
            print(f"learned reader: {r['model_calls']} runs in those turns, {r['model_ms']} ms in all "
                  f"({100 * r['model_share']:.1f}% of their time); one run on one thread: p50 "
                  f"{r['model_1_slot_p50_ms']} ms for 1 slot, {r['model_5_slot_p50_ms']} ms for 5 slots")
        else:
            print("learned reader: off or missing (SOP_READER_MODEL), the rules read alone")
        if r.get("session_turns"):
            print(f"one session of {r['session_turns']} turns: median of turns 1-{r['session_block']} "
                  f"{r['session_first_ms']} ms, of turns {r['session_turns'] - r['session_block'] + 1}-"
                  f"{r['session_turns']} {r['session_last_ms']} ms "
                  f"({r['session_ratio']}x); {r['session_hot_goals']} of its {r['session_goals']} requests in its "
                  "working state")
        print(f"this process's resident memory after the run: {r['resident_mb']} MB (a serving worker's: "
              "python -m core bench --memory)")
    return 0


def _bench_memory(args: argparse.Namespace) -> int:
    """``bench --memory``: each serving worker's resident memory and a breakdown of what it holds."""
    from core.bench.memory import format_memory_bench, run_memory_bench

    raw = (args.workers or "2").strip()
    if not raw.isdigit() or int(raw) < 1:
        print(f"error: with --memory, --workers takes one number of worker processes; got {raw!r}", file=sys.stderr)
        return 2
    try:
        shown = run_memory_bench(workspace_folder(args), workers=int(raw), conversations=args.conversations or 24)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(shown) if args.json else format_memory_bench(shown))
    return 0 if shown["failed"] == 0 and shown["turns"] else 1
