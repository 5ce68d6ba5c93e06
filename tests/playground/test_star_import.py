"""Importing a STAR flow through the playground service: the checked, backed-up, undoable save the studio uses."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from core.engine.build import load_workspace
from core.playground import Playground, create_workspace
from core.retrieval.embedding import CachedEmbedder
from core.shared.errors import UserInputError
from core.shared.problems import errors
from tests.playground.conftest import snapshot
from tests.star.support import FIXTURE, TASK

FLOW = ("library_renew.json", (TASK / "library_renew.json").read_bytes())
API = ("library_renew.json", (FIXTURE / "apis" / "library_renew.json").read_bytes())
SOP = "sops/library_renew.json"
FIRST_QUESTION = "What is your name, please?"  # the chart's first ask (hello -> ask_name)


@pytest.fixture()
def blank_pg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: CachedEmbedder) -> Iterator[Playground]:
    """A Playground on a freshly created blank workspace."""
    monkeypatch.setenv("SOP_WORKSPACES_DIR", str(tmp_path / "mine"))
    play = Playground(create_workspace("Library Desk", "blank"), embedder=embedder)
    yield play
    play.close()


def _check_imported(play: Playground, embedder: CachedEmbedder) -> None:
    root = play.root
    sop = json.loads((root / SOP).read_text(encoding="utf-8"))
    assert sop["id"] == "library.renew" and sop["startNode"] == "ask_name"
    assert sop["nodes"]["ask_name"]["messageTemplate"] == FIRST_QUESTION
    rows = {r["action"]: r for r in csv.DictReader(io.StringIO((root / "gar.csv").read_text(encoding="utf-8")))}
    assert rows["query library renew check"]["action_type"] == "api_call"
    assert rows["query library renew check"]["api"] == "library_renew.query"
    assert rows["library inform renewed"]["action_type"] == "message_to_user"
    store = yaml.safe_load((root / "store.yaml").read_text(encoding="utf-8"))
    assert store["agents"]["library"] == {"goals": "library.*", "tools": ["library_renew.query"]}
    assert store["tools"]["library_renew.query"]["python"] == "star/library_renew.py:query"
    assert (root / "star" / "library_renew.py").is_file() and (root / "star" / "library_renew.json").is_file()
    fresh = load_workspace(root, embedder)  # lint from disk, not the playground's cached view
    assert not errors(fresh.problems), [str(p) for p in fresh.problems]
    assert not errors(play.problems), [str(p) for p in play.problems]
    assert "library_renew.json" in [f.name for f in play.studio.sop_files()]


@pytest.mark.parametrize("which", ["demo", "blank"])
def test_folder_import_writes_sop_gar_store_and_the_next_chat_runs_it(which: str, request: pytest.FixtureRequest,
                                                                     embedder: CachedEmbedder) -> None:
    play: Playground = request.getfixturevalue("pg" if which == "demo" else "blank_pg")
    assert not (play.root / SOP).exists()
    imported, result = play.studio.import_star(TASK)
    assert result.saved, [str(p) for p in result.blocking]
    assert (imported.task, imported.sop_id, imported.agent, imported.tool) == (
        "library_renew", "library.renew", "library", "library_renew.query")
    assert set(imported.files) == {SOP, "gar.csv", "store.yaml", "star/library_renew.py", "star/library_renew.json"}
    for rel, content in imported.files.items():
        assert (play.root / rel).read_text(encoding="utf-8") == content, rel
    _check_imported(play, embedder)
    view = play.chat.send(play.chat.new_session_id(), "I want to renew a library book")
    assert view.reply == FIRST_QUESTION
    goal = view.state.active_goal
    assert goal is not None and goal.type == "library.renew" and goal.pending == "ask_name"
    assert view.trace["actions"] == ["ask_name"]


def test_folder_import_keeps_the_demo_workspace_content(pg: Playground) -> None:
    gar_before = (pg.root / "gar.csv").read_text(encoding="utf-8")
    store_before = yaml.safe_load((pg.root / "store.yaml").read_text(encoding="utf-8"))
    sops_before = {p.name: p.read_bytes() for p in (pg.root / "sops").iterdir()}
    assert pg.studio.import_star(TASK)[1].saved
    assert (pg.root / "gar.csv").read_text(encoding="utf-8").startswith(gar_before)
    store_after = yaml.safe_load((pg.root / "store.yaml").read_text(encoding="utf-8"))
    assert set(store_before["agents"]) < set(store_after["agents"])
    assert set(store_before["tools"]) < set(store_after["tools"])
    assert all((pg.root / "sops" / name).read_bytes() == data for name, data in sops_before.items())
    assert "budget" in pg.chat.send("s-demo", "Recommend a gaming mouse").reply.lower()  # the demo still works


def test_upload_gives_the_same_sop_as_the_folder_import(ws_copy: Path, tmp_path: Path,
                                                        embedder: CachedEmbedder) -> None:
    other = tmp_path / "ws2"
    shutil.copytree(ws_copy, other)
    by_folder = Playground(ws_copy, embedder=embedder)
    by_upload = Playground(other, embedder=embedder)
    try:
        assert by_folder.studio.import_star(TASK)[1].saved
        imported, result = by_upload.studio.import_star_upload(FLOW, API)
        assert result.saved, [str(p) for p in result.blocking]
        assert (other / SOP).read_bytes() == (ws_copy / SOP).read_bytes()
        assert imported.tool == "library_renew.query"
    finally:
        by_folder.close()
        by_upload.close()


def test_upload_imports_the_same_flow_and_the_chat_runs_it(pg: Playground, tmp_path: Path,
                                                           embedder: CachedEmbedder) -> None:
    folder_sop = json.loads(pg.studio.import_star(TASK)[0].files[SOP])
    assert pg.history.undo() is not None and not (pg.root / SOP).exists()
    imported, result = pg.studio.import_star_upload(FLOW, API)
    assert result.saved, [str(p) for p in result.blocking]
    assert (imported.task, imported.sop_id) == ("library_renew", "library.renew")
    upload_sop = json.loads((pg.root / SOP).read_text(encoding="utf-8"))
    assert upload_sop["startNode"] == folder_sop["startNode"] and upload_sop["triggers"] == folder_sop["triggers"]
    assert list(upload_sop["nodes"]) == list(folder_sop["nodes"])
    assert {n: v.get("messageTemplate") for n, v in upload_sop["nodes"].items()} == \
        {n: v.get("messageTemplate") for n, v in folder_sop["nodes"].items()}
    assert not errors(load_workspace(pg.root, embedder).problems)
    assert pg.chat.send("s-up", "I want to renew a library book").reply == FIRST_QUESTION


# ---------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(("flow", "api", "pattern"), [
    (("library_renew.json", b'{"graph": {'), API, r"library_renew\.json:1:\d+: JSON syntax"),
    (("library_renew.json", b'{"task": "x", "nodes": {}}'), API, r"library_renew\.json: .*'replies'.*'graph'"),
    (("library_renew.json", b'{"replies": {"a": "Hi"}}'), API, r"library_renew\.json: .*'graph'"),
    (("library_renew.json", b"[1, 2, 3]"), API, r"library_renew\.json: a STAR flowchart must be a JSON object"),
    (("library_renew.json", b"\x89PNG\r\n\x1a\n\x00\xff\xfe"), API, r"library_renew\.json: not UTF-8 text"),
    (FLOW, None, r"library_renew.json: upload the task's API schema"),
    (FLOW, ("library_renew.json", b"not json"), r"library_renew\.json:1:1: JSON syntax"),
    (FLOW, ("library_renew.json", b'{"output": []}'), r"library_renew\.json: .*'input' list"),
])
def test_bad_uploads_raise_a_clear_error_and_change_nothing(pg: Playground, flow: tuple[str, bytes],
                                                            api: tuple[str, bytes] | None, pattern: str) -> None:
    before = snapshot(pg.root)
    with pytest.raises(UserInputError) as caught:
        pg.studio.import_star_upload(flow, api)
    assert re.search(pattern, str(caught.value)), str(caught.value)
    assert snapshot(pg.root) == before
    assert pg.history.backups() == []


def test_a_flowchart_upload_that_is_not_json_by_name_is_refused(pg: Playground) -> None:
    before = snapshot(pg.root)
    with pytest.raises(UserInputError, match=r"must be the task's \.json file, got 'library_renew\.txt'"):
        pg.studio.import_star_upload(("library_renew.txt", FLOW[1]), API)
    assert snapshot(pg.root) == before


def _task_folder(tmp_path: Path, flowchart: bytes) -> Path:
    folder = tmp_path / "star" / "tasks" / "library_renew"
    folder.mkdir(parents=True)
    (folder / "library_renew.json").write_bytes(flowchart)
    (tmp_path / "star" / "apis").mkdir()
    (tmp_path / "star" / "apis" / "library_renew.json").write_bytes(API[1])
    return folder


@pytest.mark.parametrize(("flowchart", "pattern"), [
    (b'{\n  "replies": {"a": "Hi"},\n  "graph": {"a": }\n}\n', r"library_renew\.json:3:\d+: JSON syntax"),
    (b'{"task": "library_renew"}', r"library_renew\.json: a STAR flowchart needs 'replies'"),
    (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", r"library_renew\.json: not UTF-8 text"),
])
def test_bad_task_folders_raise_a_clear_error_and_change_nothing(pg: Playground, tmp_path: Path, flowchart: bytes,
                                                                 pattern: str) -> None:
    folder = _task_folder(tmp_path, flowchart)
    before = snapshot(pg.root)
    with pytest.raises(UserInputError) as caught:
        pg.studio.import_star(folder)
    message = str(caught.value)
    assert re.search(pattern, message) and str(folder) in message, message
    assert snapshot(pg.root) == before


def test_a_folder_that_does_not_exist_is_refused(pg: Playground, tmp_path: Path) -> None:
    missing = tmp_path / "star" / "tasks" / "no_such_task"
    before = snapshot(pg.root)
    with pytest.raises(UserInputError, match=re.escape(f"{missing}: not a folder")):
        pg.studio.import_star(missing)
    with pytest.raises(UserInputError, match="not a folder"):
        pg.studio.import_star(TASK / "library_renew.json")  # the file itself is not the task folder
    assert snapshot(pg.root) == before


def test_a_task_folder_without_api_schema_is_refused(pg: Playground, tmp_path: Path) -> None:
    folder = tmp_path / "library_renew"
    folder.mkdir()
    (folder / "library_renew.json").write_bytes(FLOW[1])
    before = snapshot(pg.root)
    with pytest.raises(UserInputError, match=r"library_renew: no API schema found"):
        pg.studio.import_star(folder)
    assert snapshot(pg.root) == before and pg.history.backups() == []


def test_an_upload_without_api_never_reads_a_server_file(pg: Playground, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    tmpdir = tmp_path / "tmpdir"
    (tmpdir / "apis").mkdir(parents=True)
    (tmpdir / "apis" / "library_renew.json").write_bytes(API[1])
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    before = snapshot(pg.root)
    with pytest.raises(UserInputError, match="upload the task's API schema"):
        pg.studio.import_star_upload(FLOW, None)
    assert snapshot(pg.root) == before


# ---------------------------------------------------------------------------- undo


def test_undo_after_a_folder_import_restores_the_previous_bytes(pg: Playground, embedder: CachedEmbedder) -> None:
    before = snapshot(pg.root)
    assert pg.studio.import_star(TASK)[1].saved
    assert snapshot(pg.root) != before
    assert [b.label for b in pg.history.backups()] == ["import STAR task library_renew"]
    done = pg.history.undo()
    assert done is not None and done.label == "import STAR task library_renew"
    assert snapshot(pg.root) == before
    assert pg.history.backups() == [] and "library_renew.json" not in [f.name for f in pg.studio.sop_files()]
    reply = pg.chat.send("s-undo", "I want to renew a library book").reply
    assert reply != FIRST_QUESTION  # the imported SOP is gone from the running agent too


def test_undo_after_an_upload_import_into_a_blank_workspace(blank_pg: Playground) -> None:
    before = snapshot(blank_pg.root)
    assert blank_pg.studio.import_star_upload(FLOW, API)[1].saved
    assert (blank_pg.root / SOP).is_file()
    assert blank_pg.history.undo() is not None
    assert snapshot(blank_pg.root) == before
    assert blank_pg.history.undo() is None  # nothing older to undo
