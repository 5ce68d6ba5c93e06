"""The trigger trial: which procedure a sentence would start, read by the engine's own rule brain, with the draft
being edited read in place of its saved file."""

from __future__ import annotations

from core.engine.build import rule_brain
from core.playground import Playground
from core.sop.canvas.settings import read_settings, write_settings


def test_the_trial_scores_as_the_engine_reads_an_opening_message(pg: Playground) -> None:
    found = pg.studio.trial_triggers("where is my order? it has not arrived")
    assert found.starts is not None and found.starts.sop_id == "support.order_status"
    assert [s.score for s in found.scores] == sorted((s.score for s in found.scores), reverse=True)
    assert {s.sop_id for s in found.scores} == {s.id for s in pg.workspace.sops}
    engine = dict(rule_brain(pg.workspace).perceive("where is my order? it has not arrived", pg.workspace.sops).intents)
    assert {s.sop_id: s.score for s in found.scores} == {k: round(v, 3) for k, v in engine.items()}
    assert found.threshold == 0.5


def test_a_trigger_added_in_the_draft_counts_before_it_is_saved(pg: Playground) -> None:
    sentence = "the pigeon ate my warranty card"
    before = pg.studio.trial_triggers(sentence)
    assert before.starts is None or before.starts.sop_id != "support.troubleshoot"
    source = pg.studio.read_sop("troubleshoot.sop")
    draft = write_settings(source, "text", read_settings(source, "text").with_trigger(sentence))
    after = pg.studio.trial_triggers(sentence, "sops/troubleshoot.sop", draft)
    assert after.starts is not None and after.starts.sop_id == "support.troubleshoot" and after.starts.score > 0.9
    assert pg.studio.trial_triggers(sentence).scores == before.scores  # nothing saved


def test_the_store_s_words_are_read_as_the_chat_reads_them(pg: Playground) -> None:
    said = "เมาส์ ใช้ไม่ได้"  # store.yaml aliases: เมาส์ -> Mouse
    unread = dict(rule_brain(pg.workspace).perceive(said, pg.workspace.sops).intents)["support.troubleshoot"]
    thai = pg.studio.trial_triggers(said)
    assert thai.starts is not None and thai.starts.sop_id == "support.troubleshoot"
    assert thai.starts.score > unread and unread < thai.threshold  # without the store's words it would start nothing
