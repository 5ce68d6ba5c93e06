"""The SOP flow executor: a specialist agent runs the step loop of the goals it owns, until a goal needs the
customer, needs a tool, calls another SOP, or ends; it requests tools, never executes them.

- :mod:`~core.engine.flow.agent`: :class:`SpecialistAgent`, the executor the engine and the reader talk to
- :mod:`~core.engine.flow.contract`: what a run takes and gives (request, response, tool requests, environment)
- :mod:`~core.engine.flow.steps`: the step loop and what one action step does
- :mod:`~core.engine.flow.asking`: putting a step's question to the customer
- :mod:`~core.engine.flow.replies`: what the customer's replies do (answers, no answer, corrections, going back)
- :mod:`~core.engine.flow.tool_calls`: requesting a step's tool and taking its results
- :mod:`~core.engine.flow.failures`: the failure rules (attempt limit, invalid input, denied, timeouts, retries)
- :mod:`~core.engine.flow.decisions`: taking a decision's branch
- :mod:`~core.engine.flow.search`: searches over an ordered slot's values
- :mod:`~core.engine.flow.messages`: what a step says, and the goal's last words
- :mod:`~core.engine.flow.results`: what the goal's tools returned, as steps read it
- :mod:`~core.engine.flow.moves`: where the flow goes in the SOP's graph
"""

from core.engine.flow.agent import SpecialistAgent
from core.engine.flow.contract import AgentEnv, AgentRunRequest, AgentRunResponse, ToolRequest
from core.engine.flow.failures import MAX_ATTEMPTS

__all__ = ["MAX_ATTEMPTS", "AgentEnv", "AgentRunRequest", "AgentRunResponse", "SpecialistAgent", "ToolRequest"]
