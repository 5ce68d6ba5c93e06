"""Preference extraction: what a message says about the customer's lasting preferences."""

from __future__ import annotations

import re

from core.language import lexicons as LEX
from core.language import text as T
from core.state.memory.base import PreferenceUpdate
from core.workspace.slots import Vocabulary

LIKE = f"(?:{LEX.alternation('likes') or '(?!x)x'})"  # the language files' words for liking and ruling out
DISLIKE = f"(?:no|never|{LEX.alternation('excludes')}|{LEX.alternation('not_wanted')})"
SHORT = re.compile(r"\b(keep it (short|brief)|short answers?|be (brief|concise)|briefly|tl;?dr|just the (top|best)|"
                   r"short and sweet|in short|less text)\b", re.I)
DETAILED = re.compile(r"\b(in detail|detailed|more details?|explain (everything|fully)|full comparison|"
                      r"compare (them|all))\b", re.I)


def extract_preferences(message: str, vocab: Vocabulary) -> PreferenceUpdate:
    """Brands liked and disliked, wanted features, budget range and answer style in one message."""
    low = LEX.segment(message.lower())  # Thai words spaced, so "ไม่เอา Samsung" reads like "not Samsung"
    liked, disliked = [], []
    for brand in vocab.brands:
        if brand.lower() not in low:  # every pattern below names the brand: a message without it is skipped
            continue
        b = re.escape(brand.lower())
        if re.search(rf"{T.L0}{DISLIKE}\s+(?:[\w'-]+\s+){{0,2}}{b}{T.L1}", low) \
                or re.search(rf"\b{b}\b[^.,;]*\b(sucks|is bad|please no)\b", low):
            disliked.append(brand)
        elif re.search(rf"{T.L0}{LIKE}\s+(?:[\w'-]+\s+){{0,2}}{b}{T.L1}", low) or re.search(rf"\b{b}\s+fan\b", low):
            liked.append(brand)
    lasting = re.search(r"\b(i (really )?(like|prefer|love|need|always want|always buy)|i'?m into)\b", low)
    features = [f for f in vocab.features if lasting and f in low and re.search(rf"\b{re.escape(f)}\b", low)]
    update = PreferenceUpdate(preferred_brands=liked, disliked_brands=disliked, preferred_features=features)
    rng = T.money_range(message)
    if rng and re.search(r"\b(budget|between|range|around|spend)\b", low):
        update.budget_min, update.budget_max = rng
    if SHORT.search(message):
        update.communication_style = "short"
    elif DETAILED.search(message):
        update.communication_style = "detailed"
    return update
