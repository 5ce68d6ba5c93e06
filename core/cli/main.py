"""Command line: chat, test, lint, eval, bench (``python -m core --help``)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.shared.errors import SopError, UserInputError
from core.shared.problems import errors
from core.understanding.commands import reading_lines
from core.understanding.domain.commerce import OFFERED
from core.workspace.paths import read_text_file

if TYPE_CHECKING:
    from core.evaluation.coverage import SopCoverage


def _ws(args: argparse.Namespace) -> Path:
    return Path(args.workspace)


def cmd_chat(args: argparse.Namespace) -> int:
    from core.engine.build import build_orchestrator

    orch = build_orchestrator(_ws(args), brain=args.brain)
    session = args.session or f"cli-{uuid.uuid4().hex[:8]}"
    print(f"{orch.store_name}: chatting in session {session}. Type 'quit' to leave.")
    while True:
        try:
            text = input("you> ").strip()
        except (EOFError, KeyboardInterrupt):
            print()
            return 0
        if text.lower() in ("quit", "exit", ":q"):
            return 0
        if not text:
            continue
        reply = orch.handle_message(session, text, customer_id=args.customer)
        print(f"bot> {reply}")
        if args.trace:
            _print_trace(orch.last_trace(session) or {}, orch.load_state(session))
    return 0


def _print_trace(trace: dict, state: object) -> None:
    for line in trace.get("why") or []:
        print(f"  · why: {line}")
    print(f"  · perception: {trace.get('perception')}")
    for line in reading_lines(trace.get("reading") or {}):
        print(f"  · read: {line}")
    for d in trace.get("decisions", []):
        print(f"  · decision: {d}")
    for op in trace.get("stack_ops", []):
        print(f"  · stack: {op['op']} {op['goal']} -> {op['stack']}")
    for c in trace.get("tool_calls", []):
        status = "ok" if c["ok"] else f"{c['error_kind']}: {c['error']}"
        print(f"  · tool: {c['tool']}({json.dumps(c['args'], ensure_ascii=False)}) {status} {c['latency_ms']}ms")
    goal = getattr(state, "active_goal", None)
    if goal is not None:
        print(f"  · goal: {goal.type} {goal.status.value} missing={goal.missing} slots="
              f"{ {k: v for k, v in goal.slots.items() if k != OFFERED} }")


def cmd_test(args: argparse.Namespace) -> int:
    from core.evaluation.testing import WorkspaceCache, collect, run_file

    files = collect(args.paths)
    if not files:
        raise UserInputError("no conversation test files found")
    cache = WorkspaceCache()
    default = _ws(args) if args.workspace_given else None
    results = [run_file(f, default or _ws(args), cache) for f in files]
    passed = sum(r.passed for r in results)
    report: dict[str, Any] = {"passed": passed, "failed": len(results) - passed,
                              "files": [r.as_dict() for r in results]}
    measure = args.coverage or args.min_coverage is not None
    found: list[SopCoverage] = []
    percent = 100.0
    if measure:
        from core.evaluation.coverage import overall, step_coverage

        found = step_coverage(results, {r.workspace: cache.get(Path(r.workspace)) for r in results if r.workspace})
        reached, total, percent = overall(found)
        report["coverage"] = {"reached": reached, "steps": total, "percent": round(percent, 1),
                              "sops": [c.as_dict() for c in found]}
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        for r in results:
            print(f"{'PASS' if r.passed else 'FAIL'}  {r.file}  ({r.name})")
            for line in r.error.splitlines():
                print(f"      error: {line}")
            for i, t in enumerate(r.turns, start=1):
                for f in t.failures:
                    print(f"      turn {i} ({t.user!r}): {f}")
        print(f"{passed} passed, {len(results) - passed} failed")
        if measure:
            _print_coverage(found)
    low = args.min_coverage is not None and percent < args.min_coverage
    if low:
        print(f"step coverage {percent:.1f}% is below --min-coverage {args.min_coverage:g}%", file=sys.stderr)
    return 0 if passed == len(results) and not low else 1


def _print_coverage(found: list[SopCoverage]) -> None:
    """Per SOP: steps reached, tests reaching each step, and the steps no test reaches with file:line."""
    from core.evaluation.coverage import overall

    reached, total, percent = overall(found)
    print(f"\nStep coverage: {reached} of {total} steps reached ({percent:.0f}%)")
    for c in found:
        where = os.path.relpath(Path(c.workspace) / c.file)
        where = str(Path(c.workspace) / c.file) if where.startswith("..") else where
        print(f"\n{c.id}  {where}: {c.reached} of {len(c.steps)} steps reached ({c.percent:.0f}%)")
        width = max((len(s.id) for s in c.steps), default=0)
        for s in c.steps:
            label = s.label if s.label != s.id else ""
            print(f"  {s.tests:>4} test{'s' if s.tests != 1 else ' '}  {s.id:<{width}}  {label}".rstrip())
        for s in c.unreached:
            label = f" ({s.label})" if s.label != s.id else ""
            print(f"  not reached: {s.id}{label}  {where}{f':{s.line}' if s.line else ''}")


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay a recording against the workspace (or, with --sop, against an edit of it) side by side."""
    from core.engine.build import load_workspace
    from core.evaluation.replay import Recording, replay
    from core.playground.changes import ChangeSet, staged

    root = _ws(args)
    recording = Recording.load(Path(args.recording))
    change = ChangeSet("replay")
    for edit in args.sop or []:
        rel, sep, file = edit.partition("=")
        if not sep or not rel.strip() or not file.strip():
            raise UserInputError(f"--sop {edit!r}: expected PATH_IN_WORKSPACE=EDITED_FILE, e.g. "
                                 "sops/book.sop=/tmp/book.sop")
        change.put(rel.strip(), read_text_file(Path(file.strip())))
    saved = (root, load_workspace(root))
    if change.files:
        with staged(root, change) as stage:
            report = replay(recording, (stage, load_workspace(stage)), saved, after_label="edited: "
                            + ", ".join(change.files))
    else:
        report = replay(recording, saved, after_label=f"workspace {root.name} as saved")
    print(json.dumps(report.to_dict(), ensure_ascii=False, indent=2) if args.json else report.text())
    return 0


def cmd_lint(args: argparse.Namespace) -> int:
    from core.engine.build import load_workspace

    ws = load_workspace(_ws(args))
    problems = sorted(ws.problems, key=lambda p: (p.file, p.line))
    if args.json:
        print(json.dumps({"problems": [p.as_dict() for p in problems], "errors": len(errors(problems))}, indent=2))
    else:
        for p in problems:
            print(p)
        count = {k: sum(p.severity == k for p in problems) for k in ("error", "warning", "info")}
        print(f"{count['error']} error(s), {count['warning']} warning(s), {count['info']} info line(s); "
              f"{len(ws.sops)} SOP(s) compiled")
    return 1 if errors(problems) else 0


def cmd_eval(args: argparse.Namespace) -> int:
    if args.evaluation == "star":
        return cmd_eval_star(args)
    if args.evaluation == "kb":
        return cmd_eval_kb(args)
    if args.evaluation == "procedures":
        return cmd_eval_procedures(args)
    from core.evaluation.synthetic import format_report, run_synthetic

    def progress(done: int, total: int) -> None:
        print(f"\r{done}/{total} sessions", end="" if done < total else "\n", file=sys.stderr, flush=True)

    report = run_synthetic(_ws(args), sessions=args.sessions, seed=args.seed, brain=args.brain or "rule",
                           progress=progress if sys.stderr.isatty() else None)
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
    else:
        print(format_report(report, failures=args.failures))
    return 1 if report.accuracy < args.min_accuracy else 0


def cmd_simulate(args: argparse.Namespace) -> int:
    """Simulated customers (personas) against the workspace's SOPs, k runs each."""
    from core.engine.build import load_workspace
    from core.evaluation.simulate import failing_tests, format_report, simulate
    from core.understanding.brains.llm_client import LLMSettings

    llm = LLMSettings.from_env() if args.customer != "rules" else None
    if args.customer == "llm" and llm is None:
        raise UserInputError("--customer llm needs a language model: set OPENAI_API_KEY or OPENAI_BASE_URL "
                             "(and SOP_LLM_MODEL)")
    manners = [m.strip() for group in args.personas or [] for m in group.split(",") if m.strip()] or None

    def progress(done: int, total: int) -> None:
        print(f"\r{done}/{total} runs", end="" if done < total else "\n", file=sys.stderr, flush=True)

    ws = load_workspace(_ws(args))
    try:
        report = simulate(_ws(args), sops=args.sop, manners=manners, k=args.k, seed=args.seed, brain=args.brain,
                          llm=llm, loaded=ws, progress=progress if sys.stderr.isatty() else None)
    except ValueError as exc:
        raise UserInputError(str(exc)) from exc
    written = failing_tests(report, Path(args.out), ws.files.root, ws) if args.out else []
    if args.json:
        print(json.dumps({**report.to_dict(), "written": [str(p) for p in written]}, ensure_ascii=False, indent=2))
    else:
        print(format_report(report, failures=args.failures))
        for path in written:
            print(f"wrote {path}")
    return 1 if report.pass_k < args.min_pass_k else 0


def cmd_eval_kb(args: argparse.Namespace) -> int:
    from core.evaluation.kb import evaluate_kb, format_kb_report

    reports = [evaluate_kb(Path(f)) for f in args.files]
    if args.json:
        print(json.dumps([r.to_dict() for r in reports], ensure_ascii=False, indent=2))
    else:
        print("\n".join(format_kb_report(r) for r in reports))
    return 1 if any(r.top1_rate < args.min_top1 for r in reports) else 0


def cmd_eval_procedures(args: argparse.Namespace) -> int:
    from core.evaluation.procedures import evaluate_procedures, format_procedures, procedures_report

    def progress(done: int, total: int) -> None:
        print(f"\r{done}/{total} conversations", end="" if done < total else "\n", file=sys.stderr, flush=True)

    reports = evaluate_procedures(Path(args.folder), progress=progress if sys.stderr.isatty() else None)
    report = procedures_report(reports)
    print(json.dumps(report, ensure_ascii=False, indent=2) if args.json else format_procedures(reports))
    return 1 if report["accuracy"] < args.min_accuracy else 0


def cmd_eval_star(args: argparse.Namespace) -> int:
    from core.evaluation.star import default_cache, evaluate_star, format_lodo, format_report, leave_one_domain_out

    def progress(done: int, total: int) -> None:
        print(f"\r{done}/{total} dialogues", end="" if done < total else "\n", file=sys.stderr, flush=True)

    shown = progress if sys.stderr.isatty() else None
    if args.leave_one_domain_out:
        lodo = leave_one_domain_out(Path(args.folder), brain=args.brain or "rule", jobs=args.jobs, progress=shown,
                                    cache=default_cache())
        print(json.dumps(lodo, ensure_ascii=False, indent=2) if args.json else format_lodo(lodo))
        return 1 if lodo["mean_held_out_weighted_f1"] < args.min_weighted_f1 else 0
    report = evaluate_star(Path(args.folder), brain=args.brain or "rule", limit=args.limit, dialogues=args.dialogue,
                           progress=shown, jobs=args.jobs, cache=default_cache())
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
    else:
        print(format_report(report))
    return 1 if report.weighted_f1 < args.min_weighted_f1 else 0


def cmd_import(args: argparse.Namespace) -> int:
    from core.engine.build import load_workspace
    from core.importers import import_star_task, write_import

    root = Path(args.into)
    result = import_star_task(Path(args.task), root, api_file=args.api)
    problems: list = []
    if not args.dry_run:
        write_import(result, root)
        problems = sorted(load_workspace(root).problems, key=lambda p: (p.file, p.line))
    if args.json:
        print(json.dumps({**result.to_dict(), "written": not args.dry_run,
                          "problems": [p.as_dict() for p in problems]}, ensure_ascii=False, indent=2))
    else:
        verb = "would write" if args.dry_run else "wrote"
        print(f"{result.task} -> SOP {result.sop_id} (agent {result.agent}, tool {result.tool}); {verb}:")
        print("\n".join(f"  {root / rel}" for rel in sorted(result.files)))
        print("\n".join(f"note: {n}" for n in result.notes))
        print("\n".join(str(p) for p in problems))
    return 1 if errors(problems) else 0


def cmd_bench(args: argparse.Namespace) -> int:
    from core.bench.turns import run_bench

    if args.first_render:
        from core.bench.first_render import run_first_render

        try:
            shown = run_first_render(_ws(args), runs=min(args.rounds, 3))
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

        shown = kb_upload_times(str(_ws(args)), args.kb_megabytes)
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

    if args.processes:
        from core.bench.processes import format_result, run_processes

        shown = [run_processes(n, args.conversations or 25, same_session=same)
                 for n in dict.fromkeys([1, args.processes]) for same in (True, False) if n > 1 or same]
        print(json.dumps(shown) if args.json else "\n".join(format_result(r) for r in shown))
        return 0 if all(r["errors"] == 0 and r["lost"] == 0 and r["orphans"] == 0 for r in shown) else 1

    result = run_bench(str(_ws(args)), rounds=args.rounds, cached=args.cached, session_turns=args.session_turns)
    if args.json:
        print(json.dumps(result))
    else:
        r = result
        print(f"embedding one new sentence with {r['backend']}: p50 {r['embed_p50_ms']} ms, p95 {r['embed_p95_ms']} ms "
              f"(torch: p50 {r['torch_embed_p50_ms']} ms, p95 {r['torch_embed_p95_ms']} ms)\n"
              f"handle_message over {r['turns']} turns ({r['messages']} messages): p50 {r['p50_ms']} ms, "
              f"p95 {r['p95_ms']} ms; floor (1 embedding + 1 SQLite commit) {r['floor_ms']} ms with {r['backend']}, "
              f"{r['torch_floor_ms']} ms with torch; p95/floor = {r['ratio']} ({r['torch_ratio']} against torch's)")
        if r.get("session_turns"):
            print(f"one session of {r['session_turns']} turns: median of turns 1-{r['session_block']} "
                  f"{r['session_first_ms']} ms, of turns {r['session_turns'] - r['session_block'] + 1}-"
                  f"{r['session_turns']} {r['session_last_ms']} ms "
                  f"({r['session_ratio']}x); {r['session_hot_goals']} of its {r['session_goals']} requests in its "
                  "working state")
        print(f"this process's resident memory after the run: {r['resident_mb']} MB (a serving worker's: "
              "python -m core bench --memory)")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    """Export the embedding model for ONNX Runtime now, unless a cache folder has it, and say where it is."""
    import time

    from core.retrieval.embedding import model_path, thread_count
    from core.retrieval.onnx_minilm import OnnxMiniLM, cache_dirs, cached

    source = Path(model_path())
    try:
        before = cached(source)
        started = time.perf_counter()
        model = OnnxMiniLM(source, threads=thread_count())  # exports when no cache folder has it
        model.embed(["the model answers"])
    except ImportError as exc:
        print(f"error: onnxruntime is not installed ({exc}): the model runs on torch, nothing to export",
              file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - any failed export is reported, first use then runs on torch
        print(f"error: the embedding model could not be exported: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    path = cached(source)
    shown = {"path": str(path), "exported_now": before is None, "seconds": round(time.perf_counter() - started, 2),
             "looked_in": [str(d) for d in cache_dirs()]}
    if args.json:
        print(json.dumps(shown))
    else:
        how = f"exported now in {shown['seconds']} s" if before is None else "already exported"
        print(f"embedding model for ONNX Runtime: {path} ({how})")
    return 0


def _bench_memory(args: argparse.Namespace) -> int:
    """``bench --memory``: each serving worker's resident memory and a breakdown of what it holds."""
    from core.bench.memory import format_memory_bench, run_memory_bench

    raw = (args.workers or "2").strip()
    if not raw.isdigit() or int(raw) < 1:
        print(f"error: with --memory, --workers takes one number of worker processes; got {raw!r}", file=sys.stderr)
        return 2
    try:
        shown = run_memory_bench(_ws(args), workers=int(raw), conversations=args.conversations or 24)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(shown) if args.json else format_memory_bench(shown))
    return 0 if shown["failed"] == 0 and shown["turns"] else 1


def cmd_serve(args: argparse.Namespace) -> int:
    """The HTTP API (core.server.api) with N uvicorn worker processes."""
    import uvicorn

    from core.engine.build import raise_on_errors
    from core.server.api import ENV_COMPUTE, ENV_WORKSPACES, compute_slots, workspace_name
    from core.workspace.files import load_workspace_files

    roots = [Path(p).resolve() for p in (args.workspace or [os.getcwd()])]
    for root in roots:  # a folder that is not a workspace is refused here, not in every worker
        if not (root / "store.yaml").is_file():
            print(f"error: {root} is not a workspace (it has no store.yaml)", file=sys.stderr)
            return 2
        raise_on_errors(load_workspace_files(root).problems)
    names = [workspace_name(r) for r in roots]
    if len(set(names)) != len(names):
        print(f"error: two workspaces would be served under one name: {', '.join(names)}", file=sys.stderr)
        return 2
    os.environ[ENV_WORKSPACES] = os.pathsep.join(str(r) for r in roots)
    if args.compute is not None:
        os.environ[ENV_COMPUTE] = str(args.compute)
    compute = compute_slots()  # a wrong SOP_API_COMPUTE is refused here, not in every worker
    _export_model_first()
    if args.workers > 1:  # one compute thread per worker: the processes share the cores, not spin against
        from core.retrieval.embedding import one_thread_each  # each other's idle thread pools

        one_thread_each()
    print(f"serving {', '.join(names)} on http://{args.host}:{args.port} with {args.workers} worker(s); "
          f"{compute} turn(s) computed at once per worker; API docs at /docs; state store: {_store_label()}",
          flush=True)
    if args.workers == 1:
        uvicorn.run("core.server.api:app_from_env", factory=True, host=args.host, port=args.port,
                    log_level=args.log_level, timeout_graceful_shutdown=10)
        return 0
    from core.server.api import serve_workers

    return serve_workers(args.host, args.port, args.workers, args.log_level)


def _export_model_first() -> None:
    """The embedding model's ONNX export, made in a process of its own before the workers start when no cache
    folder has it: a worker that made it would load torch and transformers to do so, and keep them (hundreds of
    MB each)."""
    if os.environ.get("SOP_EMBED_BACKEND", "").strip().lower() == "torch":
        return
    from core.retrieval.embedding import model_path
    from core.retrieval.onnx_minilm import cached

    try:
        if cached(Path(model_path())) is not None:
            return
    except ImportError:  # no onnxruntime: the workers run the model on torch
        return
    import subprocess

    subprocess.run([sys.executable, "-m", "core", "models"], check=False)


def _store_label() -> str:
    from core.state.sessions.base import redact

    url = os.environ.get("SOP_STATE_URL", "").strip()
    return redact(url) if url else "each workspace's .state/sessions.sqlite"


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text!r}")
    return value


def _percent(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be a percentage from 0 to 100, got {text}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core", description="SOP Agent Playground engine")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_)
        p.add_argument("--workspace", default=None, help="workspace folder (default: current folder)")
        p.add_argument("--json", action="store_true", help="machine-readable report on stdout")
        return p

    chat = add("chat", "interactive terminal chat")
    chat.add_argument("--trace", action="store_true", help="print decisions, tool calls and goal state")
    chat.add_argument("--session", default=None)
    chat.add_argument("--customer", default=None)
    chat.add_argument("--brain", default=None, choices=["rule", "llm", "hybrid"])
    test = add("test", "run conversation test files")
    test.add_argument("paths", nargs="+")
    test.add_argument("--coverage", action="store_true",
                      help="after the run, the steps of each SOP the tests reach, how many tests reach each, and "
                           "the steps no test reaches")
    test.add_argument("--min-coverage", type=_percent, default=None, metavar="PCT",
                      help="exit with code 1 when the tests reach less than PCT%% of the steps (implies --coverage)")
    add("lint", "validate SOPs, GAR, store.yaml, inventory and KB")
    rerun = add("replay", "replay a recorded conversation against the workspace or an edited SOP, side by side")
    rerun.add_argument("recording", help="a session exported from the Inspector (.json) or a conversation test "
                                         "(.yaml)")
    rerun.add_argument("--sop", action="append", default=None, metavar="PATH=FILE",
                       help="replace a workspace file for the replay, e.g. sops/book.sop=edited.sop (repeatable); "
                            "without it the recording is compared with the workspace as saved")
    evaluate = sub.add_parser("eval", help="evaluate the agent on a workspace's SOPs")
    kinds = evaluate.add_subparsers(dest="evaluation", required=True)
    synthetic = kinds.add_parser("synthetic", help="synthetic sessions per SOP, graded state by state (paper §4)")
    synthetic.add_argument("--workspace", default=None, help="workspace folder (default: current folder)")
    synthetic.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    synthetic.add_argument("--sessions", type=_positive, default=220, help="how many sessions (default 220)")
    synthetic.add_argument("--seed", type=int, default=7, help="the same seed gives the same sessions (default 7)")
    synthetic.add_argument("--brain", default=None, choices=["rule", "llm", "hybrid"])
    synthetic.add_argument("--min-accuracy", type=float, default=0.0,
                           help="exit with code 1 when the state-decision accuracy is below this (0-1)")
    synthetic.add_argument("--failures", type=int, default=10, help="how many failed sessions to print (default 10)")
    kb_eval = kinds.add_parser("kb", help="does the knowledge base answer questions with the right passage (top-1, "
                                          "top-3)")
    kb_eval.add_argument("files", nargs="+", help="question files (workspace: + questions: [{q, expect}])")
    kb_eval.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    kb_eval.set_defaults(workspace=None)
    kb_eval.add_argument("--min-top1", type=float, default=0.0,
                         help="exit with code 1 when a file's top-1 rate is below this (0-1)")
    procedures = kinds.add_parser("procedures", help="every workspace's conversation tests under a folder: "
                                                     "passed/total per workspace and each failing test's first "
                                                     "failing turn")
    procedures.add_argument("folder", help="a folder of workspaces, each with a conversations/ folder")
    procedures.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    procedures.add_argument("--min-accuracy", type=float, default=0.0,
                            help="exit with code 1 when the share of passing conversations is below this (0-1)")
    procedures.set_defaults(workspace=None)
    star = kinds.add_parser("star", help="replay STAR's human conversations, next-action accuracy and weighted F1")
    star.add_argument("folder", help="a STAR folder (tasks/, apis/, dialogues/)")
    star.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    star.add_argument("--brain", default=None, choices=["rule", "llm", "hybrid"])
    star.add_argument("--limit", type=_positive, default=None, help="replay only the first N dialogues")
    star.add_argument("--dialogue", action="append", default=None, help="replay only this dialogue id (repeatable)")
    star.add_argument("--jobs", type=int, default=0, help="worker processes (default: one per core)")
    star.add_argument("--leave-one-domain-out", action="store_true",
                      help="tune the engine's settings on four domains, score the fifth, for each domain")
    star.add_argument("--min-weighted-f1", type=float, default=0.0,
                      help="exit with code 1 when the overall weighted F1 is below this (0-1)")
    star.set_defaults(workspace=None)
    sim = add("simulate", "simulated customers (personas with a goal and a manner) try the SOPs, k runs each")
    sim.add_argument("--sop", action="append", default=None, metavar="ID",
                     help="an SOP to try (repeatable; default: every SOP)")
    sim.add_argument("--k", type=_positive, default=3, help="runs per persona (default 3); pass^k needs all k")
    sim.add_argument("--personas", action="append", default=None, metavar="MANNERS",
                     help="manners to play, comma-separated (terse, chatty, confused, changes_mind, up_front, "
                          "side_questions, thai; default: every one that applies)")
    sim.add_argument("--seed", type=int, default=7, help="the same seed gives the same personas and messages")
    sim.add_argument("--brain", default=None, choices=["rule", "llm", "hybrid"], help="the engine's brain")
    sim.add_argument("--customer", default="auto", choices=["auto", "rules", "llm"],
                     help="who plays the customers: a configured language model (auto, llm) or rules (offline)")
    sim.add_argument("--out", default=None, metavar="DIR", help="write each failing run as a conversation test here")
    sim.add_argument("--failures", type=int, default=10, help="how many failing runs to print (default 10)")
    sim.add_argument("--min-pass-k", type=float, default=0.0,
                     help="exit with code 1 when the share of personas passing all k runs is below this (0-1)")
    importer = sub.add_parser("import", help="import flows drawn elsewhere into a workspace")
    formats = importer.add_subparsers(dest="format", required=True)
    star_import = formats.add_parser("star", help="a STAR task folder (flowchart JSON + API schema)")
    star_import.add_argument("task", help="the task folder (holding <task>.json)")
    star_import.add_argument("--into", "--workspace", dest="into", required=True, help="the workspace to write into")
    star_import.add_argument("--api", default=None, help="the API schema (default: found next to the task)")
    star_import.add_argument("--dry-run", action="store_true", help="list the files without writing them")
    star_import.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    star_import.set_defaults(workspace=None)
    bench = add("bench", "measure handle_message latency (or, with --first-render, the playground's first page)")
    bench.add_argument("--rounds", type=int, default=5)
    bench.add_argument("--cached", action="store_true",
                       help="replay the same messages (their embeddings cached) instead of new ones each round")
    bench.add_argument("--session-turns", type=int, default=300,
                       help="turns of the long session whose first and last turns are compared (0: none)")
    bench.add_argument("--first-render", action="store_true",
                       help="time cold starts of the playground in headless Chromium instead (needs chromium)")
    bench.add_argument("--processes", type=_positive, default=0,
                       help="run N worker processes on one session and on N sessions of a shared store instead "
                            "(errors, lost turns, orphan side effects, throughput; 1 process for comparison)")
    bench.add_argument("--sop-nodes", type=_positive, default=0,
                       help="time compiling JSON SOPs of a tenth of N nodes and of N nodes instead")
    bench.add_argument("--kb-megabytes", type=float, default=0.0,
                       help="time uploading a generated KB document of this size in the playground instead "
                            "(until the upload returns, until it is searchable, chat turns meanwhile)")
    bench.add_argument("--conversations", type=_positive, default=None,
                       help="with --processes: two-turn conversations per worker (default 25); with --memory: "
                            "conversations sent (default 24)")
    bench.add_argument("--api", action="store_true",
                       help="load the HTTP API (python -m core serve) with concurrent clients instead: turns/s and "
                            "p95 latency per worker count and store")
    bench.add_argument("--memory", action="store_true",
                       help="start the HTTP API, send conversations, and report each worker's resident memory "
                            "(RSS, PSS, USS) and a breakdown of what a worker holds instead")
    bench.add_argument("--workers", default=None,
                       help="with --api: worker counts to run (default 1,2,4,8); with --memory: worker processes "
                            "(default 2)")
    bench.add_argument("--clients", type=_positive, default=8, help="with --api: concurrent clients (default 8)")
    bench.add_argument("--seconds", type=_positive_float, default=10.0,
                       help="with --api: how long each load runs (default 10)")
    bench.add_argument("--think-ms", type=_positive_float, default=100.0,
                       help="with --api: the paced clients' mean pause before a message (default 100)")
    bench.add_argument("--stores", default="sqlite,postgres",
                       help="with --api: sqlite and/or postgres (a local server from Debian's package)")
    models = sub.add_parser("models", help="export the embedding model for ONNX Runtime now (done at install "
                                           "time by make venv) and print where it is")
    models.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    models.set_defaults(workspace=None)
    serve = sub.add_parser("serve", help="the HTTP API (FastAPI) with N worker processes")
    serve.add_argument("--workspace", action="append", default=None,
                       help="a workspace folder to serve (repeatable; the first is the default; default: current "
                            "folder)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve.add_argument("--workers", type=_positive, default=1, help="worker processes (default 1)")
    serve.add_argument("--compute", type=_positive, default=None,
                       help="turns a worker computes at once (default SOP_API_COMPUTE, else 1); turns waiting on "
                            "a tool, a language model or the memory service do not count")
    serve.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    args = parser.parse_args(argv)
    if args.command == "serve":
        try:
            return cmd_serve(args)
        except SopError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    args.workspace_given = args.workspace is not None
    if args.workspace is None:
        args.workspace = os.getcwd()
    handlers = {"chat": cmd_chat, "test": cmd_test, "lint": cmd_lint, "replay": cmd_replay, "eval": cmd_eval,
                "bench": cmd_bench, "import": cmd_import, "simulate": cmd_simulate, "models": cmd_models}
    try:
        return handlers[args.command](args)
    except SopError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

