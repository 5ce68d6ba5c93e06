"""The playground asks once before a copied workspace's programs run: a notice with "Trust this workspace" in the
sidebar (AppTest). AppTest does not re-render the entry script's sidebar on reruns, so the button is clicked in
the browser (tests/ui/test_trust_e2e.py) and ``Playground.trust`` is tested in tests/tools/test_workspace_trust.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.tools.test_workspace_trust import _copied_desk, _ran
from tests.ui.conftest import APP, texts


def test_an_untrusted_workspace_shows_the_notice_and_the_button_and_runs_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = _copied_desk(tmp_path)
    monkeypatch.setenv("SOP_WORKSPACE", str(ws))
    monkeypatch.setenv("SOP_WORKSPACES_DIR", str(tmp_path / "created"))
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    notice = [w.value for w in at.sidebar.warning if "not trusted" in w.value]
    assert len(notice) == 1 and "MCP server orders, Python tool desk.lookup are not run" in notice[0]
    assert [b.label for b in at.sidebar.button].count("Trust this workspace") == 1
    assert _ran(ws) == set()


def test_a_trusted_workspace_shows_no_notice(at: AppTest) -> None:
    assert "not trusted" not in texts(at)
    assert "Trust this workspace" not in [b.label for b in at.sidebar.button]
