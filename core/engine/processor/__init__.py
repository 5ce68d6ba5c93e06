"""The command processor: acts on the commands a message was read into, the only code that changes goals.

Both readers hand it the same typed commands (``core.understanding``): the rule reader's, or a model's
after the checks of ``core.understanding.brains.commands`` and :meth:`CommandProcessor.check` (which drops, with
the reason, a command the context rules out). It never looks at the customer's text: what it needs to act
(an answer's values, the question a go-back returns to, a follow-up's values, a side question's query)
the reader put in the command. It starts, suspends, resumes and ends goals through ``GoalOps``, runs the
active goal's steps through its agent (the flow executor, ``core.engine.flow``) with tools through the
gateway, and writes message intents as sentences from the reply catalogue of the customer's language.
Precedence: ARCHITECTURE.md §3a and docs/turn.md.

Its modules, one job each:

- ``dispatch``: ``CommandProcessor``, which checks a model's commands and acts on a message's commands by
  precedence, handing each to the collaborator below whose job it is;
- ``turn``: one turn attempt's working data (``Turn``) and the engine's sentences for it;
- ``starting``: starting the SOP asked for (or bringing its waiting goal forward);
- ``answering``: what a message does to the running goal (answers, corrections, go-back, a question it cannot
  answer, a message that does not answer);
- ``asides``: questions beside a request (knowledge base, items offered), small talk, unclear messages;
- ``follow_ups``: running the request finished last again;
- ``ending``: cancelling a request, leaving with requests open;
- ``handing_off``: handing the conversation to a person;
- ``running``: running goals through their agents (tool calls, ``call`` steps, resuming);
- ``new_goals``: a new goal with what the session already told it, and the goal completed last;
- ``knowledge``: the knowledge base's answers, searched once per turn and query;
- ``tool_calls``: one tool call through the gateway (reused on a re-run, idempotency keys).
"""
