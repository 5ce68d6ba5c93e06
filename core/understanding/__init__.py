"""Reading a customer message: typed commands with the words they came from (ARCHITECTURE.md §3a)."""

from core.understanding.commands import (
    Answer,
    CancelGoal,
    Command,
    CorrectSlot,
    FollowUp,
    GoBack,
    HumanHandoff,
    KnowledgeQuestion,
    Reading,
    SetSlots,
    Skip,
    SmallTalk,
    StartGoal,
    Unclear,
    reading_lines,
    value_words,
)

__all__ = ["Answer", "CancelGoal", "Command", "CorrectSlot", "FollowUp", "GoBack", "HumanHandoff",
           "KnowledgeQuestion", "Reading", "SetSlots", "Skip", "SmallTalk", "StartGoal", "Unclear",
           "reading_lines", "value_words"]
