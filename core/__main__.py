"""Command line: chat, test, lint, eval, bench (``python -m core --help``)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from pathlib import Path

from core.errors import SopError, UserInputError
from core.problems import errors


def _ws(args: argparse.Namespace) -> Path:
    return Path(args.workspace)


def cmd_chat(args: argparse.Namespace) -> int:
    from core.build import build_orchestrator

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
    print(f"  · perception: {trace.get('perception')}")
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
              f"{ {k: v for k, v in goal.slots.items() if k != 'candidates'} }")


def cmd_test(args: argparse.Namespace) -> int:
    from core.testing import WorkspaceCache, collect, run_file

    files = collect(args.paths)
    if not files:
        raise UserInputError("no conversation test files found")
    cache = WorkspaceCache()
    default = _ws(args) if args.workspace_given else None
    results = [run_file(f, default or _ws(args), cache) for f in files]
    passed = sum(r.passed for r in results)
    report = {"passed": passed, "failed": len(results) - passed, "files": [r.as_dict() for r in results]}
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        for r in results:
            print(f"{'PASS' if r.passed else 'FAIL'}  {r.file}  ({r.name})")
            if r.error:
                print(f"      error: {r.error}")
            for i, t in enumerate(r.turns, start=1):
                for f in t.failures:
                    print(f"      turn {i} ({t.user!r}): {f}")
        print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


def cmd_lint(args: argparse.Namespace) -> int:
    from core.build import load_workspace

    ws = load_workspace(_ws(args))
    problems = sorted(ws.problems, key=lambda p: (p.file, p.line))
    if args.json:
        print(json.dumps({"problems": [p.as_dict() for p in problems], "errors": len(errors(problems))}, indent=2))
    else:
        for p in problems:
            print(p)
        print(f"{len(errors(problems))} error(s), {len(problems) - len(errors(problems))} warning(s); "
              f"{len(ws.sops)} SOP(s) compiled")
    return 1 if errors(problems) else 0


def cmd_eval(args: argparse.Namespace) -> int:
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


def cmd_bench(args: argparse.Namespace) -> int:
    from core.bench import run_bench

    result = run_bench(str(_ws(args)), rounds=args.rounds)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"handle_message over {result['turns']} turns: p50 {result['p50_ms']} ms, p95 {result['p95_ms']} ms; "
              f"floor (1 embedding + 1 SQLite commit) {result['floor_ms']} ms; p95/floor = {result['ratio']}")
    return 0


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
    add("lint", "validate SOPs, GAR, store.yaml, inventory and KB")
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
    bench = add("bench", "measure handle_message latency")
    bench.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    args.workspace_given = args.workspace is not None
    if args.workspace is None:
        args.workspace = os.getcwd()
    handlers = {"chat": cmd_chat, "test": cmd_test, "lint": cmd_lint, "eval": cmd_eval, "bench": cmd_bench}
    try:
        return handlers[args.command](args)
    except SopError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
