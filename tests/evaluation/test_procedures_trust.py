"""`eval procedures --trust` trusts the workspaces under the folder before running their conversations; without
it, an untrusted workspace's Python tools do not run and the command says so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _set(root: Path) -> Path:
    ws = root / "desk" / "workspace"
    (ws / "sops").mkdir(parents=True)
    (ws / "store.yaml").write_text("name: Lamp desk\ncurrency: EUR\nagents:\n  desk: {tools: [lamps.count]}\n"
                                   "tools:\n  lamps.count: {python: tools.py:count}\n", encoding="utf-8")
    (ws / "tools.py").write_text("def count() -> dict:\n    return {'lamps': 7}\n", encoding="utf-8")
    (ws / "gar.csv").write_text("action,action_type,user_interaction_metadata,api,params\n"
                                "count the lamps,api_call|message_to_user,We have {lamps} lamps.,lamps.count,\n",
                                encoding="utf-8")
    (ws / "sops" / "count.sop").write_text("---\nid: desk.count\nagent: desk\ntitle: count lamps\ntriggers:\n"
                                           "  - how many lamps do you have\n---\ncount the lamps\n", encoding="utf-8")
    convo = root / "desk" / "conversations"
    convo.mkdir()
    (convo / "count.yaml").write_text("workspace: ../workspace\nturns:\n  - user: how many lamps do you have\n"
                                      "    expect:\n      reply_contains: ['7 lamps']\n", encoding="utf-8")
    return root


def _run(folder: Path, trust_file: Path, *more: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(folder), "SOP_TRUST_FILE": str(trust_file), "PYTHONPATH": str(ROOT),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "core", "eval", "procedures", str(folder), *more], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)


def test_untrusted_workspaces_are_named_and_trust_lets_their_tools_run(tmp_path: Path) -> None:
    folder = _set(tmp_path / "sets")
    trust_file = tmp_path / "trusted.json"
    plain = _run(folder, trust_file)
    assert "not trusted" in plain.stderr and "--trust" in plain.stderr
    assert "desk: 0/1 passed" in plain.stdout
    trusted = _run(folder, trust_file, "--trust")
    assert "desk: 1/1 passed" in trusted.stdout, trusted.stdout + trusted.stderr
    assert "not trusted" not in trusted.stderr
