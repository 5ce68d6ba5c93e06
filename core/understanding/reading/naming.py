"""Which SOPs a message names (:class:`SopNames`): by their subject words, by a value only one of them lists,
and, near the SOP the conversation is in, by the title words that tell its kin apart."""

from __future__ import annotations

from collections.abc import Callable

from core.language import text as T
from core.sop.graph import Sop
from core.understanding.brains.base import Brain
from core.understanding.executor import FlowExecutor
from core.understanding.mentions import find_option
from core.understanding.signals import kin_words, subjects


class SopNames:
    """The SOPs of a workspace as a message may name them: their subject words, their title words and, per
    SOP, the title words that tell its kin apart (``kin``)."""

    def __init__(self, sops: dict[str, Sop], agent_of: Callable[[str], FlowExecutor | None], brain: Brain) -> None:
        self.sops = sops
        self.agent_of = agent_of
        self.brain = brain
        self._subjects = subjects(list(sops.values()))
        self._title_words = {s.id: {T.stem(w) for w in T.words(s.title) if len(w) > 2 and w not in T.STOPWORDS}
                             for s in sops.values()}
        self.kin = {sid: kin_words(sid, self._title_words) for sid in self._title_words}

    def listed_values(self, sop: Sop, text: str) -> dict[str, str]:
        """The values a message names for the SOP's questions that list their answers."""
        agent = self.agent_of(sop.id)
        types = agent.types(sop) if agent is not None else {}
        found = {name: find_option(text, st.vocab) for name, st in types.items() if st.kind == "option"}
        return {k: v for k, v in found.items() if v}

    def topic_sops(self, text: str) -> set[str]:
        """SOPs whose subject the message names ("my balance", "a trail report", "book a canoe")."""
        said = {T.stem(w) for w in T.tokens(text) + T.tokens(self.brain.correct(text))}
        return {sid for sid, words in self._subjects.items() if words & said}

    def named_sops(self, text: str, near: str = "", *, values: bool = True) -> set[str]:
        """SOPs one of whose questions lists a value the message names ("a table at Lucca"), or whose
        subject it names. ``near``: the SOP the conversation is in; an SOP sharing a title word with it
        is also named by its own other title words, and when several are named those kin to it are
        meant ("reserve the one you found" while searching cabins: the cabin booking, not the canoe booking). A
        title word of ``near`` that the other SOPs named lack names ``near`` too, so a value another SOP
        lists does not take a message about ``near`` away from it. ``values=False``: by words only, not
        by the values the SOPs' questions list."""
        named = self.topic_sops(text)
        if values:  # values several SOPs list ("Friday"): the SOP given the most ("the Summit Trail on Friday")
            given = {sop.id: set(map(str, found.values())) for sop in self.sops.values()
                     if (found := self.listed_values(sop, text))}
            most = [sid for sid, vals in given.items() if all(vals > v for k, v in given.items() if k != sid)]
            named |= set(most) if len(most) == 1 else set(given)
        kin = self.kin.get(near)
        if not kin:
            return named
        said = {T.stem(w) for w in T.tokens(text)}
        named |= {sid for sid, own in kin.items() if own & said}
        near_named = named & set(kin)
        named = near_named if len(named) > 1 and near_named else named
        own = self._title_words.get(near, set())
        others = named - {near}  # "book the room at the Old Town Inn" while booking: still this SOP
        if others and all((own - self._title_words.get(k, set())) & said for k in others):
            named.add(near)
        return named
