"""When the rules are sure: the hybrid brain asks the model only about what these checks leave open.

The rules are sure of well-formed answers (an id of the expected shape, an email, a 6-digit code,
an amount, yes/no), of exact SOP triggers, of cancel / go-back / greeting / thanks words, of
questions, and of branch conditions they can read by number, by named value or by a yes/no field
of the observation. Anything else (an answer of an unexpected shape, a message no trigger matches
clearly, a condition read only by the observation's truthiness, a message that is not English)
goes to the model.
"""

from __future__ import annotations

from typing import Any

from core.language import text as T
from core.sop.graph import Node
from core.understanding.brains.base import Perception
from core.understanding.brains.conditions import FILLER, NEGATION
from core.understanding.brains.rule import RuleBrain
from core.understanding.extract import extract
from core.workspace.slots import SlotType, validate

YES_NO = {"yes", "no", "true", "false", "y", "n"}


def branch_is_sure(condition: str, observation: Any) -> bool:
    """Whether the rule brain reads this condition from the observation with certainty.

    Mirrors ``RuleBrain.branch``: a numeric comparison, a named value, or a yes/no flag decides; a
    decision that would fall back on the observation's mere truthiness (free text, a record with no
    flag) is not sure.
    """
    cond = FILLER.sub("", condition.strip().lower())
    core = NEGATION.sub(" ", cond)
    if RuleBrain._numeric(cond, observation) is not None:
        return True
    if T.words(core):
        values = _scalars(observation)
        if values and RuleBrain._value_match(core, observation, values) is not None:
            return True
    return has_flag(observation)


def has_flag(observation: Any) -> bool:
    """An observation whose truth is plain: a bool, yes/no, a number, nothing, a list of results,
    or a record carrying a yes/no field."""
    if observation is None or isinstance(observation, bool | int | float | list):
        return True
    if isinstance(observation, str):
        return observation.strip().lower() in YES_NO
    if isinstance(observation, dict):
        return any(isinstance(v, bool) or str(v).strip().lower() in YES_NO for v in observation.values())
    return False


def _scalars(obs: Any) -> list[str]:
    if isinstance(obs, str | int | float) and not isinstance(obs, bool):
        return [str(obs)]
    if isinstance(obs, dict):
        return [str(v) for v in obs.values() if isinstance(v, str | int | float) and not isinstance(v, bool)]
    return []


def typed_answer(node: Node, types: dict[str, SlotType], text: str, corrected: str,
                 candidates: list[dict[str, Any]]) -> bool:
    """Whether a reply gives every required slot of an ask in a checkable form (not free text)."""
    required = [p.name for p in node.fills if not p.optional]
    if not required:
        return False
    for name in required:
        st = types.get(name)
        if st is None or st.kind == "text":
            return False
        found = False
        for msg in dict.fromkeys((text, corrected)):
            val = extract(st, msg, asked=True, candidates=candidates)
            if validate(st, val) or (st.kind in ("boolean", "choice") and val is False):
                found = True
                break
        if not found:
            return False
    return True


def free_text_ask(node: Node, types: dict[str, SlotType]) -> bool:
    """An ask whose every slot takes free text: any reply is an answer."""
    return bool(node.fills) and all((types.get(p.name) or SlotType(p.name, "text")).kind == "text"
                                    for p in node.fills)


def social(p: Perception) -> bool:
    """A greeting or thanks with little else in it."""
    return p.greeting or p.thanks
