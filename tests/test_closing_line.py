"""The line answering a customer's reaction after a request ends says it helped only when it did: after a request
that failed it is sorry, after one that was done it is glad."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import build_orchestrator
from core.language.replies import say
from tests.conftest import trusted
from tests.tools.test_workspace_trust import _copied_desk

FAILING = "def lookup(ticket):\n    raise RuntimeError('the ticket database is down')\n"
WORKING = "def lookup(ticket):\n    return {'state': 'open'}\n"


def _desk(tmp_path: Path, tools_py: str) -> Path:
    """The ticket desk of the trust tests with only its Python lookup (read-only), ``tools_py`` its code."""
    ws = _copied_desk(tmp_path)
    store = (ws / "store.yaml").read_text(encoding="utf-8").split("  orders:")[0]
    (ws / "store.yaml").write_text(store.replace(", orders.find_order", "") + "  desk.lookup:\n    params: [ticket]\n"
                                   "    python: tools.py:lookup\n    side_effects: false\n", encoding="utf-8")
    (ws / "tools.py").write_text(tools_py, encoding="utf-8")
    return trusted(ws)


@pytest.mark.parametrize(("tools_py", "ended", "closing"), [(FAILING, "graceful_end", "sorry_more"),
                                                           (WORKING, "", "glad_more")])
def test_the_reaction_to_a_finished_request_is_answered_by_how_it_ended(tmp_path: Path, tools_py: str, ended: str,
                                                                        closing: str) -> None:
    orch = build_orchestrator(_desk(tmp_path, tools_py), state_url="sqlite:///:memory:")
    orch.handle_message("s", "check my ticket")
    reply = orch.handle_message("s", "T-12")
    assert (say(ended, "en") in reply) if ended else ("Ticket T-12 is open." in reply)
    after = orch.handle_message("s", "Good idea.")
    assert after == say(closing, "en")
    if ended:
        assert "glad" not in after.lower() and "help" not in after.lower().replace("anything else", "")
