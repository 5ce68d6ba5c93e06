"""Answers from the knowledge base: searched once per turn and query, so a question is weighed (does the
knowledge base know it? how close is its best passage?) and then answered with the same search."""

from __future__ import annotations

from core.engine.processor.tool_calls import ToolCaller
from core.engine.processor.turn import Turn, say_to
from core.language import render
from core.shared.models import ToolCall
from core.tools.gateway import ToolGateway
from core.tools.kb import KB_TOOL

EXTERNAL_KNOWLEDGE = "seek external knowledge"  # the paper's action for answering a doubt from the KB


class KnowledgeAnswers:
    """The knowledge base's answers to a turn's questions (through the gateway's ``knowledge_base.search``)."""

    def __init__(self, gateway: ToolGateway, tools: ToolCaller) -> None:
        self.gateway = gateway
        self.tools = tools

    def answer(self, t: Turn, query: str, agent_name: str) -> None:
        """Say the knowledge base's answer to ``query`` (or that it is not sure)."""
        call = self.search(t, query, agent_name)
        if call.ok and call.result:
            t.messages.append(render.render_kb_answer(call.result))
        else:
            t.messages.append(say_to(t, "kb_unsure"))

    def search(self, t: Turn, query: str, agent_name: str) -> ToolCall:
        """The knowledge base searched once per turn and query (a question is weighed, then answered)."""
        if query not in t.kb:
            t.kb[query] = self.tools.call(t, agent_name, KB_TOOL, {"query": query}, system=True)
        return t.kb[query]

    def knows(self, t: Turn, query: str) -> bool:
        """Whether the knowledge base has an answer to ``query``."""
        if self.gateway.tools.get(KB_TOOL) is None:
            return False
        call = self.search(t, query, "orchestrator")
        return call.ok and bool(call.result)

    def similarity(self, t: Turn, query: str) -> float:
        """How close the knowledge base's best passage for ``query`` is (its similarity; 0 when it has none)."""
        if self.gateway.tools.get(KB_TOOL) is None:
            return 0.0
        call = self.search(t, query, "orchestrator")
        hits = call.result if call.ok and isinstance(call.result, list) else []
        return max((float(h.get("similarity", 0.0)) for h in hits if isinstance(h, dict)), default=0.0)
