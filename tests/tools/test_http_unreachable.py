"""An HTTP tool whose server does not answer is a lint warning naming the tool and its server, and the rest of
the workspace lints as before; a server that accepts connections gives none (lint sends it nothing)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from tests.understanding.desks import text_sop

ROOT = Path(__file__).resolve().parents[2]


def _desk(root: Path, port: int) -> Path:
    (root / "sops").mkdir(parents=True)
    (root / "store.yaml").write_text(
        "name: Parcel desk\ncurrency: EUR\nagents:\n  desk: {tools: [parcels.track]}\ntools:\n  parcels.track:\n"
        f"    http: {{url: 'http://127.0.0.1:{port}/parcels/{{parcel_id}}', method: GET}}\n"
        "    params: [parcel_id]\n", encoding="utf-8")
    (root / "gar.csv").write_text("action,action_type,user_interaction_metadata,api,params\n"
                                  'ask for the parcel,ask_user_input,"the parcel id, e.g. PX-2231",,parcel_id\n'
                                  "track the parcel,api_call|message_to_user,It is {status}.,parcels.track,parcel_id\n",
                                  encoding="utf-8")
    (root / "sops" / "track.sop").write_text(text_sop("desk.track", "track a parcel", "where is my parcel",
                                                      ["ask for the parcel", "track the parcel"]), encoding="utf-8")
    return root


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "core", "lint", "--workspace", str(root)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_an_http_tool_whose_server_does_not_answer_is_a_lint_warning(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on once it is closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = _lint(_desk(tmp_path / "ws", port))
    assert run.returncode == 0, run.stdout + run.stderr  # a warning, not an error: the rest works
    assert f"tool 'parcels.track': its server 127.0.0.1:{port} does not answer" in run.stdout
    assert "1 SOP(s) compiled" in run.stdout


def test_an_http_tool_whose_server_answers_gives_no_warning(tmp_path: Path) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        run = _lint(_desk(tmp_path / "ws", server.getsockname()[1]))
    assert "does not answer" not in run.stdout, run.stdout
