"""The tools a procedure calls that its agent may not call yet, and store.yaml with them allowed: offered on the
save of the procedure (with the author's confirmation) so the one save is checked with both files.

An agent named by a procedure and missing from store.yaml is created with those tools (owning its own goals,
``<agent>.*``). store.yaml is changed as text: the agent's ``tools: [...]`` line gets the new names, a new agent
goes under the last one, and every other line and comment stays as it was (written afresh only when the file's
layout does not allow that, read back either way).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from core.engine.build import Workspace
from core.shared.errors import UserInputError
from core.sop import Sop


@dataclass(frozen=True)
class AgentGrant:
    """``agent`` (``new``: not in store.yaml yet) to be allowed ``tools``."""

    agent: str
    tools: tuple[str, ...]
    new: bool = False

    def sentence(self) -> str:
        """What saving with this grant also changes, in one line."""
        names = ", ".join(f"`{t}`" for t in self.tools)
        if self.new:
            return f"Create the agent `{self.agent}` in store.yaml" + (f", allowed to call {names}" if names else "")
        return f"Let the agent `{self.agent}` call {names} (its tools in store.yaml)"


def needed_grant(ws: Workspace, sop: Sop) -> AgentGrant | None:
    """What store.yaml lacks for ``sop`` to run in ``ws``: its named agent, or tools (that exist) the agent
    running it may not call; None when nothing is missing."""
    agents = ws.files.config.agents
    called = tuple(dict.fromkeys(n.tool for n in sop.nodes.values() if n.tool and n.tool in ws.tools))
    if sop.agent and sop.agent not in agents:
        return AgentGrant(sop.agent, called, new=True)
    agent = ws.files.config.agent_for(sop.id, sop.agent)
    if agent is None:
        return None
    missing = tuple(t for t in called if t not in agent.tools)
    return AgentGrant(agent.name, missing) if missing else None


def granted(store_yaml: str, grant: AgentGrant) -> str:
    """store.yaml with ``grant`` made (other lines kept; read back before it is returned).

    Raises:
        UserInputError: store.yaml that cannot be read, or would not read back with the grant.
    """
    try:
        data = yaml.safe_load(store_yaml) or {}
    except yaml.YAMLError as exc:
        raise UserInputError(f"store.yaml does not read: {exc}") from exc
    wanted = _wanted(data, grant)
    text = _as_text(store_yaml, data, grant)
    if text is None or _read(text) != wanted:
        from core.playground.uploads import replace_top_level_block

        text = replace_top_level_block(store_yaml, "agents", wanted["agents"])
    if _read(text) != wanted:
        raise UserInputError(f"store.yaml would not read back with the agent {grant.agent!r} changed; "
                             "change it on the Store page")
    return text


def _read(text: str) -> object:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


def _wanted(data: dict[str, object], grant: AgentGrant) -> dict[str, object]:
    agents = {k: dict(v) if isinstance(v, dict) else v for k, v in dict(data.get("agents") or {}).items()}
    spec = agents.get(grant.agent)
    if not isinstance(spec, dict):
        agents[grant.agent] = {"goals": f"{grant.agent}.*", "tools": list(grant.tools)}
    else:
        have = list(spec.get("tools") or [])
        spec["tools"] = have + [t for t in grant.tools if t not in have]
    return {**data, "agents": agents}


def _as_text(text: str, data: dict[str, object], grant: AgentGrant) -> str | None:
    """The grant written into the lines of store.yaml; None when its layout asks for more than a line edit."""
    lines = text.splitlines(keepends=True)
    nl = "\r\n" if "\r\n" in text else "\n"
    start = next((i for i, ln in enumerate(lines) if re.match(r"agents\s*:\s*(#.*)?$", ln.rstrip("\r\n"))), None)
    if start is None:
        return None
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][:1] in (" ", "\t")
                                or lines[end].lstrip().startswith("#")):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    agents = data.get("agents") or {}
    if not isinstance(agents, dict) or grant.agent not in agents:
        lead = next((re.match(r"[ \t]+", ln).group(0) for ln in lines[start + 1 : end]  # type: ignore[union-attr]
                     if re.match(r"[ \t]+\w", ln)), "  ")
        block = [f"{lead}{grant.agent}:{nl}", f'{lead * 2}goals: "{grant.agent}.*"{nl}',
                 f"{lead * 2}tools: [{', '.join(grant.tools)}]{nl}"]
        if end > 0 and not lines[end - 1].endswith(("\n", "\r")):
            lines[end - 1] += nl
        return "".join(lines[:end] + block + lines[end:])
    at = next((i for i in range(start + 1, end) if re.match(rf"[ \t]+{re.escape(grant.agent)}\s*:", lines[i])), None)
    if at is None:
        return None
    own = re.match(r"[ \t]*", lines[at]).group(0)  # type: ignore[union-attr]
    for j in range(at + 1, end):
        if lines[j].strip() and not lines[j].lstrip().startswith("#") and \
                len(re.match(r"[ \t]*", lines[j]).group(0)) <= len(own):  # type: ignore[union-attr]
            break
        found = re.match(r"([ \t]+tools\s*:\s*\[)(.*?)(\].*)$", lines[j], re.S)
        if found:
            have = [t.strip() for t in found.group(2).split(",") if t.strip()]
            names = have + [t for t in grant.tools if t not in have]
            lines[j] = found.group(1) + ", ".join(names) + found.group(3)
            return "".join(lines)
    return None

