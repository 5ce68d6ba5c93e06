"""A search whose inputs are all optional (the fixture in ``fixture3/``, a bike rental written for these tests).

No chart step asks for the bike's kind, size, price band or station: the customer may give any of them
unasked. They are still the search's inputs (typed by the GAR's ask rows), the message that only invites
them is skipped once some are given, and an option the customer rules out is not a value.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.engine.build import Workspace, build_orchestrator, load_workspace
from core.engine.orchestrator import Orchestrator
from core.importers import import_star_task, write_import
from core.importers.star_api import normalise
from core.retrieval.embedding import CachedEmbedder
from core.tools.gateway import ToolScript

TASK = Path(__file__).parent / "fixture3" / "tasks" / "bike_search"
TOOL = "bike_search.query"
FOUND = ToolScript({TOOL: {"result": normalise(
    {"Kind": "Electric", "Size": "Large", "PriceBand": "Premium", "Station": "Harbour"})}})


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bikes")
    write_import(import_star_task(TASK, out), out)
    return out


@pytest.fixture(scope="module")
def ws(root: Path, embedder: CachedEmbedder) -> Workspace:
    return load_workspace(root, embedder)


@pytest.fixture()
def orch(ws: Workspace, root: Path, tmp_path: Path) -> Orchestrator:
    return build_orchestrator(root, loaded=ws, state_url=f"sqlite:///{tmp_path}/s.sqlite")


def say(orch: Orchestrator, text: str) -> dict[str, Any]:
    orch.handle_message("s", text, script=FOUND)
    trace = orch.last_trace("s")
    assert trace is not None
    return trace


def calls(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [c["args"] for c in trace["tool_calls"] if c["tool"] == TOOL]


def test_every_input_of_the_api_is_an_optional_input_of_the_query(root: Path) -> None:
    sop = json.loads((root / "sops" / "bike_search.json").read_text())
    query = next(n for n in sop["nodes"].values() if n.get("tool") == TOOL)
    assert query["toolParams"] == {"Kind": "context.kind?", "Size": "context.size?",
                                   "PriceBand": "context.price_band?", "Station": "context.station?"}


def test_values_given_unasked_go_into_the_search_and_the_invitation_is_skipped(orch: Orchestrator) -> None:
    trace = say(orch, "Hi, I'd like to rent an electric bike from the Harbour station")
    assert calls(trace) == [{"Kind": "Electric", "Station": "Harbour"}]
    assert "bike_inform_filters" not in trace["actions"]
    assert any(d.startswith("skip 'bike_inform_filters': the customer already gave") for d in trace["decisions"])
    assert "Electric bike in size Large at Harbour" in trace["reply"]


def test_with_nothing_given_the_invitation_is_said_and_the_search_runs_unfiltered(orch: Orchestrator) -> None:
    trace = say(orch, "Hi, I'd like to rent a bike")
    assert trace["actions"][0] == "bike_inform_filters"
    assert trace["reply"].startswith("I can look for a bike by its kind")
    assert calls(trace) == [{}]  # optional inputs left out while unknown


def test_an_option_ruled_out_is_not_the_value(orch: Orchestrator) -> None:
    trace = say(orch, "I need a bike, not a city bike though, a mountain one in small")
    assert calls(trace) == [{"Kind": "Mountain", "Size": "Small"}]
    trace = say(orch, "anything but the Old Mill station please")
    assert all(c.get("Station") != "Old Mill" for c in calls(trace))
