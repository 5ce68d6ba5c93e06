"""The reader: a customer message read into typed commands with the words they came from (ARCHITECTURE.md §3a).

This module is the part's one door. The engine, the playground, the evaluations, the server and the CLI import
the names below from ``core.understanding`` and never from a module inside it: the contract "Other parts use the
reader's door, never its inner modules" in .importlinter fails CI on a direct import of an inner module from another
part (docs/architecture.md, "The reader's door").

What goes in, each turn: the message, perceived by a :class:`Brain` (``brain.perceive``: a :class:`Perception`,
its intents against the SOPs' triggers and its dialogue acts, and a model's checked commands), then a
:class:`ReadContext` for the :class:`RuleReader` (the perception, the running goal, the session's last goals, what
the knowledge base knows, the :class:`Reading` being written). What comes out: the chosen commands
(:class:`Command` and its kinds, each with the words it came from) and the :class:`Reading` that records them with
the ones dropped and why (the trace). While a step runs, the engine also asks the reader for what a reply gives
the step (:class:`AnswerReader`: an :class:`AnswerReading`) and for a value of a kind (:func:`extract_values`).

The commands are imported here at once (they are small and every reader builds them). Every other name is
imported on first use (PEP 562 ``__getattr__``): ``import core.understanding`` stays cheap, and the order in which
the inner modules load is the order they import each other in, never one this file imposes, so no import cycle
can start here. Type checkers read the same names from the ``TYPE_CHECKING`` block.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from core.understanding.commands import (
    Answer,
    CancelGoal,
    Clarify,
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

if TYPE_CHECKING:  # the same names for type checkers, in import order; _LAZY below groups them by job
    from core.understanding.answer_shape import GENERIC_KINDS, asked_in_order
    from core.understanding.answer_shape import unknown as slot_unknown
    from core.understanding.answers import AnswerReader, AnswerReading
    from core.understanding.brains.base import Brain, Perception, TurnContext, begin_turn, phrase
    from core.understanding.brains.llm import LLMBrain
    from core.understanding.brains.llm_client import LOCAL_KEY, ChatModel, LLMSettings, OpenAIChat
    from core.understanding.brains.rule import RuleBrain, fill_template
    from core.understanding.brains.usage import LLMUsage
    from core.understanding.candidates.encoding import ACT_MARKER, ACTS, BestSpan, Encoded, Encoder, SlotWords
    from core.understanding.candidates.encoding import pad as pad_batch
    from core.understanding.candidates.learned import MODEL_DIR as READER_MODEL_DIR
    from core.understanding.candidates.learned import MODEL_FILE as READER_MODEL_FILE
    from core.understanding.candidates.learned import RECORD_FILE as READER_RECORD_FILE
    from core.understanding.candidates.learned import LearnedReader
    from core.understanding.candidates.learned import USAGE as READER_USAGE
    from core.understanding.candidates.learned import model_file as reader_model_file
    from core.understanding.candidates.learned import reader as learned_reader
    from core.understanding.commerce import OFFERED, Commerce
    from core.understanding.extract import extract as extract_values
    from core.understanding.extract import labelled_value
    from core.understanding.mentions import find_option
    from core.understanding.preferences import extract_preferences
    from core.understanding.reading.context import ReadContext
    from core.understanding.reading.reader import RuleReader
    from core.understanding.remembered import REMEMBERED
    from core.understanding.signals import NOT_KEPT, search_query
    from core.understanding.values import reused_values

# name at the door -> (inner module, its name there). Grouped by job.
_LAZY: dict[str, tuple[str, str]] = {
    # The reader and its context: what goes in, the brain interface the engine calls.
    "RuleReader": ("core.understanding.reading.reader", "RuleReader"),
    "ReadContext": ("core.understanding.reading.context", "ReadContext"),
    "Brain": ("core.understanding.brains.base", "Brain"),
    "Perception": ("core.understanding.brains.base", "Perception"),
    "TurnContext": ("core.understanding.brains.base", "TurnContext"),
    "begin_turn": ("core.understanding.brains.base", "begin_turn"),
    "phrase": ("core.understanding.brains.base", "phrase"),
    # Brains: rule, LLM (hybrid is the LLM brain's mode="hybrid") and their settings.
    "RuleBrain": ("core.understanding.brains.rule", "RuleBrain"),
    "fill_template": ("core.understanding.brains.rule", "fill_template"),
    "LLMBrain": ("core.understanding.brains.llm", "LLMBrain"),
    "ChatModel": ("core.understanding.brains.llm_client", "ChatModel"),
    "OpenAIChat": ("core.understanding.brains.llm_client", "OpenAIChat"),
    "LLMSettings": ("core.understanding.brains.llm_client", "LLMSettings"),
    "LOCAL_KEY": ("core.understanding.brains.llm_client", "LOCAL_KEY"),
    "LLMUsage": ("core.understanding.brains.usage", "LLMUsage"),
    # The learned reader (candidates/): its proposals, and the inputs and files its training shares with it.
    "LearnedReader": ("core.understanding.candidates.learned", "LearnedReader"),
    "reader_model_file": ("core.understanding.candidates.learned", "model_file"),
    "READER_USAGE": ("core.understanding.candidates.learned", "USAGE"),
    "learned_reader": ("core.understanding.candidates.learned", "reader"),
    "READER_MODEL_DIR": ("core.understanding.candidates.learned", "MODEL_DIR"),
    "READER_MODEL_FILE": ("core.understanding.candidates.learned", "MODEL_FILE"),
    "READER_RECORD_FILE": ("core.understanding.candidates.learned", "RECORD_FILE"),
    "ACTS": ("core.understanding.candidates.encoding", "ACTS"),
    "ACT_MARKER": ("core.understanding.candidates.encoding", "ACT_MARKER"),
    "BestSpan": ("core.understanding.candidates.encoding", "BestSpan"),
    "Encoded": ("core.understanding.candidates.encoding", "Encoded"),
    "Encoder": ("core.understanding.candidates.encoding", "Encoder"),
    "SlotWords": ("core.understanding.candidates.encoding", "SlotWords"),
    "pad_batch": ("core.understanding.candidates.encoding", "pad"),
    # Answers and values the engine acts on.
    "AnswerReader": ("core.understanding.answers", "AnswerReader"),
    "AnswerReading": ("core.understanding.answers", "AnswerReading"),
    "extract_values": ("core.understanding.extract", "extract"),  # not "extract": that is the module's name
    "labelled_value": ("core.understanding.extract", "labelled_value"),
    "find_option": ("core.understanding.mentions", "find_option"),
    "slot_unknown": ("core.understanding.answer_shape", "unknown"),
    "GENERIC_KINDS": ("core.understanding.answer_shape", "GENERIC_KINDS"),
    "asked_in_order": ("core.understanding.answer_shape", "asked_in_order"),
    "reused_values": ("core.understanding.values", "reused_values"),
    "NOT_KEPT": ("core.understanding.signals", "NOT_KEPT"),
    "search_query": ("core.understanding.signals", "search_query"),
    "REMEMBERED": ("core.understanding.remembered", "REMEMBERED"),
    # Commerce: items offered, picked and asked about.
    "Commerce": ("core.understanding.commerce", "Commerce"),
    "OFFERED": ("core.understanding.commerce", "OFFERED"),
    # Preferences said in a message.
    "extract_preferences": ("core.understanding.preferences", "extract_preferences"),
}

__all__ = [
    # Commands and readings.
    "Answer", "CancelGoal", "Clarify", "Command", "CorrectSlot", "FollowUp", "GoBack", "HumanHandoff", "KnowledgeQuestion",
    "Reading", "SetSlots", "Skip", "SmallTalk", "StartGoal", "Unclear", "reading_lines", "value_words",
    # Everything else, imported on first use.
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    """A door name's value, imported from its inner module on first use and kept here (PEP 562)."""
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'core.understanding' has no attribute {name!r}")
    value = getattr(import_module(where[0]), where[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
