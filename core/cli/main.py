"""Command line: chat, test, lint, eval, bench (``python -m core --help``): the parser and the dispatch to the
commands, which live by group in :mod:`core.cli.run`, :mod:`core.cli.evaluate`, :mod:`core.cli.bench` and
:mod:`core.cli.importing`."""

from __future__ import annotations

import argparse
import os
import sys

from core.cli.arguments import TRUST_HELP, percent, positive, positive_float, trust_if_asked
from core.cli.bench import cmd_bench
from core.cli.evaluate import cmd_eval, cmd_replay, cmd_simulate, cmd_test
from core.cli.importing import cmd_import
from core.cli.run import cmd_chat, cmd_lint, cmd_models, cmd_serve
from core.cli.training import cmd_train
from core.shared.errors import SopError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core", description="SOP Agent Playground engine")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, help_: str, *, runs: bool = False) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_)
        p.add_argument("--workspace", default=None, help="workspace folder (default: current folder)")
        p.add_argument("--json", action="store_true", help="machine-readable report on stdout")
        if runs:  # the command runs the workspace's tools
            p.add_argument("--trust", action="store_true", help=TRUST_HELP)
        return p

    chat = add("chat", "interactive terminal chat", runs=True)
    chat.add_argument("--trace", action="store_true", help="print decisions, tool calls and goal state")
    chat.add_argument("--session", default=None)
    chat.add_argument("--customer", default=None)
    chat.add_argument("--brain", default=None, choices=["rule", "llm", "hybrid"])
    test = add("test", "run conversation test files", runs=True)
    test.add_argument("paths", nargs="+")
    test.add_argument("--coverage", action="store_true",
                      help="after the run, the steps of each SOP the tests reach, how many tests reach each, and "
                           "the steps no test reaches")
    test.add_argument("--min-coverage", type=percent, default=None, metavar="PCT",
                      help="exit with code 1 when the tests reach less than PCT%% of the steps (implies --coverage)")
    add("lint", "validate SOPs, GAR, store.yaml, inventory and KB", runs=True)
    rerun = add("replay", "replay a recorded conversation against the workspace or an edited SOP, side by side",
                runs=True)
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
    synthetic.add_argument("--trust", action="store_true", help=TRUST_HELP)
    synthetic.add_argument("--sessions", type=positive, default=220, help="how many sessions (default 220)")
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
    procedures.add_argument("--trust", action="store_true",
                            help="trust every workspace under the folder: their Python tools and MCP servers may run "
                                 "(recorded outside them, as for --trust on chat)")
    procedures.add_argument("--min-accuracy", type=float, default=0.0,
                            help="exit with code 1 when the share of passing conversations is below this (0-1)")
    procedures.set_defaults(workspace=None)
    star = kinds.add_parser("star", help="replay STAR's human conversations, next-action accuracy and weighted F1")
    star.add_argument("folder", help="a STAR folder (tasks/, apis/, dialogues/)")
    star.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    star.add_argument("--brain", default=None, choices=["rule", "llm", "hybrid"])
    star.add_argument("--limit", type=positive, default=None, help="replay only the first N dialogues")
    star.add_argument("--dialogue", action="append", default=None, help="replay only this dialogue id (repeatable)")
    star.add_argument("--jobs", type=int, default=0, help="worker processes (default: one per core)")
    star.add_argument("--leave-one-domain-out", action="store_true",
                      help="tune the engine's settings on four domains, score the fifth, for each domain")
    star.add_argument("--min-weighted-f1", type=float, default=0.0,
                      help="exit with code 1 when the overall weighted F1 is below this (0-1)")
    star.set_defaults(workspace=None)
    sgd = kinds.add_parser("sgd", help="the learned reader on SGD's dev split (unseen services, every SGD-X "
                                       "rewording): slot-span precision/recall/F1 and act accuracy")
    sgd.add_argument("folder", help="an SGD split folder, e.g. ../shared/data/sgd/dev (train/ and sgd_x/ beside it)")
    sgd.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    sgd.add_argument("--rule-only", action="store_true",
                     help="the rule-only baseline: the engine's value extraction, the kind guessed from the slot's "
                          "name and description")
    sgd.add_argument("--limit", type=positive, default=None, help="read only the first N dialogues")
    sgd.add_argument("--variants", default="v1,v2,v3,v4,v5",
                     help="SGD-X rewordings to measure too, comma-separated (default v1..v5; '' for none)")
    sgd.set_defaults(workspace=None)
    sim = add("simulate", "simulated customers (personas with a goal and a manner) try the SOPs, k runs each",
              runs=True)
    sim.add_argument("--goals", default=None, metavar="FILE",
                     help="judge by goals written apart from the SOPs (a YAML list: request, knows, world, wants); "
                          "each played --k times, exit code 1 when one is missed")
    sim.add_argument("--sop", action="append", default=None, metavar="ID",
                     help="an SOP to try (repeatable; default: every SOP)")
    sim.add_argument("--k", type=positive, default=3, help="runs per persona (default 3); pass^k needs all k")
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
    bench.add_argument("--processes", type=positive, default=0,
                       help="run N worker processes on one session and on N sessions of a shared store instead "
                            "(errors, lost turns, orphan side effects, throughput; 1 process for comparison)")
    bench.add_argument("--soak-kills", type=positive, default=0,
                       help="kill -9 N worker processes at random moments of conversations that open tickets, then "
                            "count tool runs with no record and runs filed under the wrong turn")
    bench.add_argument("--sop-nodes", type=positive, default=0,
                       help="time compiling JSON SOPs of a tenth of N nodes and of N nodes instead")
    bench.add_argument("--kb-megabytes", type=float, default=0.0,
                       help="time uploading a generated KB document of this size in the playground instead "
                            "(until the upload returns, until it is searchable, chat turns meanwhile)")
    bench.add_argument("--conversations", type=positive, default=None,
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
    bench.add_argument("--clients", type=positive, default=8, help="with --api: concurrent clients (default 8)")
    bench.add_argument("--seconds", type=positive_float, default=10.0,
                       help="with --api: how long each load runs (default 10)")
    bench.add_argument("--think-ms", type=positive_float, default=100.0,
                       help="with --api: the paced clients' mean pause before a message (default 100)")
    bench.add_argument("--stores", default="sqlite,postgres",
                       help="with --api: sqlite and/or postgres (a local server from Debian's package)")
    trainer = sub.add_parser("train", help="train a model the engine ships")
    trained = trainer.add_subparsers(dest="model", required=True)
    reader = trained.add_parser("reader", help="fine-tune the learned reader on SGD's train split, export it to "
                                               "int8 ONNX in core/understanding/candidates/reader_model/ and "
                                               "measure it on dev")
    reader.add_argument("folder", help="the SGD folder (train/, dev/, sgd_x/), e.g. ../shared/data/sgd")
    reader.add_argument("--steps", type=positive, default=5000, help="training steps of 32 examples at most "
                                                                      "(default 5000)")
    reader.add_argument("--max-minutes", type=positive_float, default=60.0,
                        help="training time budget: the learning rate reaches zero and training ends at the last "
                             "step or after this many minutes, whichever comes first (default 60)")
    reader.add_argument("--limit", type=positive, default=None, help="train on the first N dialogues only (a trial, written to .state/reader/trial/)")
    reader.add_argument("--export-only", action="store_true",
                        help="skip training: export and measure the weights of the last training again")
    reader.add_argument("--json", action="store_true", help="machine-readable record on stdout")
    reader.set_defaults(workspace=None)
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
    serve.add_argument("--workers", type=positive, default=1, help="worker processes (default 1)")
    serve.add_argument("--compute", type=positive, default=None,
                       help="turns a worker computes at once (default SOP_API_COMPUTE, else 1); turns waiting on "
                            "a tool, a language model or the memory service do not count")
    serve.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    serve.add_argument("--trust", action="store_true", help=TRUST_HELP)
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
    if getattr(args, "trust", False):
        trust_if_asked([args.workspace])
    handlers = {"chat": cmd_chat, "test": cmd_test, "lint": cmd_lint, "replay": cmd_replay, "eval": cmd_eval,
                "bench": cmd_bench, "import": cmd_import, "simulate": cmd_simulate, "models": cmd_models,
                "train": cmd_train}
    try:
        return handlers[args.command](args)
    except SopError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

