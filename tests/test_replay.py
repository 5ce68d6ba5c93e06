"""Replay a recorded conversation against an edited SOP: what changes, side by side, and nothing done twice."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core import build_orchestrator
from core.engine.build import load_workspace
from core.evaluation.replay import Recording, replay
from core.playground.changes import ChangeSet, staged
from core.retrieval.embedding import CachedEmbedder
from core.shared.errors import UserInputError
from tests.conftest import trusted

ROOT = Path(__file__).resolve().parent.parent
BIKES = ROOT / "examples" / "bike_repairs"
CHAT = ["I want to book a repair", "Lotte Visser", "the chain slips", "next Wednesday", "06 11223344"]
# the edit: the phone number is asked before the day
SWAP = ("ask customer which day suits them\nask customer for a phone number\n",
        "ask customer for a phone number\nask customer which day suits them\n")


@pytest.fixture()
def bikes(tmp_path: Path) -> Path:
    ws = tmp_path / "bikes"
    shutil.copytree(BIKES, ws, ignore=shutil.ignore_patterns(".state", "__pycache__"))
    # the booking tool counts its runs, so a test can see that a replay never books again
    (ws / "tools.py").write_text((ws / "tools.py").read_text() + (
        "\n\ndef counted_book(**kw: str) -> dict[str, object]:\n"
        "    from pathlib import Path\n"
        "    runs = Path(__file__).with_name('bookings.txt')\n"
        "    runs.write_text((runs.read_text() if runs.exists() else '') + 'x')\n"
        "    return book(**kw)\n"), encoding="utf-8")
    store = ws / "store.yaml"
    store.write_text(store.read_text().replace("python: tools.py:book", "python: tools.py:counted_book"))
    return trusted(ws)


def _record(ws: Path, embedder: CachedEmbedder, tmp: Path) -> list[dict]:
    orch = build_orchestrator(ws, state_url=f"sqlite:///{tmp}/rec.db", loaded=load_workspace(ws, embedder))
    for text in CHAT:
        orch.handle_message("rec", text)
    return orch.store.traces("rec")


def test_a_recorded_chat_replayed_against_an_edited_sop(bikes: Path, embedder: CachedEmbedder,
                                                         tmp_path: Path) -> None:
    traces = _record(bikes, embedder, tmp_path)
    assert (bikes / "bookings.txt").read_text() == "x"
    recording = Recording.from_traces("chat", traces)
    sop = (bikes / "sops" / "book_repair.sop").read_text()
    saved = (bikes, load_workspace(bikes, embedder))
    with staged(bikes, ChangeSet("edit").put("sops/book_repair.sop", sop.replace(*SWAP))) as stage:
        report = replay(recording, (stage, load_workspace(stage, embedder)), saved)
    assert [t.changed for t in report.turns[:3]] == [[], [], ["reply", "steps"]]
    turn3 = report.turns[2]
    assert "which day suits you" in turn3.before.reply and "phone number" in turn3.after.reply
    assert turn3.before.steps == ["ask customer which day suits them"]
    assert turn3.after.steps == ["ask customer for a phone number"]
    last = report.turns[-1]  # the booking is made in both, with the recording's own ticket
    assert any(t.startswith("repairs.book(") for t in last.before.tools + last.after.tools)
    assert (bikes / "bookings.txt").read_text() == "x", "a replay never books again"
    assert "1 of 5" not in report.text() and f"{len(report.changed_turns)} of 5 turn(s) change" in report.text()


def test_a_replay_without_an_edit_matches_the_recording(bikes: Path, embedder: CachedEmbedder,
                                                        tmp_path: Path) -> None:
    recording = Recording.from_traces("chat", _record(bikes, embedder, tmp_path))
    report = replay(recording, (bikes, load_workspace(bikes, embedder)))
    assert report.before_label == "as recorded"
    assert [t.changed for t in report.turns if set(t.changed) & {"reply", "steps", "tools"}] == []
    assert (bikes / "bookings.txt").read_text() == "x"


def test_a_new_world_changing_call_is_not_made_during_a_replay(bikes: Path, embedder: CachedEmbedder,
                                                               tmp_path: Path) -> None:
    traces = _record(bikes, embedder, tmp_path)[:3]  # recorded before the booking happened
    traces.append({**traces[-1], "user": "next Wednesday", "tool_calls": []})
    traces.append({**traces[-1], "user": "06 11223344"})
    report = replay(Recording.from_traces("chat", traces), (bikes, load_workspace(bikes, embedder)))
    assert any("changes things and the recording never called it: not run" in n for n in report.turns[-1].notes)
    assert not (bikes / "bookings.txt").read_text().count("xx")


def test_cli_replays_a_session_export_and_a_test_file(bikes: Path, embedder: CachedEmbedder, tmp_path: Path) -> None:
    traces = _record(bikes, embedder, tmp_path)
    export = tmp_path / "session.json"
    export.write_text(json.dumps({"state": {"customer_id": ""}, "traces": traces}, default=str))
    edited = tmp_path / "edited.sop"
    edited.write_text((bikes / "sops" / "book_repair.sop").read_text().replace(*SWAP))
    run = subprocess.run([sys.executable, "-m", "core", "replay", str(export), "--workspace", str(bikes), "--sop",
                          f"sops/book_repair.sop={edited}", "--json"], capture_output=True, text=True, cwd=ROOT,
                         timeout=600)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["turns"] == 5 and data["details"][2]["changed"] == ["reply", "steps"]
    assert data["before"] == "as saved" and data["after"].startswith("edited: sops/book_repair.sop")
    test_file = bikes / "conversations" / "book_repair.yaml"
    run = subprocess.run([sys.executable, "-m", "core", "replay", str(test_file), "--workspace", str(bikes)],
                         capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert run.returncode != 0 and "holds no replies of its own" in run.stderr
    run = subprocess.run([sys.executable, "-m", "core", "replay", str(test_file), "--workspace", str(bikes), "--sop",
                          "sops/book_repair.sop"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert run.returncode != 0 and "expected PATH_IN_WORKSPACE=EDITED_FILE" in run.stderr


def test_a_file_that_is_not_a_recording_is_refused_by_name(tmp_path: Path) -> None:
    bad = tmp_path / "notes.json"
    bad.write_text('{"hello": 1}')
    with pytest.raises(UserInputError, match="notes.json: not a recording"):
        Recording.load(bad)
    broken = tmp_path / "broken.yaml"
    broken.write_text("turns: [\n")
    with pytest.raises(UserInputError, match="broken.yaml: cannot read the recording"):
        Recording.load(broken)
