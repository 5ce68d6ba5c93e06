"""Named versions: publish with a note, list, diff two, roll back; each chat turn records the version that answered."""

from __future__ import annotations

import pytest

from core.playground import Playground
from core.shared.errors import UserInputError

EDIT = ("    tell user nothing matched\n", "    say goodbye politely\n")


def test_publish_list_diff_and_roll_back(pg: Playground) -> None:
    assert pg.history.versions() == [] and pg.history.current_version() == "unpublished"
    v1 = pg.history.publish_version("  the demo as shipped ")
    assert (v1.number, v1.label, v1.note) == (1, "v1", "the demo as shipped")
    assert "sops/recommend_item.sop" in v1.files and "store.yaml" in v1.files
    with pytest.raises(UserInputError, match="nothing changed since v1"):
        pg.history.publish_version("again")
    with pytest.raises(UserInputError, match="note"):
        pg.history.publish_version("   ")

    source = pg.studio.read_sop("recommend_item.sop")
    assert pg.studio.save_sop("recommend_item.sop", source.replace(*EDIT), tests="skip").saved
    assert pg.history.current_version() == "v1 + edits"
    assert pg.chat.send("a", "hello").trace["version"] == "v1 + edits"
    v2 = pg.history.publish_version("goodbye wording")
    assert v2.label == "v2" and [v.label for v in pg.history.versions()] == ["v1", "v2"] \
        and pg.history.current_version() == "v2"
    assert pg.chat.send("b", "hello").trace["version"] == "v2"  # a chat records the version that answered it

    changed = dict(pg.history.version_diff(1, 2))
    assert list(changed) == ["sops/recommend_item.sop"]
    assert "-    tell user nothing matched" in changed["sops/recommend_item.sop"]
    assert "+    say goodbye politely" in changed["sops/recommend_item.sop"]
    assert pg.history.version_diff(2, None) == []  # the working copy is v2

    (pg.root / "kb" / "extra.md").write_text("# Extra\n\nA note added after v2.\n", encoding="utf-8")
    assert [rel for rel, _ in pg.history.version_diff(2, None)] == ["kb/extra.md"]
    result = pg.history.roll_back(1)
    assert result.saved
    assert pg.studio.read_sop("recommend_item.sop") == source and not (pg.root / "kb" / "extra.md").exists()
    assert pg.history.current_version() == "v1"
    assert any(b.label == "roll back to v1" for b in pg.history.backups())  # undoable like every save
    with pytest.raises(UserInputError, match="already is v1"):
        pg.history.roll_back(1)
    with pytest.raises(UserInputError, match="no version v9"):
        pg.history.version_diff(9, None)
