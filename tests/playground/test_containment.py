"""Nothing escapes its workspace: every file a template, an upload or store.yaml names is inside the workspace
once ``..``, absolute paths and symbolic links are followed, or it is refused naming the file, key and path."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from core.engine.build import build_orchestrator, load_workspace
from core.playground import Playground, create_workspace
from core.playground.workspaces import copy_workspace
from core.retrieval.embedding import CachedEmbedder
from core.shared.errors import UserInputError, WorkspaceError
from core.shared.problems import errors

SECRET = "TOP-SECRET-OUTSIDE-THE-WORKSPACE"
JSON_SOP = """{"id": "support.hello", "name": "Hello", "description": "d", "version": "1", "agent": "support",
 "triggers": ["hello there"], "startNode": "a", "nodes": {
 "a": {"id": "a", "type": "action", "description": "say", "messageTemplate": "Hi.", "nextNodes": ["end"]},
 "end": {"id": "end", "type": "end", "description": "done"}}}
"""

ROOT = Path(__file__).resolve().parents[2]


def _store(extra: str = "") -> str:
    return ("name: Probe\ncurrency: USD\nagents:\n  support:\n    goals: \"support.*\"\n"
            "    tools: [math.evaluate]\n" + extra)


def _workspace(root: Path, store_extra: str = "") -> Path:
    """A small workspace: store.yaml (plus ``store_extra``) and one JSON SOP (no GAR, no KB)."""
    (root / "sops").mkdir(parents=True)
    (root / "store.yaml").write_text(_store(store_extra), encoding="utf-8")
    (root / "sops" / "hello.json").write_text(JSON_SOP, encoding="utf-8")
    return root


def _outside_tool(path: Path) -> Path:
    """A Python file outside every workspace that leaves a mark when it is imported."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mark = path.with_suffix(".imported")
    path.write_text(f"from pathlib import Path\nPath({str(mark)!r}).write_text('ran')\n"
                    f"SECRET = {SECRET!r}\ndef f():\n    return SECRET\n", encoding="utf-8")
    return mark


def _nothing_created(mine: Path) -> None:
    """No workspace folder, no half-made copy and no copied file anywhere under the workspaces folder."""
    left = sorted(p.relative_to(mine).as_posix() for p in mine.rglob("*")) if mine.exists() else []
    assert left == [], left


@pytest.fixture()
def mine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "work" / "mine"
    monkeypatch.setenv("SOP_WORKSPACES_DIR", str(folder))
    return folder


# ---------------------------------------------------------------------------- create from a template


def test_a_template_naming_a_python_tool_outside_itself_is_refused_and_nothing_is_copied(
        tmp_path: Path, mine: Path) -> None:
    _outside_tool(tmp_path / "work" / "x" / "t.py")
    template = _workspace(tmp_path / "work" / "templates" / "evil",
                          "tools:\n  evil.run:\n    params: []\n    python: ../../x/t.py:f\n")
    with pytest.raises(UserInputError) as info:
        create_workspace("Copy", template)
    message = str(info.value)
    assert "store.yaml" in message and "tools.evil.run.python" in message and "'../../x/t.py'" in message
    assert "outside the template" in message and "nothing was created" in message
    _nothing_created(mine)
    assert not (tmp_path / "work" / "mine" / "x").exists()  # not next to the new workspace either


@pytest.mark.parametrize("key, extra", [
    ("inventory.source", "inventory:\n  source: ../secret.csv\n  columns: {name: name, price: price}\n"),
    ("tools.orders.get.table", "tools:\n  orders.get:\n    params: [order_id]\n    table: {abs}\n"
                               "    key: {order_id: order_id}\n"),
])
def test_a_template_naming_a_table_outside_itself_is_refused(tmp_path: Path, mine: Path, key: str,
                                                             extra: str) -> None:
    secret = tmp_path / "work" / "templates" / "secret.csv"
    secret.parent.mkdir(parents=True)
    secret.write_text(f"order_id,name,price\n1,{SECRET},1\n", encoding="utf-8")
    template = _workspace(tmp_path / "work" / "templates" / "evil", extra.replace("{abs}", str(secret)))
    with pytest.raises(UserInputError, match=rf"store\.yaml key {key} names") as info:
        create_workspace("Copy", template)
    assert "outside the template" in str(info.value)
    _nothing_created(mine)


@pytest.mark.parametrize("link", ["kb/leak.md", "sops/leak.sop", "data", "inventory.csv", "gar.csv"])
def test_a_template_holding_a_link_to_a_file_outside_itself_is_refused(tmp_path: Path, mine: Path,
                                                                      link: str) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Secret\n\n{SECRET}\n", encoding="utf-8")
    extra = "inventory:\n  source: inventory.csv\n  columns: {name: name, price: price}\n" \
        if link == "inventory.csv" else ""
    template = _workspace(tmp_path / "work" / "templates" / "evil", extra)
    path = template / link
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(outside if link == "data" else outside / "secret.md")
    with pytest.raises(UserInputError, match="leads outside the template") as info:
        create_workspace("Copy", template)
    assert link.split("/")[0] in str(info.value)
    _nothing_created(mine)


def test_a_link_inside_a_template_to_its_own_files_is_copied(tmp_path: Path, mine: Path,
                                                             embedder: CachedEmbedder) -> None:
    template = _workspace(tmp_path / "work" / "templates" / "fine")
    (template / "kb").mkdir()
    (template / "kb" / "hours.md").write_text("# Hours\n\nOpen 9 to 5.\n", encoding="utf-8")
    (template / "kb" / "same.md").symlink_to(template / "kb" / "hours.md")
    made = create_workspace("Fine", template)
    assert (made / "kb" / "same.md").read_text(encoding="utf-8") == "# Hours\n\nOpen 9 to 5.\n"
    assert not errors(load_workspace(made, embedder).problems)


# ---------------------------------------------------------------------------- loading a workspace


def test_a_python_tool_linked_from_outside_is_a_problem_at_load_and_never_runs(tmp_path: Path,
                                                                               embedder: CachedEmbedder) -> None:
    mark = _outside_tool(tmp_path / "elsewhere" / "t.py")
    ws = _workspace(tmp_path / "ws", "tools:\n  evil.run:\n    params: []\n    python: tools.py:f\n")
    (ws / "tools.py").symlink_to(tmp_path / "elsewhere" / "t.py")
    loaded = load_workspace(ws, embedder)
    [problem] = [p for p in errors(loaded.problems) if "tools.evil.run.python" in p.message]
    assert problem.file == "store.yaml" and problem.line > 0
    assert "'tools.py' leads outside the workspace" in problem.message and "elsewhere" in problem.message
    assert "evil.run" not in loaded.tools and not mark.exists()
    with pytest.raises(WorkspaceError, match="tools.evil.run.python"):
        build_orchestrator(ws, brain="rule", loaded=loaded)


@pytest.mark.parametrize("key, extra", [
    ("inventory.source", "inventory:\n  source: ../secret.csv\n  columns: {name: name, price: price}\n"),
    ("inventory.source", "inventory:\n  source: linked.csv\n  columns: {name: name, price: price}\n"),
    ("tools.orders.get.table", "tools:\n  orders.get:\n    params: [order_id]\n    table: {abs}\n"
                               "    key: {order_id: order_id}\n"),
])
def test_a_table_outside_the_workspace_is_a_problem_at_load_and_never_read(tmp_path: Path, key: str, extra: str,
                                                                          embedder: CachedEmbedder) -> None:
    secret = tmp_path / "secret.csv"
    secret.write_text(f"order_id,name,price\n1,{SECRET},1\n", encoding="utf-8")
    ws = _workspace(tmp_path / "ws", extra.replace("{abs}", str(secret)))
    (ws / "linked.csv").symlink_to(secret)
    loaded = load_workspace(ws, embedder)
    found = [p for p in errors(loaded.problems) if p.message.startswith(f"{key}: ")]
    assert found and found[0].file == "store.yaml" and "leads outside the workspace" in found[0].message
    assert loaded.catalog is None and "orders.get" not in loaded.tools
    assert SECRET not in repr(loaded.vocab)


def test_sops_kb_store_and_gar_linked_from_outside_are_problems_and_not_loaded(tmp_path: Path,
                                                                              embedder: CachedEmbedder) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "evil.json").write_text(JSON_SOP.replace("support.hello", "support.evil"), encoding="utf-8")
    (outside / "secret.md").write_text(f"# Secret\n\n{SECRET} is the answer.\n", encoding="utf-8")
    ws = _workspace(tmp_path / "ws")
    (ws / "kb").mkdir()
    (ws / "kb" / "fine.md").write_text("# Hours\n\nOpen 9 to 5.\n", encoding="utf-8")
    (ws / "kb" / "secret.md").symlink_to(outside / "secret.md")
    (ws / "sops" / "evil.json").symlink_to(outside / "evil.json")
    loaded = load_workspace(ws, embedder)
    by_file = {p.file: p.message for p in errors(loaded.problems)}
    assert "kb/secret.md leads outside the workspace" in by_file["kb/secret.md"]
    assert "sops/evil.json leads outside the workspace" in by_file["sops/evil.json"]
    assert [s.id for s in loaded.sops] == ["support.hello"]
    assert loaded.kb is not None and all(SECRET not in c.text for c in loaded.kb.chunks)

    (outside / "store.yaml").write_text(_store(), encoding="utf-8")
    (ws / "store.yaml").unlink()
    (ws / "store.yaml").symlink_to(outside / "store.yaml")
    problems = load_workspace(ws, embedder).problems
    assert any(p.file == "store.yaml" and "store.yaml leads outside the workspace" in p.message
               for p in errors(problems))


# ---------------------------------------------------------------------------- uploads


def test_an_upload_into_a_folder_linked_outside_the_workspace_writes_nothing_there(
        tmp_path: Path, embedder: CachedEmbedder) -> None:
    ws = tmp_path / "ws"
    copy_workspace(ROOT / "examples" / "outdoor", ws)
    shutil.rmtree(ws / "kb")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (ws / "kb").symlink_to(outside, target_is_directory=True)
    play = Playground(ws, embedder=embedder)
    try:
        with pytest.raises(UserInputError, match=r"kb/new\.md leads outside the workspace"):
            play.store.upload_kb([("new.md", b"# New\n\nSome text.\n")])
    finally:
        play.close()
    assert sorted(p.name for p in outside.iterdir()) == []
