"""A procedure's settings written into its own source: only what changed is rewritten, in the SOP's format, and
what the engine reads back is what was asked for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.sop.canvas.model import CanvasError
from core.sop.canvas.settings import ProcedureSettings, read_settings, write_settings

ROOT = Path(__file__).resolve().parents[1]
TEXT = (ROOT / "sops" / "troubleshoot.sop").read_text(encoding="utf-8")
JSON = (ROOT / "sops" / "order_status.json").read_text(encoding="utf-8")


def _changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    a, b = before.splitlines(), after.splitlines()
    return [x for x in a if x not in b], [x for x in b if x not in a]


def test_a_text_sop_s_title_agent_and_triggers_are_changed_in_its_front_matter_alone() -> None:
    now = read_settings(TEXT, "text")
    assert now.id == "support.troubleshoot" and now.agent == "support" and "my screen is frozen" in now.triggers
    new = ProcedureSettings(now.id, "Fix a broken device", "When something stops working.", "sales",
                            now.triggers).without_trigger("my screen is frozen").with_trigger("my printer: it jams")
    out = write_settings(TEXT, "text", new)
    assert read_settings(out, "text") == new
    gone, added = _changed_lines(TEXT, out)
    assert sorted(gone) == sorted(["title: Fix a device problem", "agent: support", "  - my screen is frozen"])
    assert "title: Fix a broken device" in added and "agent: sales" in added
    assert '  - "my printer: it jams"' in added  # quoted where YAML would read it otherwise
    assert "  # Thai customers" in out  # the comment among the triggers is kept
    assert out.split("---", 2)[2] == TEXT.split("---", 2)[2]  # the steps untouched
    assert out.index("description:") < out.index("agent:")  # a new key goes where the usual order puts it


def test_a_json_sop_keeps_its_layout_and_writes_title_as_name() -> None:
    now = read_settings(JSON, "json")
    assert now.title == "Check an order"
    new = ProcedureSettings("support.where_is_it", "Where is my order", "", now.agent,
                            (*now.triggers, "parcel not here"))
    out = write_settings(JSON, "json", new)
    data = json.loads(out)
    assert data["id"] == "support.where_is_it" and data["name"] == "Where is my order"
    assert "description" not in data  # cleared: taken out
    assert data["triggers"][-1] == "parcel not here" and data["triggers"][:-1] == list(now.triggers)
    assert data["nodes"] == json.loads(JSON)["nodes"]
    gone, added = _changed_lines(JSON, out)
    assert '  "version": "1.0",' not in gone and '  "priority": 2,' not in gone  # other members as they were
    assert not [x for x in gone if "nodes" in x or "startNode" in x]
    assert read_settings(out, "json") == new


def test_settings_unchanged_give_the_file_byte_for_byte() -> None:
    for source, fmt in ((TEXT, "text"), (JSON, "json")):
        assert write_settings(source, fmt, read_settings(source, fmt)) == source  # type: ignore[arg-type]


def test_a_text_sop_without_front_matter_gets_one() -> None:
    out = write_settings("ask user for order id\n", "text", ProcedureSettings("support.x", "X", triggers=("hi",)))
    assert out.startswith("---\nid: support.x\ntitle: X\ntriggers:\n  - hi\n---\n")
    assert out.endswith("ask user for order id\n")


@pytest.mark.parametrize("bad", [ProcedureSettings(""), ProcedureSettings("has space"),
                                 ProcedureSettings("a.b", agent="two words")])
def test_settings_that_cannot_be_written_say_why(bad: ProcedureSettings) -> None:
    with pytest.raises(CanvasError):
        write_settings(TEXT, "text", bad)
