"""The runner reports wrong expectations and invariant breaks instead of passing them."""

from __future__ import annotations

from pathlib import Path

from core.evaluation.testing import WorkspaceCache, run_file

ROOT = Path(__file__).resolve().parent.parent


def test_wrong_expectations_fail(tmp_path: Path) -> None:
    f = tmp_path / "wrong.yaml"
    f.write_text(f"""name: wrong
workspace: {ROOT}
turns:
  - user: Recommend a gaming mouse
    expect: {{active_goal: support.troubleshoot, missing: [color], tools: [inventory.query], stack: [x]}}
""")
    result = run_file(f, None, WorkspaceCache())
    fails = result.turns[0].failures
    assert not result.passed
    assert any(s.startswith("active_goal") for s in fails)
    assert any(s.startswith("missing") for s in fails)
    assert any(s.startswith("tools") for s in fails)
    assert any(s.startswith("stack") for s in fails)


def test_json_report_shape(tmp_path: Path) -> None:
    import contextlib
    import io
    import json

    from core.__main__ import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["test", "--json", str(ROOT / "tests/conversations/t1_sales_dependency.yaml")])
    report = json.loads(out.getvalue())
    assert code == 0
    assert report["passed"] == 1 and report["failed"] == 0
    turn = report["files"][0]["turns"][1]
    assert set(turn) >= {"user", "reply", "passed", "failures"}
    assert "฿" in turn["reply"]
