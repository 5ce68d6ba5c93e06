"""A new SOP starts as a draft: listed and edited like any SOP, written nowhere the engine reads and reaching no
chat until it is first saved; discarding the draft removes it."""

from __future__ import annotations

import pytest

from core.playground import Playground, templates
from core.shared.errors import UserInputError
from tests.playground.conftest import snapshot


def test_a_new_sop_is_listed_as_a_draft_and_live_only_once_saved(pg: Playground) -> None:
    before = snapshot(pg.root)
    source = templates.new_sop(pg.workspace, "damaged_item", "text")
    assert pg.studio.start_sop("damaged_item.sop", source) == "damaged_item.sop"
    assert snapshot(pg.root) == before  # nothing written where the engine reads
    listed = {f.name: f for f in pg.studio.sop_files()}
    assert not listed["damaged_item.sop"].saved and listed["recommend_item.sop"].saved
    assert pg.studio.read_sop("damaged_item.sop") == "" and pg.studio.draft("sops/damaged_item.sop") == source
    assert "I need help with damaged item" not in {t for s in pg.workspace.sops for t in s.triggers}
    with pytest.raises(UserInputError, match="already exists"):
        pg.studio.start_sop("damaged_item.sop", source)
    with pytest.raises(UserInputError, match="already exists"):
        pg.studio.start_sop("recommend_item.sop", source)
    result = pg.studio.save_sop("damaged_item.sop", source)
    assert result.saved and (pg.root / "sops" / "damaged_item.sop").read_text(encoding="utf-8") == source
    assert pg.studio.draft("sops/damaged_item.sop") is None
    assert {f.name: f.saved for f in pg.studio.sop_files()}["damaged_item.sop"]
    assert "I need help with damaged item" in {t for s in pg.workspace.sops for t in s.triggers}
    assert pg.history.backups()[0].label.startswith("create sops/damaged_item.sop")


def test_a_discarded_new_sop_is_gone(pg: Playground) -> None:
    pg.studio.start_sop("later.json", templates.new_sop(pg.workspace, "later", "json"))
    pg.studio.discard_draft("sops/later.json")
    assert "later.json" not in {f.name for f in pg.studio.sop_files()}
