"""Engine behaviours the synthetic evaluator grades against (paper §2.4, §3), tested directly."""

from __future__ import annotations

import shutil
from pathlib import Path

from core.engine.build import load_workspace
from core.engine.orchestrator import search_query
from core.evaluation.testing import WorkspaceCache, run_file
from core.retrieval.embedding import CachedEmbedder
from core.workspace.params import Param, bind_params

SELLER = Path(__file__).resolve().parents[2] / "examples" / "seller_support"


def test_generic_slot_names_are_bound_to_api_params() -> None:
    assert bind_params([Param("destination"), Param("otp")], ["old_email", "old_email_otp"]) == \
        {"otp": "old_email_otp", "destination": "old_email"}
    assert bind_params([Param("seller_id")], ["customer_id"]) == {"seller_id": "customer_id"}
    assert bind_params([Param("reference_id"), Param("topic", True)], ["request_id"]) == {"reference_id": "request_id"}
    assert bind_params([Param("listing_id")], ["listing_id", "extra"]) == {"listing_id": "listing_id"}


def test_lint_names_a_gar_row_whose_params_cannot_reach_the_api(tmp_path: Path, embedder: CachedEmbedder) -> None:
    ws = tmp_path / "seller"
    shutil.copytree(SELLER, ws, ignore=shutil.ignore_patterns(".state", "__pycache__"))
    gar = (ws / "gar.csv").read_text(encoding="utf-8")
    gar = gar.replace("seller.validate_otp,new_email|new_email_otp", "seller.validate_otp,new_email_otp")
    gar = gar.replace("check block reason,api_call,,seller.block_reason,listing_id",
                      "check block reason,api_call,,seller.block_reason,listing_id|reason")
    (ws / "gar.csv").write_text(gar, encoding="utf-8")
    problems = [str(p) for p in load_workspace(ws, embedder).problems]
    assert any(p.startswith("gar.csv:21: error:") and "no param fills seller.validate_otp's destination" in p
               for p in problems), problems
    assert any(p.startswith("gar.csv:8: error:") and "has no param for reason" in p for p in problems), problems


def test_a_doubt_becomes_a_search_query_about_the_pending_question(seller_ws) -> None:  # type: ignore[no-untyped-def]
    sop = next(s for s in seller_ws.sops if s.id == "seller.listing_blocked")
    ask = next(n for n in sop.nodes.values() if n.label == "ask user to provide listing id")
    assert search_query("how to find it", ask) == "how to find my listing id"
    assert search_query("where is my listing id?", ask) == "where is my listing id?"
    assert search_query("what payment methods do you take?", ask) == "what payment methods do you take?"
    assert search_query("how to find it", None) == "how to find it"


def test_the_runner_checks_execution_memory(tmp_path: Path) -> None:
    f = tmp_path / "memory.yaml"
    f.write_text(f"""name: wrong memory
workspace: {SELLER}
customer_id: S1001
turns:
  - user: why is my listing blocked?
    expect:
      memory:
        - {{action: check user status, observation: {{status: on-hold}}, feedback: success}}
        - {{action: ask user to provide listing id, feedback: success}}
""")
    result = run_file(f, None, WorkspaceCache())
    fails = result.turns[0].failures
    assert any(x.startswith("memory: expected 2 entries, got 1") for x in fails), fails
    assert any(x.startswith("memory[1].observation: expected {'status': 'on-hold'}") for x in fails), fails
