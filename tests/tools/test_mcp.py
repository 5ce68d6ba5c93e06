"""MCP tools against real server processes: the example's order server (stdio) and tests/tools/mcp_test_server.py
(stdio, and streamable HTTP behind a bearer token). Nothing is patched: each test starts the servers it uses, and
a server's own call log shows what reached it."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core import build_orchestrator
from core.engine.build import load_workspace
from core.language.replies import say
from core.retrieval.embedding import CachedEmbedder
from core.tools.gateway import ToolGateway
from core.tools.mcp_client import close_all
from core.tools.mcp_tools import McpTool
from tests.conftest import trusted

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "mcp_orders"
SERVER = Path(__file__).with_name("mcp_test_server.py")


@pytest.fixture(autouse=True)
def _close_servers() -> Iterator[None]:
    yield
    close_all()  # each test's server processes end with it


def _calls(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []


def _orders_copy(tmp_path: Path, log: Path) -> Path:
    """The example workspace, its server logging every call it receives to ``log``."""
    ws = tmp_path / "mcp_orders"
    shutil.copytree(EXAMPLE, ws, ignore=shutil.ignore_patterns(".state", "conversations"))
    store = (ws / "store.yaml").read_text(encoding="utf-8")
    (ws / "store.yaml").write_text(store.replace("env: {ORDERS_CSV: data/orders.csv}",
                                                 f"env: {{ORDERS_CSV: data/orders.csv, ORDERS_CALL_LOG: '{log}'}}"),
                                   encoding="utf-8")
    return trusted(ws)


DESK_GAR = """action,action_type,user_interaction_metadata,api,params
ask customer for the ticket,ask_user_input,a ticket number like T-12,,ticket:id(T-12)
look up the ticket,api_call,,desk.lookup,ticket
tell customer the ticket state,message_to_user,"Ticket {ticket} is {state}.",,
break the ticket store,api_call,,desk.crash,ticket
tell customer it is done,message_to_user,"Done with {ticket}.",,
tell customer the opening hours,message_to_user,"We are open from 9 to 5 on weekdays.",,
"""
DESK_SOPS = {
    "check.sop": "---\nid: desk.check\ntitle: Check a ticket\ntriggers: [check my ticket, what state is my ticket in]\n"
                 "---\nask customer for the ticket\nlook up the ticket\ntell customer the ticket state\n",
    "break.sop": "---\nid: desk.break\ntitle: Break the store\ntriggers: [break the ticket store now]\n---\n"
                 "ask customer for the ticket\nbreak the ticket store\ntell customer it is done\n",
    "hours.sop": "---\nid: desk.hours\ntitle: Opening hours\ntriggers: [when are you open, what are your opening "
                 "hours]\n---\ntell customer the opening hours\n",
}


def _desk(tmp_path: Path, server: str, *, check_tool: str = "desk.lookup") -> Path:
    """A small workspace whose ``desk.*`` tools come from the MCP server ``server`` (the ``mcp:`` mapping)."""
    ws = tmp_path / "desk"
    (ws / "sops").mkdir(parents=True)
    (ws / "store.yaml").write_text(
        "name: Test Desk\nagents:\n  desk:\n    goals: \"desk.*\"\n"
        f"    tools: [{check_tool}, desk.crash, desk.close_ticket]\n"
        "  other:\n    goals: \"other.*\"\n    tools: []\n"
        f"tools:\n  desk:\n    mcp: {server}\n    timeout_s: 4\n", encoding="utf-8")
    (ws / "gar.csv").write_text(DESK_GAR.replace("desk.lookup", check_tool), encoding="utf-8")
    for name, text in DESK_SOPS.items():
        (ws / "sops" / name).write_text(text, encoding="utf-8")
    return trusted(ws)


def _stdio(log: Path, start_timeout_s: float = 15) -> str:
    return (f"{{command: python, args: ['{SERVER}'], env: {{MCP_TEST_LOG: '{log}'}}, "
            f"start_timeout_s: {start_timeout_s}}}")


# ------------------------------------------------------------------------------------------- listing, gateway
def test_the_servers_tools_are_listed_with_params_from_their_input_schema(embedder: CachedEmbedder) -> None:
    ws = load_workspace(EXAMPLE, embedder)
    assert not [p for p in ws.problems if p.severity == "error"], ws.problems
    mcp = {name: tool for name, tool in ws.tools.items() if isinstance(tool, McpTool)}
    assert sorted(mcp) == ["orders.cancel_order", "orders.change_address", "orders.find_order"]  # include: no export
    cancel = mcp["orders.cancel_order"].spec
    assert [(p.name, p.optional) for p in cancel.params] == [("order_id", False), ("reason", True)]
    assert "not shipped" in cancel.description
    assert cancel.side_effects and not mcp["orders.find_order"].spec.side_effects  # from the tools' annotations
    assert mcp["orders.change_address"].spec.side_effects  # neither read-only nor destructive: it may change things
    assert cancel.timeout_s == 5


def test_a_call_through_the_gateway_reaches_the_server_with_its_key_and_session_in_meta(
        tmp_path: Path, embedder: CachedEmbedder) -> None:
    log = tmp_path / "calls.jsonl"
    ws = load_workspace(_orders_copy(tmp_path, log), embedder)
    gw = ToolGateway(ws.tools, ws.files.config.agents)
    found = gw.call("desk", "orders.find_order", {"order_id": "FK-1043"}, key="k-1", session_id="s-1")
    assert found.ok and found.result["carrier"] == "Royal Mail" and found.key == ""  # a read-only call has no key
    done = gw.call("desk", "orders.cancel_order", {"order_id": "FK-1042"}, key="k-2", session_id="s-1",
                   customer_id="c-9")
    assert done.ok and done.result == {"cancelled": True, "order_id": "FK-1042", "refund_amount": "18.50"}
    assert done.side_effects and done.key == "k-2"
    calls = _calls(log)
    assert [c["tool"] for c in calls] == ["find_order", "cancel_order"]
    assert calls[0]["meta"] == {"sessionId": "s-1"}
    assert calls[1]["meta"] == {"sessionId": "s-1", "idempotencyKey": "k-2", "customerId": "c-9"}
    again = gw.call("desk", "orders.find_order", {"order_id": "FK-1042"}, session_id="s-1")
    other = gw.call("desk", "orders.find_order", {"order_id": "FK-1042"}, session_id="s-2")
    assert again.result["status"] == "cancelled" and other.result["status"] == "processing"


def test_an_agent_without_permission_is_refused_and_the_server_never_called(
        tmp_path: Path, embedder: CachedEmbedder) -> None:
    log = tmp_path / "calls.jsonl"
    ws = load_workspace(_desk(tmp_path, _stdio(log)), embedder)
    gw = ToolGateway(ws.tools, ws.files.config.agents)
    refused = gw.call("other", "desk.close_ticket", {"ticket": "T-1"}, key="k")
    assert not refused.ok and refused.error_kind == "denied" and "may not call" in refused.error
    assert gw.call("desk", "desk.close_ticket", {"ticket": "T-1"}, key="k").result == "closed T-1"
    assert [c["tool"] for c in _calls(log)] == ["close_ticket"]


def test_arguments_outside_the_input_schema_are_refused_before_the_call(
        tmp_path: Path, embedder: CachedEmbedder) -> None:
    log = tmp_path / "calls.jsonl"
    ws = load_workspace(_desk(tmp_path, _stdio(log)), embedder)
    gw = ToolGateway(ws.tools, ws.files.config.agents)
    extra = gw.call("desk", "desk.close_ticket", {"ticket": "T-1", "colour": "red"}, key="k")
    assert extra.error_kind == "bad_args" and "colour is not in the MCP server's input schema" in extra.error
    shape = gw.call("desk", "desk.lookup", {"ticket": "ticket one"})
    assert shape.error_kind == "invalid_input" and "invalid ticket" in shape.error and "T-" in shape.error
    big = gw.call("desk", "desk.lookup", {"ticket": "T-1", "size": "9"})  # "9" is read as a number, then refused
    assert big.error_kind == "invalid_input" and "size" in big.error and "5" in big.error
    missing = gw.call("desk", "desk.lookup", {"size": 2})
    assert missing.error_kind == "bad_args" and "ticket" in missing.error
    assert all(c.public_error == "" for c in (extra, shape, big, missing))  # the customer is not told the schema
    assert _calls(log) == []  # none of them reached the server
    ok = gw.call("desk", "desk.lookup", {"ticket": "T-1", "size": "2"})
    assert ok.ok and ok.result == {"ticket": "T-1", "state": "open", "size": 2}
    assert _calls(log) == [{"tool": "lookup", "args": {"ticket": "T-1", "size": 2}, "meta": {}}]
    said_invalid = gw.call("desk", "desk.lookup", {"ticket": "T-0"})  # the server's own "invalid ..." error
    assert said_invalid.error_kind == "invalid_input" and "invalid ticket T-0" in said_invalid.error


def test_a_call_past_its_deadline_times_out_and_the_server_stays_usable(
        tmp_path: Path, embedder: CachedEmbedder) -> None:
    log = tmp_path / "calls.jsonl"
    ws_dir = _desk(tmp_path, _stdio(log), check_tool="desk.slow")
    (ws_dir / "store.yaml").write_text((ws_dir / "store.yaml").read_text().replace("timeout_s: 4", "timeout_s: 0.5"))
    ws = load_workspace(ws_dir, embedder)
    gw = ToolGateway(ws.tools, ws.files.config.agents)
    started = time.perf_counter()
    late = gw.call("desk", "desk.slow", {"ticket": "T-1"})
    assert late.error_kind == "timeout" and time.perf_counter() - started < 2
    assert gw.call("desk", "desk.close_ticket", {"ticket": "T-2"}).ok  # the same session answers the next call


def test_a_save_checked_on_a_staged_view_reuses_the_workspaces_server(
        tmp_path: Path, embedder: CachedEmbedder) -> None:
    from core.playground.changes import ChangeSet, staged

    log = tmp_path / "calls.jsonl"
    root = _desk(tmp_path, _stdio(log))
    live = load_workspace(root, embedder).tools["desk.lookup"]
    gar = (root / "gar.csv").read_text(encoding="utf-8").replace("Ticket {ticket} is {state}.", "{ticket}: {state}")
    with staged(root, ChangeSet("edit").put("gar.csv", gar)) as stage:
        checked = load_workspace(stage, embedder).tools["desk.lookup"]
    assert isinstance(live, McpTool) and isinstance(checked, McpTool)
    assert checked.server.conn is live.server.conn  # the same session and process: none started per check
    assert ToolGateway({"desk.lookup": live}, load_workspace(root, embedder).files.config.agents).call(
        "desk", "desk.lookup", {"ticket": "T-3"}).ok


def _call_in_a_worker(ws: str, out: object) -> None:
    from core.tools.mcp_tools import build_mcp_tools
    from core.workspace.files import load_workspace_files

    files = load_workspace_files(ws)
    tools, _ = build_mcp_tools(files, set())
    call = ToolGateway(tools, files.config.agents).call("desk", "orders.find_order", {"order_id": "FK-1041"})
    out.put((call.ok, call.error))  # type: ignore[attr-defined]


def test_forked_worker_processes_each_start_their_own_server(tmp_path: Path, embedder: CachedEmbedder) -> None:
    import multiprocessing

    log = tmp_path / "calls.jsonl"
    ws = _orders_copy(tmp_path, log)
    gw = ToolGateway(load_workspace(ws, embedder).tools, {})
    assert gw.call("", "orders.find_order", {"order_id": "FK-1041"}, system=True).ok
    ctx = multiprocessing.get_context("fork")  # children inherit the parent's connection objects, not its threads
    out = ctx.Queue()
    workers = [ctx.Process(target=_call_in_a_worker, args=(str(ws), out)) for _ in range(2)]
    for w in workers:
        w.start()
    results = [out.get(timeout=60) for _ in workers]
    for w in workers:
        w.join(30)
    assert results == [(True, ""), (True, "")]
    servers = [c["server"] for c in _calls(log)]
    assert len(servers) == 3 and len(set(servers)) == 3  # the parent's server and one per worker


def test_a_server_folder_outside_the_workspace_is_an_error(tmp_path: Path, embedder: CachedEmbedder) -> None:
    ws = load_workspace(_desk(tmp_path, "{command: python, args: [server.py], cwd: ../elsewhere}"), embedder)
    assert any(p.severity == "error" and "cwd '../elsewhere' leads outside the workspace" in p.message
               for p in ws.problems)


# ------------------------------------------------------------------------------------------- lint
def test_an_sop_or_gar_row_naming_a_tool_the_server_does_not_list_is_an_error_with_its_line(
        tmp_path: Path, embedder: CachedEmbedder) -> None:
    ws = load_workspace(_desk(tmp_path, _stdio(tmp_path / "calls.jsonl"), check_tool="desk.lokup"), embedder)
    errors = [p for p in ws.problems if p.severity == "error"]
    gar = [p for p in errors if p.file == "gar.csv"]
    assert gar and gar[0].line == 3 and "unknown tool 'desk.lokup'" in gar[0].message
    assert "lists no tool 'lokup'" in gar[0].message and "did you mean 'lookup'" in gar[0].message
    step = [p for p in errors if p.file.endswith("check.sop")]
    assert step and step[0].line == 7 and "crash, lookup, slow" in step[0].message.replace("close_ticket, ", "")


def test_a_bad_mcp_entry_is_an_error_naming_its_line(tmp_path: Path, embedder: CachedEmbedder) -> None:
    ws_dir = _desk(tmp_path, "{command: python, url: 'http://127.0.0.1:9/mcp'}")
    ws = load_workspace(ws_dir, embedder)
    bad = [p for p in ws.problems if p.file == "store.yaml" and p.severity == "error"]
    assert bad and bad[0].line == 11 and "exactly one of command" in bad[0].message
    (ws_dir / "store.yaml").write_text((ws_dir / "store.yaml").read_text().replace(
        "{command: python, url: 'http://127.0.0.1:9/mcp'}",
        "{url: 'http://127.0.0.1:9/mcp', headers: {Authorization: Bearer abc}}\n    include: [lookup]"))
    ws = load_workspace(ws_dir, embedder)
    written = [p for p in ws.problems if "Authorization" in p.message]
    assert written and written[0].severity == "warning" and "environment" in written[0].message


# ------------------------------------------------------------------------------------------- failures
@pytest.mark.parametrize("server", [
    "{command: no-such-mcp-server-here, start_timeout_s: 30}",
    "{command: python, args: [-c, 'import sys; print(\"no config\", file=sys.stderr); sys.exit(2)'], "
    "start_timeout_s: 30}",
    "{command: python, args: [-c, 'import time; time.sleep(60)'], start_timeout_s: 1}",
])
def test_a_server_that_cannot_start_leaves_a_warning_and_the_rest_of_the_workspace_works(
        server: str, tmp_path: Path, embedder: CachedEmbedder) -> None:
    ws_dir = _desk(tmp_path, server)
    started = time.perf_counter()
    ws = load_workspace(ws_dir, embedder)
    assert time.perf_counter() - started < 8  # a missing or dying server is seen at once, a mute one at its deadline
    named = [p for p in ws.problems if "MCP server 'desk'" in p.message]
    assert [p.severity for p in named] == ["warning"] and named[0].line == 10 and "not available" in named[0].message
    assert not [p for p in ws.problems if p.severity == "error"]  # the SOPs naming its tools still load
    if "no-such" in server:
        assert "no such program" in named[0].message
    elif "exit" in server:
        assert "no config" in named[0].message  # what the server said before it died
    else:
        assert "did not answer within 1 s" in named[0].message
    orch = build_orchestrator(ws_dir, loaded=ws, state_url=f"sqlite:///{tmp_path}/s.sqlite")
    assert "9 to 5" in orch.handle_message("s", "when are you open?")
    orch.handle_message("s2", "check my ticket")
    reply = orch.handle_message("s2", "T-12")
    assert reply.strip() and "not available" not in reply and "Ticket T-12 is" not in reply
    trace = orch.last_trace("s2")
    assert trace is not None and "is not available" in trace["tool_calls"][0]["error"]


def test_a_server_that_crashes_mid_change_is_not_called_again_and_is_started_again_next_time(
        tmp_path: Path, embedder: CachedEmbedder) -> None:
    log = tmp_path / "calls.jsonl"
    ws_dir = _desk(tmp_path, _stdio(log))
    orch = build_orchestrator(ws_dir, loaded=load_workspace(ws_dir, embedder),
                              state_url=f"sqlite:///{tmp_path}/s.sqlite")
    orch.handle_message("s", "break the ticket store now")
    reply = orch.handle_message("s", "T-5")
    assert say("side_effect_unsure", "en") in reply  # it may or may not have gone through
    assert "ticket store is gone" not in reply and "Done with" not in reply
    trace = orch.last_trace("s")
    assert trace is not None
    errors = [c["error"] for c in trace["tool_calls"]]
    assert len(errors) == 1 and "stopped during the call" in errors[0]  # a change: never sent twice
    assert "the ticket store is gone" in errors[0] and "started again on the next call" in errors[0]
    assert [c["tool"] for c in _calls(log)] == ["crash"]
    assert [c["tool"] for c in orch.store.side_effects_to_check("s")] == ["desk.crash"]
    orch.handle_message("s3", "check my ticket")
    assert "Ticket T-7 is open" in orch.handle_message("s3", "T-7")  # a new process answers the next call


# ------------------------------------------------------------------------------------------- streamable HTTP
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture()
def http_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    port, log = _free_port(), tmp_path / "http-calls.jsonl"
    env = {**os.environ, "MCP_TEST_TOKEN": "tok-3141", "MCP_TEST_LOG": str(log)}
    proc = subprocess.Popen([sys.executable, str(SERVER), "http", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", log
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_streamable_http_server_gets_its_header_from_the_environment(
        http_server: tuple[str, Path], tmp_path: Path, embedder: CachedEmbedder,
        monkeypatch: pytest.MonkeyPatch) -> None:
    url, log = http_server
    ws_dir = _desk(tmp_path, f"{{url: '{url}', headers: {{Authorization: 'Bearer ${{DESK_TOKEN}}'}}, "
                             "start_timeout_s: 10}")
    monkeypatch.delenv("DESK_TOKEN", raising=False)
    unset = load_workspace(ws_dir, embedder)
    assert any("DESK_TOKEN is not set in the environment" in p.message for p in unset.problems)
    monkeypatch.setenv("DESK_TOKEN", "wrong")
    refused = load_workspace(ws_dir, embedder)
    assert any("MCP server 'desk'" in p.message and "401" in p.message for p in refused.problems)
    assert _calls(log) == []
    monkeypatch.setenv("DESK_TOKEN", "tok-3141")
    ws = load_workspace(ws_dir, embedder)
    assert not [p for p in ws.problems if "MCP server" in p.message], ws.problems
    assert "tok-3141" not in (ws_dir / "store.yaml").read_text()
    gw = ToolGateway(ws.tools, ws.files.config.agents)
    call = gw.call("desk", "desk.close_ticket", {"ticket": "T-9"}, key="k-9", session_id="s-9")
    assert call.ok and call.result == "closed T-9" and call.side_effects
    assert _calls(log) == [{"tool": "close_ticket", "args": {"ticket": "T-9"},
                            "meta": {"sessionId": "s-9", "idempotencyKey": "k-9"}}]


# ------------------------------------------------------------------------------------------- playground
def test_a_chat_saved_as_a_test_records_what_the_mcp_tools_answered(tmp_path: Path, embedder: CachedEmbedder) -> None:
    import yaml

    from core.playground import Playground

    log = tmp_path / "calls.jsonl"
    ws = _orders_copy(tmp_path, log)
    pg = Playground(ws, embedder=embedder)
    try:
        pg.chat.send("s", "Where is my order FK-1043?")
        rel, result, run = pg.runs.save_chat_as_test("s", "track a parcel")
        assert result.saved and run.passed
        spec = yaml.safe_load((ws / rel).read_text(encoding="utf-8"))
        recorded = spec["turns"][0]["tools"]["orders.find_order"]["result"]
        assert recorded["tracking"] == "RM2213450GB"
        assert len(_calls(log)) == 1  # the chat's call; the saved test's run used the recording
        assert run.turns[0].trace["tool_calls"][0]["scripted"] is True
    finally:
        pg.close()


def test_a_copy_of_the_example_takes_its_server_along_and_works(tmp_path: Path, embedder: CachedEmbedder) -> None:
    from core.playground.workspaces import copy_workspace

    copy = tmp_path / "copy"
    copy.mkdir()
    copy_workspace(EXAMPLE, copy)
    assert (copy / "orders_server.py").read_bytes() == (EXAMPLE / "orders_server.py").read_bytes()
    ws = load_workspace(copy, embedder)
    assert not [p for p in ws.problems if p.severity != "info"], ws.problems
    assert isinstance(ws.tools["orders.find_order"], McpTool) and ws.tools["orders.find_order"].remote is not None
