"""Workspace trust: a copied workspace's store.yaml may name programs (an MCP server's command, a Python tool);
linting or opening it runs none of them, starts no server, sends no secret and quotes no outside file, until
someone trusts it (the playground's button, ``--trust`` on the command line). Trust lives outside the workspace
and is asked again when what it runs changes. The bundled examples and the demo are trusted as shipped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from core.cli.main import main
from core.engine.build import build_orchestrator, load_workspace
from core.language.replies import say
from core.playground.workspaces import copy_workspace
from core.retrieval.embedding import CachedEmbedder
from core.tools.mcp_client import close_all
from tests.conftest import trusted
from tests.tools.faultserver import fault_server

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE_TEXT = "contents-of-a-file-outside-the-workspace"
TOKEN = "tok-never-sent-0f3a9"
STORE = """name: Copied desk
agents:
  desk: {goals: "desk.*", tools: [desk.lookup, orders.find_order]}
tools:
  orders:
    mcp: {command: /bin/sh, args: [-c, "touch mcp_started; cat '%s' >&2; exit 1"], start_timeout_s: 5}
  desk.lookup:
    params: [ticket]
    python: tools.py:lookup
"""
TOOLS = """from pathlib import Path

Path(__file__).with_name("python_ran").touch()


def lookup(ticket):
    return {"state": "open"}
"""
GAR = """action,action_type,user_interaction_metadata,api,params
ask customer for the ticket,ask_user_input,a ticket number like T-12,,ticket:id(T-12)
look up the ticket,api_call,,desk.lookup,ticket
tell customer the ticket state,message_to_user,"Ticket {ticket} is {state}.",,
tell customer the opening hours,message_to_user,"We are open from 9 to 5 on weekdays.",,
"""
SOPS = {
    "check.sop": "---\nid: desk.check\ntitle: Check a ticket\ntriggers: [check my ticket]\n---\n"
                 "ask customer for the ticket\nlook up the ticket\ntell customer the ticket state\n",
    "hours.sop": "---\nid: desk.hours\ntitle: Opening hours\ntriggers: [when are you open]\n---\n"
                 "tell customer the opening hours\n",
}


@pytest.fixture(autouse=True)
def _close_servers() -> object:
    yield
    close_all()


def _copied_desk(tmp_path: Path) -> Path:
    """A workspace as a colleague might hand it over: an MCP entry whose command leaves a mark and prints a
    file from outside the workspace, and a Python tool whose import leaves a mark."""
    outside = tmp_path / "outside.txt"
    outside.write_text(OUTSIDE_TEXT, encoding="utf-8")
    ws = tmp_path / "desk"
    (ws / "sops").mkdir(parents=True)
    (ws / "store.yaml").write_text(STORE % outside, encoding="utf-8")
    (ws / "tools.py").write_text(TOOLS, encoding="utf-8")
    (ws / "gar.csv").write_text(GAR, encoding="utf-8")
    for name, text in SOPS.items():
        (ws / "sops" / name).write_text(text, encoding="utf-8")
    return ws


def _ran(ws: Path) -> set[str]:
    return {m for m in ("mcp_started", "python_ran") if (ws / m).exists()}


def test_lint_of_an_untrusted_workspace_runs_nothing_it_declares_and_says_how_to_trust_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = _copied_desk(tmp_path)
    code = main(["lint", "--workspace", str(ws)])
    out = capsys.readouterr().out
    assert code == 0 and _ran(ws) == set()
    said = [line for line in out.splitlines() if "not trusted" in line]
    assert len(said) == 1 and "--trust" in said[0] and "Trust this workspace" in said[0]
    assert "MCP server orders" in said[0] and "Python tool desk.lookup" in said[0]
    assert OUTSIDE_TEXT not in out
    assert not (ws / ".state").exists() or not list((ws / ".state").rglob("trust*"))  # trust is kept elsewhere


def test_lint_still_checks_an_untrusted_python_tool_without_importing_it(tmp_path: Path,
                                                                         embedder: CachedEmbedder) -> None:
    ws = _copied_desk(tmp_path)
    (ws / "store.yaml").write_text((ws / "store.yaml").read_text().replace("tools.py:lookup", "tools.py:lokup"))
    problems = load_workspace(ws, embedder).problems
    assert _ran(ws) == set()
    assert any(p.severity == "error" and "tools.py has no function 'lokup'" in p.message for p in problems)


def test_trusting_with_the_flag_runs_them_and_is_remembered_outside_the_workspace(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], own_trust_file: Path) -> None:
    ws = _copied_desk(tmp_path)
    assert main(["lint", "--workspace", str(ws), "--trust"]) == 0
    assert _ran(ws) == {"mcp_started", "python_ran"}
    assert "not trusted" not in capsys.readouterr().out
    assert str(ws.resolve()) in json.loads(own_trust_file.read_text())["workspaces"]
    for mark in _ran(ws):
        (ws / mark).unlink()
    close_all()
    main(["lint", "--workspace", str(ws)])  # no flag: trusted already
    assert "mcp_started" in _ran(ws)


def test_a_changed_command_or_tool_file_needs_trust_again(tmp_path: Path, embedder: CachedEmbedder) -> None:
    ws = trusted(_copied_desk(tmp_path))
    assert load_workspace(ws, embedder).trusted
    (ws / "store.yaml").write_text((ws / "store.yaml").read_text().replace("touch mcp_started", "touch elsewhere"))
    assert not load_workspace(ws, embedder).trusted
    trusted(ws)
    (ws / "tools.py").write_text(TOOLS + "\n# one more line\n", encoding="utf-8")
    assert not load_workspace(ws, embedder).trusted


def test_chatting_with_an_untrusted_workspace_disables_only_its_programs(tmp_path: Path,
                                                                        embedder: CachedEmbedder) -> None:
    ws = _copied_desk(tmp_path)
    orch = build_orchestrator(ws, loaded=load_workspace(ws, embedder), state_url="sqlite:///:memory:")
    assert "9 to 5" in orch.handle_message("s", "when are you open")
    reply = orch.handle_message("s", "check my ticket")  # its one question would feed only the held tool
    assert reply.strip() == say("tool_unavailable", "en") and orch.load_state("s").active_goal is None
    assert any("desk.lookup is not available" in d for d in (orch.last_trace("s") or {})["decisions"])
    gateway = orch.gateway.call("desk", "desk.lookup", {"ticket": "T-12"})  # called anyway: refused, nothing sent
    assert gateway.error_kind == "unavailable" and "not trusted" in gateway.error and not gateway.sent
    assert _ran(ws) == set()


def test_the_playground_asks_once_and_trusting_there_runs_the_tools(tmp_path: Path,
                                                                    embedder: CachedEmbedder) -> None:
    from core.playground import Playground

    ws = _copied_desk(tmp_path)
    pg = Playground(ws, embedder=embedder, state_url="sqlite:///:memory:")
    try:
        assert not pg.trusted and "not trusted" in pg.trust_notice() and _ran(ws) == set()
        pg.trust()
        assert pg.trusted and pg.trust_notice() == "" and "python_ran" in _ran(ws)
        sid = pg.chat.new_session_id()
        pg.chat.send(sid, "check my ticket")
        assert "Ticket T-12 is open" in pg.chat.send(sid, "T-12").reply
    finally:
        pg.close()
    again = Playground(ws, embedder=embedder, state_url="sqlite:///:memory:")  # asked once: remembered
    try:
        assert again.trusted
    finally:
        again.close()


def test_an_untrusted_mcp_url_is_never_called_so_no_secret_leaves(tmp_path: Path, embedder: CachedEmbedder,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DESK_TOKEN", TOKEN)
    ws = _copied_desk(tmp_path)
    with fault_server() as srv:
        store = (ws / "store.yaml").read_text()
        url = f"    mcp: {{url: '{srv.base}/ok', headers: {{Authorization: 'Bearer ${{DESK_TOKEN}}'}}}}"
        (ws / "store.yaml").write_text(store.replace(store.splitlines()[5], url))
        load_workspace(ws, embedder)
        assert srv.hits == []
        load_workspace(trusted(ws), embedder)
        assert srv.hits and srv.hits[0]["headers"]["Authorization"] == f"Bearer {TOKEN}"  # trusted: it is called


def test_the_bundled_examples_and_their_unchanged_copies_are_trusted(tmp_path: Path,
                                                                     embedder: CachedEmbedder) -> None:
    from core.workspace.store_yaml import load_store_config
    from core.workspace.trust import is_trusted

    for name in ("mcp_orders", "library_desk"):
        example = ROOT / "examples" / name
        assert is_trusted(example, load_store_config(example / "store.yaml")[0])
    copy = tmp_path / "copy"
    copy.mkdir()
    copy_workspace(ROOT / "examples" / "library_desk", copy)
    assert is_trusted(copy, load_store_config(copy / "store.yaml")[0])
    (copy / "tools.py").write_text((copy / "tools.py").read_text() + "\nimport os\n", encoding="utf-8")
    assert not is_trusted(copy, load_store_config(copy / "store.yaml")[0])
    assert load_workspace(ROOT, embedder).trusted  # the demo


def test_a_staged_view_of_a_trusted_workspace_is_trusted(tmp_path: Path) -> None:
    from core.workspace.paths import workspace_view
    from core.workspace.store_yaml import load_store_config
    from core.workspace.trust import is_trusted

    ws = trusted(_copied_desk(tmp_path))
    stage = tmp_path / "stage"
    shutil.copytree(ws, stage)
    cfg = load_store_config(stage / "store.yaml")[0]
    assert not is_trusted(stage, cfg)
    with workspace_view(stage, ws):
        assert is_trusted(stage, cfg)
