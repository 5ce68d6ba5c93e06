"""Add an imported task's agent and tool to a workspace's store.yaml, keeping what is there.

The new entries are inserted as text at the end of the ``agents:`` and ``tools:`` blocks, so the
file's comments and layout survive. When the file's shape does not allow that (flow style, an
entry to change in place), it is parsed and written back whole, and a note says comments were lost.
The result is always checked by parsing it again.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

DEFAULT_NAME = "STAR tasks"


def merge_store_yaml(original: str | None, agent: str, tool: str, decl: dict[str, Any]) -> tuple[str, list[str]]:
    """store.yaml with ``agent`` (owning ``<agent>.*`` goals) allowed ``tool``, and ``tool`` declared.

    Returns the new text and notes for the user.
    """
    data = yaml.safe_load(original) if original and original.strip() else None
    if not isinstance(data, dict):
        fresh = {"name": DEFAULT_NAME, "agents": {agent: {"goals": f"{agent}.*", "tools": [tool]}},
                 "tools": {tool: decl}}
        return _dump(fresh), []
    wanted = _merged(data, agent, tool, decl)
    if wanted == data:
        return original or "", []
    text = _insert(original or "", data, agent, tool, decl)
    if text is not None and yaml.safe_load(text) == wanted:
        return text, []
    notes = ["store.yaml was rewritten as a whole; its comments were not kept"] if "#" in (original or "") else []
    return _dump(wanted), notes


def _merged(data: dict[str, Any], agent: str, tool: str, decl: dict[str, Any]) -> dict[str, Any]:
    out = dict(data)
    agents = {k: dict(v) if isinstance(v, dict) else v for k, v in (data.get("agents") or {}).items()}
    spec = agents.get(agent)
    if not isinstance(spec, dict):
        agents[agent] = {"goals": f"{agent}.*", "tools": [tool]}
    elif tool not in (spec.get("tools") or []):
        spec["tools"] = [*(spec.get("tools") or []), tool]
    out["agents"] = agents
    out["tools"] = {**(data.get("tools") or {}), tool: decl}
    return out


def _insert(text: str, data: dict[str, Any], agent: str, tool: str, decl: dict[str, Any]) -> str | None:
    lines = text.splitlines()
    agents = data.get("agents") or {}
    if agent in agents:
        spec = agents[agent]
        if not isinstance(spec, dict) or tool not in (spec.get("tools") or []):
            if not _add_tool_to_agent(lines, agent, tool):
                return None
    elif not _append_to_block(lines, "agents", [f"  {agent}:", f'    goals: "{agent}.*"', f"    tools: [{tool}]"]):
        return None
    tools = data.get("tools") or {}
    if tool in tools and tools[tool] != decl:
        return None
    if tool not in tools:
        body = _dump({tool: decl}).splitlines()
        if not _append_to_block(lines, "tools", [f"  {line}" for line in body]):
            return None
    return "\n".join(lines) + "\n"


def _block(lines: list[str], key: str) -> tuple[int, int] | None:
    """(first line, line after the last) of a top-level block-style mapping key; None when absent."""
    start = next((i for i, line in enumerate(lines) if re.match(rf"^{key}:\s*(#.*)?$", line)), None)
    if start is None:
        return None
    end = start + 1
    last = start + 1
    while end < len(lines):
        line = lines[end]
        if line.strip() and not line.startswith((" ", "\t")) and not line.lstrip().startswith("#"):
            break
        if line.strip() and not line.lstrip().startswith("#"):
            last = end + 1
        end += 1
    return start, last


def _append_to_block(lines: list[str], key: str, new: list[str]) -> bool:
    if any(re.match(rf"^{key}:\s*\S", line) and not re.match(rf"^{key}:\s*#", line) for line in lines):
        return False  # flow style or a scalar: rewrite instead
    span = _block(lines, key)
    if span is None:
        if lines and lines[-1].strip():
            lines.append("")
        lines += [f"{key}:", *new]
        return True
    lines[span[1]:span[1]] = new
    return True


def _add_tool_to_agent(lines: list[str], agent: str, tool: str) -> bool:
    span = _block(lines, "agents")
    if span is None:
        return False
    for i in range(span[0] + 1, span[1]):
        line = lines[i]
        if not re.match(rf"^\s+{re.escape(agent)}:", line):
            continue
        for j in range(i, span[1]):
            if j > i and re.match(r"^\s{0,2}\S", lines[j]):
                break
            m = re.search(r"\btools:\s*\[(.*?)\]", lines[j])
            if m:
                inner = m.group(1).strip()
                lines[j] = lines[j][: m.start(1)] + (f"{inner}, {tool}" if inner else tool) + lines[j][m.end(1):]
                return True
        return False
    return False


def _dump(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=None, width=120)
