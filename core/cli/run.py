"""The commands that run a workspace: ``chat``, ``lint``, ``models`` and ``serve``."""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from pathlib import Path

from core.cli.arguments import trust_if_asked, workspace_folder
from core.shared.problems import errors
from core.understanding import OFFERED, reading_lines


def cmd_chat(args: argparse.Namespace) -> int:
    from core.engine.build import build_orchestrator, load_workspace
    from core.workspace.trust import untrusted_problem

    ws = load_workspace(workspace_folder(args))
    orch = build_orchestrator(workspace_folder(args), brain=args.brain, loaded=ws)
    session = args.session or f"cli-{uuid.uuid4().hex[:8]}"
    for sentence in ws.files.recovered:
        print(f"note: {sentence}.")
    if not ws.trusted:
        print(f"note: {untrusted_problem(ws.files.config).message}.")
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


def cmd_lint(args: argparse.Namespace) -> int:
    from core.engine.build import load_workspace

    ws = load_workspace(workspace_folder(args))
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


def cmd_serve(args: argparse.Namespace) -> int:
    """The HTTP API (core.server.api) with N uvicorn worker processes."""
    import uvicorn

    from core.server.served import ENV_COMPUTE, ENV_WORKSPACES, compute_slots, workspace_name
    from core.workspace.files import load_workspace_files, raise_on_errors
    from core.workspace.trust import is_trusted, untrusted_problem

    roots = [Path(p).resolve() for p in (args.workspace or [os.getcwd()])]
    if args.trust:
        trust_if_asked(list(roots))
    for root in roots:  # a folder that is not a workspace is refused here, not in every worker
        if not (root / "store.yaml").is_file():
            print(f"error: {root} is not a workspace (it has no store.yaml)", file=sys.stderr)
            return 2
        files = load_workspace_files(root)
        raise_on_errors(files.problems)
        if not is_trusted(files.root, files.config):
            print(f"note: {root}: {untrusted_problem(files.config).message}", file=sys.stderr)
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
    from core.server.workers import serve_workers

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
