"""The Zep store against the real Zep Cloud: runs only when ``ZEP_API_KEY`` is set (never in CI).

It writes to a throw-away customer, reads the facts back through a second instance with an
empty local cache, edits and forgets one, and deletes the customer at the end. It checks our
own structured facts only: Zep's fact extraction runs asynchronously and is not asserted on.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from core.state.memory import PreferenceSummary, PreferenceUpdate, ZepPreferenceMemory

pytestmark = [pytest.mark.live,
              pytest.mark.skipif(not os.environ.get("ZEP_API_KEY"),
                                 reason="talks to Zep Cloud: set ZEP_API_KEY (and optionally ZEP_BASE_URL)")]


def open_live(cache: Path) -> ZepPreferenceMemory:
    return ZepPreferenceMemory(os.environ["ZEP_API_KEY"], base_url=os.environ.get("ZEP_BASE_URL") or None,
                               cache_path=cache, timeout_s=30.0)


def test_round_trip_on_zep_cloud(tmp_path: Path) -> None:
    customer = f"sop-agent-test-{uuid.uuid4().hex[:12]}"
    first = open_live(tmp_path / "a.sqlite")
    second = open_live(tmp_path / "b.sqlite")
    try:
        assert first.summary(customer).is_empty()
        first.write(customer, PreferenceUpdate(budget_min=30000, budget_max=40000, preferred_brands=["Logitech"],
                                               disliked_brands=["Razer"], communication_style="short"),
                    session_id="s1", turn=1, message="30-40k, I like Logitech, no Razer please, keep it short")
        assert second.summary(customer) == PreferenceSummary(
            budget_min=30000, budget_max=40000, preferred_brands=["Logitech"], disliked_brands=["Razer"],
            communication_style="short")
        entries = second.entries(customer)
        assert all((e.session_id, e.turn) == ("s1", 1) for e in entries)
        brand = next(e for e in entries if e.field == "preferred_brands")
        second.set_entry(customer, brand.id, "Keychron")
        budget = next(e for e in entries if e.field == "budget_min")
        second.forget(customer, budget.id)
        summary = first.summary(customer)
        assert summary.preferred_brands == ["Keychron"] and summary.budget_min is None
        assert isinstance(first.context(customer, "s1"), str)
    finally:
        first.forget_customer(customer)
        first.close()
        second.close()
