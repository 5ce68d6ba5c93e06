"""The commands that evaluate the agent: ``test``, ``replay``, ``eval`` (synthetic, kb, procedures, star, sgd) and
``simulate``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.cli.arguments import trust_if_asked, trusted_folder, workspace_folder
from core.shared.errors import UserInputError
from core.workspace.paths import read_text_file

if TYPE_CHECKING:
    from core.evaluation.coverage import SopCoverage


def cmd_test(args: argparse.Namespace) -> int:
    from core.evaluation.testing import WorkspaceCache, collect, run_file

    files = collect(args.paths)
    if not files:
        raise UserInputError("no conversation test files found")
    cache = WorkspaceCache()
    default = workspace_folder(args) if args.workspace_given else None
    results = [run_file(f, default or workspace_folder(args), cache) for f in files]
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

    root = workspace_folder(args)
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


def cmd_eval(args: argparse.Namespace) -> int:
    if args.evaluation == "star":
        return cmd_eval_star(args)
    if args.evaluation == "kb":
        return cmd_eval_kb(args)
    if args.evaluation == "procedures":
        return cmd_eval_procedures(args)
    if args.evaluation == "sgd":
        return cmd_eval_sgd(args)
    from core.evaluation.synthetic import format_report, run_synthetic

    def progress(done: int, total: int) -> None:
        print(f"\r{done}/{total} sessions", end="" if done < total else "\n", file=sys.stderr, flush=True)

    report = run_synthetic(workspace_folder(args), sessions=args.sessions, seed=args.seed, brain=args.brain or "rule",
                           progress=progress if sys.stderr.isatty() else None)
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
    else:
        print(format_report(report, failures=args.failures))
    return 1 if report.accuracy < args.min_accuracy else 0


def cmd_simulate(args: argparse.Namespace) -> int:
    """Simulated customers (personas) against the workspace's SOPs, k runs each."""
    from core.engine.build import load_workspace
    from core.evaluation.sim_report import format_report
    from core.evaluation.simulate import failing_tests, simulate
    from core.understanding import LLMSettings

    if args.goals:
        return _simulate_goals(args)
    llm = LLMSettings.from_env() if args.customer != "rules" else None
    if args.customer == "llm" and llm is None:
        raise UserInputError("--customer llm needs a language model: set OPENAI_API_KEY or OPENAI_BASE_URL "
                             "(and SOP_LLM_MODEL)")
    manners = [m.strip() for group in args.personas or [] for m in group.split(",") if m.strip()] or None

    def progress(done: int, total: int) -> None:
        print(f"\r{done}/{total} runs", end="" if done < total else "\n", file=sys.stderr, flush=True)

    ws = load_workspace(workspace_folder(args))
    try:
        report = simulate(workspace_folder(args), sops=args.sop, manners=manners, k=args.k, seed=args.seed,
                          brain=args.brain, llm=llm, loaded=ws, progress=progress if sys.stderr.isatty() else None)
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


def _simulate_goals(args: argparse.Namespace) -> int:
    """``simulate --goals FILE``: customers judged by the outcome they want, written apart from the SOPs."""
    from core.evaluation.outcome_goals import format_goal_runs, load_goals, simulate_goals

    runs = simulate_goals(workspace_folder(args), load_goals(Path(args.goals)), k=args.k, brain=args.brain or "rule")
    if args.json:
        print(json.dumps({"met": sum(r.met for r in runs), "runs": [r.to_dict() for r in runs]}, ensure_ascii=False,
                         indent=2))
    else:
        print(format_goal_runs(runs))
    return 0 if all(r.met for r in runs) else 1


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

    workspaces = sorted({s.parent for s in Path(args.folder).glob("**/store.yaml")})
    if args.trust:
        trust_if_asked(list(workspaces))
    untrusted = [w for w in workspaces if not trusted_folder(w)]
    if untrusted:
        print(f"note: {len(untrusted)} workspace(s) under {args.folder} are not trusted, so their Python tools and MCP "
              "servers will not run (add --trust to trust them): " + ", ".join(str(w) for w in untrusted),
              file=sys.stderr)
    reports = evaluate_procedures(Path(args.folder), progress=progress if sys.stderr.isatty() else None)
    report = procedures_report(reports)
    print(json.dumps(report, ensure_ascii=False, indent=2) if args.json else format_procedures(reports))
    return 1 if report["accuracy"] < args.min_accuracy else 0


def cmd_eval_star(args: argparse.Namespace) -> int:
    from core.evaluation.star import default_cache, evaluate_star
    from core.evaluation.star_lodo import format_lodo, leave_one_domain_out
    from core.evaluation.star_report import format_report

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


def cmd_eval_sgd(args: argparse.Namespace) -> int:
    """The learned reader (or, with --rule-only, the rule baseline) on SGD's dev split and its SGD-X rewordings."""
    from core.evaluation.sgd_eval import evaluate_reader, evaluate_rules, format_sgd

    variants = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    progress = None if args.json else (lambda line: print(line, file=sys.stderr, flush=True))
    folder = Path(args.folder)
    if not (folder / "schema.json.gz").is_file() and not (folder / "schema.json").is_file():
        raise UserInputError(f"{folder} is not an SGD split folder (no schema.json.gz)")
    if args.rule_only:
        report = evaluate_rules(folder, variants=variants, limit=args.limit, progress=progress)
    else:
        report = evaluate_reader(folder, variants=variants, limit=args.limit, progress=progress)
        if report.get("error"):
            raise UserInputError(report["error"])
    print(json.dumps(report, ensure_ascii=False, indent=2) if args.json else format_sgd(report))
    return 0
