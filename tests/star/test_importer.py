"""``import star``: a STAR task becomes a lint-clean JSON SOP, GAR rows, an agent and a mock tool."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import yaml

from core.engine.build import Workspace, build_orchestrator, load_workspace
from core.importers import import_star_task, write_import
from core.importers.star_api import MockApi, normalise
from core.retrieval.embedding import CachedEmbedder
from core.shared.errors import UserInputError
from tests.star.support import FIXTURE, TASK

FILES = {"sops/library_renew.json", "gar.csv", "store.yaml", "star/library_renew.py", "star/library_renew.json"}


def test_import_computes_files_without_writing_anything(tmp_path: Path) -> None:
    result = import_star_task(TASK, tmp_path)
    assert set(result.files) == FILES
    assert list(tmp_path.iterdir()) == []
    assert (result.sop_id, result.agent, result.tool, result.api) == (
        "library.renew", "library", "library_renew.query", "library_renew")
    assert result.labels["query_check"] == "query" and result.labels["library_ask_card"] == "library_ask_card"


def test_the_sop_follows_the_chart(tmp_path: Path) -> None:
    sop = json.loads(import_star_task(TASK, tmp_path).files["sops/library_renew.json"])
    nodes = sop["nodes"]
    assert sop["startNode"] == "ask_name" and sop["agent"] == "library"
    assert "library loan renewal" in sop["triggers"] and "renew my library loans" in sop["triggers"]
    assert nodes["library_ask_card"]["resultKey"] == "library_card_number"
    assert nodes["library_ask_card"]["nextNodes"] == ["if_library_card_number_given"]
    assert nodes["if_library_card_number_given"]["nextNodes"] == ["library_ask_title", "library_ask_birthday"]
    check = nodes["query_check"]
    assert check["tool"] == "library_renew.query" and check["toolParams"]["RequestType"] == "Check"
    assert check["toolParams"]["Title"] == "context.book_title"  # required by the API
    assert check["toolParams"]["FullName"] == "context.full_name?"  # optional
    assert nodes["if_query_check_found"]["nextNodes"] == ["if_query_check_succeeded", "library_inform_nothing_found"]
    assert nodes["if_confirm"]["condition"] == "context.confirm === true"
    assert nodes["if_confirm"]["nextNodes"] == ["query_renew", "library_ask_title"]  # "no" asks for a title again
    assert nodes["library_ask_confirm"]["messageTemplate"].startswith("The {context.query_check.Title} can be")
    assert nodes["anything_else"]["description"].startswith("Offer more help")
    assert "hello" not in nodes and "goodbye_1" not in nodes and "out_of_scope" not in nodes


def test_written_workspace_is_lint_clean_and_its_mock_tool_answers(tmp_path: Path, embedder: CachedEmbedder) -> None:
    write_import(import_star_task(TASK, tmp_path), tmp_path)
    ws = load_workspace(tmp_path, embedder)
    assert [p for p in ws.problems if p.severity != "info"] == []
    tool = ws.tools["library_renew.query"]
    first = tool.run({"Title": "Dune", "RequestType": "Check"})
    assert first == tool.run({"Title": "Dune", "RequestType": "Check"})  # the same request, the same answer
    assert first["Title"] == "Dune" and first["found"] is True and first["success"] is True
    assert 1 <= first["Weeks"] <= 4 and first["RenewalStatus"] == "Renewal Confirmed"


def test_gar_rows_ask_for_each_input_query_and_inform(tmp_path: Path) -> None:
    rows = list(csv.DictReader(io.StringIO(import_star_task(TASK, tmp_path).files["gar.csv"])))
    by_action = {r["action"]: r for r in rows}
    assert by_action["ask user for library card number"]["params"] == "library_card_number"
    assert by_action["ask user for book title"]["user_interaction_metadata"] == \
        "the book title, one of The Hobbit, Dune or Emma"
    assert by_action["ask user for full name"]["user_interaction_metadata"] == "your full name"
    assert by_action["query library renew check"]["action_type"] == "api_call"
    assert by_action["query library renew check"]["params"].split("|")[:2] == ["library_card_number?", "full_name?"]
    informed = by_action["library inform renewed"]["user_interaction_metadata"]
    assert informed == "Done! The {Title} is now due on {DueDate}."


def test_import_into_an_existing_workspace_keeps_what_is_there(ws_copy: Path, embedder: CachedEmbedder) -> None:
    store = ws_copy / "store.yaml"
    store.write_text("# the demo store\n" + store.read_text())
    gar_before = (ws_copy / "gar.csv").read_text()
    result = import_star_task(TASK, ws_copy)
    assert result.files["gar.csv"].startswith(gar_before)  # rows appended, nothing rewritten
    assert result.files["store.yaml"].startswith("# the demo store\n")  # comments kept
    data = yaml.safe_load(result.files["store.yaml"])
    assert data["agents"]["library"] == {"goals": "library.*", "tools": ["library_renew.query"]}
    assert data["agents"]["sales"]["tools"] == ["inventory.query", "math.evaluate"]
    assert data["tools"]["library_renew.query"]["python"] == "star/library_renew.py:query"
    write_import(result, ws_copy)
    again = import_star_task(TASK, ws_copy)
    assert again.files["gar.csv"] == result.files["gar.csv"]  # importing twice adds nothing
    assert again.files["store.yaml"] == result.files["store.yaml"]
    assert [p for p in load_workspace(ws_copy, embedder).problems if p.severity == "error"] == []


def test_a_different_row_under_a_taken_name_gets_a_new_name(tmp_path: Path) -> None:
    (tmp_path / "gar.csv").write_text("action,action_type,user_interaction_metadata,api,params\n"
                                      "ask user for book title,ask_user_input,any title,,title\n")
    result = import_star_task(TASK, tmp_path)
    assert "ask user for book title 2,ask_user_input" in result.files["gar.csv"]
    assert any("ask user for book title 2" in n for n in result.notes)


def test_a_task_without_api_schema_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "lonely"
    folder.mkdir()
    (folder / "lonely.json").write_text((TASK / "library_renew.json").read_text())
    with pytest.raises(UserInputError, match="no API schema"):
        import_star_task(folder, tmp_path / "ws")


def test_results_are_normalised_to_found_and_success() -> None:
    assert normalise(None) == {"found": False, "success": False}
    assert normalise({"APIName": "x", "Message": "Unavailable"}) == {"Message": "Unavailable", "found": True,
                                                                       "success": False}
    assert normalise({"ReservationStatus": "Reservation Failed"})["success"] is False
    assert normalise({"Message": "We cannot authenticate the user otherwise."})["success"] is False
    assert normalise({"Title": "Dune", "Message": "Available"})["success"] is True


def test_the_mock_reads_a_plain_star_schema_too() -> None:
    mock = MockApi(FIXTURE / "apis" / "library_renew.json")
    assert mock.api.name == "library_renew"
    item = mock(Title="Emma", RequestType="Renew")
    assert item["Title"] == "Emma" and item["DueDate"] in ("1 June", "8 June", "15 June")


def test_a_chat_runs_the_imported_flow_end_to_end(library_ws: Workspace, library_root: Path, tmp_path: Path) -> None:
    orch = build_orchestrator(library_root, loaded=library_ws, state_url=f"sqlite:///{tmp_path}/s.sqlite")
    orch.handle_message("c", "I'd like to renew my library book Dune. My name is Ada Lovelace, card 44172290.")
    trace = orch.last_trace("c")
    assert trace["actions"] == ["query_check", "library_ask_confirm"]
    assert trace["tool_calls"][0]["args"] == {"LibraryCardNumber": 44172290, "FullName": "Ada Lovelace",
                                              "Title": "Dune", "RequestType": "Check"}
    reply = orch.handle_message("c", "yes please")
    assert orch.last_trace("c")["actions"] == ["query_renew", "library_inform_renewed", "anything_else"]
    assert "Done! The Dune is now due on" in reply


def test_a_crafted_api_file_name_never_becomes_code_or_a_path(tmp_path: Path, embedder: CachedEmbedder) -> None:
    crafted = tmp_path / "in" / "apis"
    crafted.mkdir(parents=True)
    evil = 'it\'s a"""+__import__("os").system("touch PWNED")+"""b ..%2F'  # closes a docstring it is put in
    api = crafted / f"{evil}.json"
    api.write_text((FIXTURE / "apis" / "library_renew.json").read_text(encoding="utf-8"), encoding="utf-8")
    ws = tmp_path / "ws"
    ws.mkdir()
    result = import_star_task(TASK, ws, api_file=api)
    assert all(rel.replace("/", "").replace(".", "").replace("_", "").isalnum() for rel in result.files)
    written = write_import(result, ws)
    assert all(p.resolve().is_relative_to(ws.resolve()) for p in written)
    loaded = load_workspace(ws, embedder)  # imports the generated Python tool
    assert [p for p in loaded.problems if p.severity != "info"] == []
    assert not (ws / "PWNED").exists() and not Path("PWNED").exists()
    assert not any("__import__" in text for rel, text in result.files.items() if rel.endswith(".py"))
