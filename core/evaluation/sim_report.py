"""What a simulation (:mod:`core.evaluation.simulate`) reports: each run with its checks, each persona's
pass^k and pass@1, and the plain-text summary the CLI prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.evaluation.personas import Persona
from core.evaluation.sim_llm import Judgement

CHECKS = ("started", "end", "steps", "tools", "on_goal", "no_loop")
CHECK_TITLES = {"started": "the SOP was started", "end": "it ended as the goal wants",
                "steps": "the goal's steps ran", "tools": "tools called with the goal's values",
                "on_goal": "stayed on the customer's request",
                "no_loop": "no error or fallback loop"}


@dataclass
class Run:
    """One conversation of a persona with the engine, and how it was judged."""

    persona: str
    trial: int
    session: str
    customer_id: str | None
    turns: list[tuple[str, str]] = field(default_factory=list)  # (customer, agent)
    traces: list[dict[str, Any]] = field(default_factory=list)
    checks: dict[str, bool] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    soft: Judgement | None = None
    scripted: list[str] = field(default_factory=list)  # the tools whose results the goal's world gives

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(self.checks.values())

    def to_dict(self) -> dict[str, Any]:
        return {"persona": self.persona, "trial": self.trial, "passed": self.passed, "checks": self.checks,
                "problems": self.problems, "turns": [{"user": u, "reply": r} for u, r in self.turns],
                **({"soft": self.soft.to_dict()} if self.soft is not None else {})}


@dataclass
class PersonaResult:
    """A persona and its k runs."""

    persona: Persona
    runs: list[Run] = field(default_factory=list)

    @property
    def pass_k(self) -> bool:
        return bool(self.runs) and all(r.passed for r in self.runs)

    @property
    def pass_at_1(self) -> float:
        return sum(r.passed for r in self.runs) / len(self.runs) if self.runs else 0.0

    @property
    def mean_turns(self) -> float:
        return sum(len(r.turns) for r in self.runs) / len(self.runs) if self.runs else 0.0

    def to_dict(self) -> dict[str, Any]:
        soft = [r.soft for r in self.runs if r.soft is not None]
        return {**self.persona.to_dict(), "runs": len(self.runs), "passed": sum(r.passed for r in self.runs),
                "pass_k": self.pass_k, "pass_at_1": round(self.pass_at_1, 4), "mean_turns": round(self.mean_turns, 2),
                **({"soft_passed": sum(j.passed for j in soft)} if soft else {})}


@dataclass
class SimulationReport:
    """The outcome of a simulation; ``to_dict()`` is JSON-safe."""

    workspace: str
    seed: int
    k: int
    brain: str | None
    customer: dict[str, Any]  # who played the customers: rules, or a model with its pinned prompt
    judge: dict[str, Any] | None = None  # the soft-criteria judge, when a model is configured
    personas: list[PersonaResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def runs(self) -> list[Run]:
        return [r for p in self.personas for r in p.runs]

    @property
    def pass_k(self) -> float:
        return sum(p.pass_k for p in self.personas) / len(self.personas) if self.personas else 0.0

    @property
    def pass_at_1(self) -> float:
        runs = self.runs
        return sum(r.passed for r in runs) / len(runs) if runs else 0.0

    def failing(self) -> list[Run]:
        return [r for r in self.runs if not r.passed]

    def to_dict(self) -> dict[str, Any]:
        soft = [r.soft for r in self.runs if r.soft is not None]
        return {
            "workspace": self.workspace, "seed": self.seed, "k": self.k, "brain": self.brain,
            "customer": self.customer, "judge": self.judge,
            "personas": [p.to_dict() for p in self.personas], "runs": len(self.runs),
            "pass_k": round(self.pass_k, 4), "pass_at_1": round(self.pass_at_1, 4),
            "soft": ({"runs": len(soft), "passed": sum(j.passed for j in soft),
                      "impolite": sum(not j.polite for j in soft),
                      "invented_facts": sum(bool(j.invented_facts) for j in soft)} if soft else None),
            "failing": [r.to_dict() for r in self.failing()],
            "notes": self.notes, "seconds": round(self.seconds, 1),
        }


def format_report(report: SimulationReport, failures: int = 10) -> str:
    """A plain-text summary (the CLI's output without ``--json``)."""
    d = report.to_dict()
    who = "rules (offline)" if d["customer"].get("by") == "rules" else \
        f"{d['customer']['model']} (prompt {d['customer']['prompt_version']}, sha256 {d['customer']['prompt_sha256']})"
    lines = [f"Simulated customers on {d['workspace']} (brain: {d['brain']}, seed {d['seed']}, k={d['k']}; "
             f"customers played by {who})",
             f"{len(d['personas'])} personas, {d['runs']} runs: pass^{d['k']} {d['pass_k']:.2f}, "
             f"pass@1 {d['pass_at_1']:.2f}", ""]
    width = max((len(p["name"]) for p in d["personas"]), default=10)
    lines.append(f"{'persona':<{width}}  pass^{d['k']}  pass@1  runs passed  mean turns")
    for p in d["personas"]:
        lines.append(f"{p['name']:<{width}}  {'yes' if p['pass_k'] else 'no':<6}  {p['pass_at_1']:.2f}    "
                     f"{p['passed']}/{p['runs']}          {p['mean_turns']:.1f}")
    if d["soft"]:
        s = d["soft"]
        lines += ["", f"soft criteria (judge {d['judge']['model']}, prompt {d['judge']['prompt_version']}, sha256 "
                      f"{d['judge']['prompt_sha256']}): {s['passed']}/{s['runs']} runs polite with no invented facts "
                      f"({s['impolite']} impolite, {s['invented_facts']} with invented facts)"]
    if d["failing"]:
        lines += ["", f"failing runs ({len(d['failing'])}; --out DIR writes them as conversation tests):"]
        for r in d["failing"][:failures]:
            failed = [CHECK_TITLES[c] for c in CHECKS if not r["checks"].get(c, True)]
            lines.append(f"- {r['persona']} run {r['trial']}: failed {', '.join(failed)}")
            lines += [f"    {p}" for p in r["problems"]]
            for t in r["turns"]:
                lines.append(f"    customer: {t['user']}")
                lines.append(f"    agent:    {' '.join(t['reply'].split())[:160]}")
        if len(d["failing"]) > failures:
            lines.append(f"... and {len(d['failing']) - failures} more (--json lists them all)")
    if d["notes"]:
        lines += ["", "not simulated:"] + [f"- {n}" for n in d["notes"]]
    lines.append(f"\n{d['seconds']} s")
    return "\n".join(lines)
