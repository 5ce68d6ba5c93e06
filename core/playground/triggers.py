"""Which of a workspace's procedures a trial sentence would start, with the scores: read by the engine's own
rule brain (:func:`core.engine.build.rule_brain`) from the SOPs' titles and triggers, the store's words for the
customer's applied first, with the draft being edited in place of its saved file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.engine.build import load_workspace, rule_brain
from core.engine.settings import settings_from
from core.language import text as T
from core.playground.changes import ChangeSet, staged

if TYPE_CHECKING:
    from core.playground.service import Playground


@dataclass(frozen=True)
class TrialScore:
    """One procedure's score for the sentence."""

    sop_id: str
    title: str
    score: float


@dataclass(frozen=True)
class TriggerTrial:
    """The sentence's scores, best first; the procedure it would start (score at or over ``threshold``), if any."""

    sentence: str
    scores: tuple[TrialScore, ...]
    threshold: float

    @property
    def starts(self) -> TrialScore | None:
        """The procedure the sentence would start: the best, when it reaches the threshold."""
        best = self.scores[0] if self.scores else None
        return best if best is not None and best.score >= self.threshold else None


def trial(pg: Playground, sentence: str, rel: str = "", draft: str | None = None) -> TriggerTrial:
    """How the engine reads ``sentence`` as an opening message against every SOP's triggers; ``draft``: the
    unsaved source of ``rel`` read in place of the saved file (its triggers as they are being written)."""
    if draft is not None and rel:
        with staged(pg.root, ChangeSet("trial").put(rel, draft)) as stage:
            ws = load_workspace(stage, pg.embedder, kb_index="lazy")
    else:
        ws = pg.workspace
    cfg = ws.files.config
    said = T.Aliases(cfg.aliases).apply(sentence.strip())
    read = rule_brain(ws).perceive(said, ws.sops) if said else None
    titles = {s.id: s.title for s in ws.sops}
    scores = tuple(TrialScore(sid, titles.get(sid, sid), round(score, 3)) for sid, score in (read.intents if read
                                                                                             else []))
    return TriggerTrial(sentence, scores, settings_from(cfg.settings).intent_threshold)
