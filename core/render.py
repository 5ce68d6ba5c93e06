"""Customer-facing sentences built from tool results (so every figure comes from a tool)."""

from __future__ import annotations

import re
from typing import Any, TypeGuard

from core.replies import say
from core.text import format_money


def is_item_list(obs: Any) -> TypeGuard[list[dict[str, Any]]]:
    """A list of inventory-like records."""
    return isinstance(obs, list) and bool(obs) and all(isinstance(o, dict) and "name" in o for o in obs)


def is_kb_hits(obs: Any) -> TypeGuard[list[dict[str, Any]]]:
    """A list of knowledge-base hits."""
    return isinstance(obs, list) and bool(obs) and all(isinstance(o, dict) and "snippet" in o for o in obs)


MARKUP = re.compile(r"([\[\]<>])")  # what makes a link or HTML of plain text


def as_text(value: Any) -> str:
    """A value from data (an inventory cell, a tool's answer) as plain text in a reply shown as Markdown: a
    cell such as ``[click](javascript:...)`` or ``<img src=x>`` is shown as written, never as a link or
    HTML."""
    return MARKUP.sub(r"\\\1", str(value))


def item_line(item: dict[str, Any], currency: str) -> str:
    """``Logitech G304 (Logitech) — ฿1,290, in stock``."""
    name = as_text(item.get("name", item.get("sku", "item")))
    brand = as_text(item.get("brand", ""))
    label = name if not brand or brand.lower() in name.lower() else f"{name} ({brand})"
    parts = []
    if item.get("price") is not None:
        parts.append(format_money(float(item["price"]), currency))
    if item.get("stock") is not None:
        parts.append("in stock" if float(item["stock"]) > 0 else "out of stock")
    return f"{label} — {', '.join(parts)}" if parts else label


def render_items(items: list[dict[str, Any]], currency: str, short: bool = False, limit: int = 3) -> str:
    """A recommendation of 1–3 items."""
    shown = items[: 1 if short else limit]
    if short:
        return f"My pick: {item_line(shown[0], currency)}."
    lead = say("best_match") if len(shown) == 1 else say("good_options", count=_count(len(shown)))
    return lead + "\n" + "\n".join(f"- {item_line(i, currency)}" for i in shown)


def _count(n: int) -> str:
    return {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}.get(n, str(n))


STEP = re.compile(r"^\s*(\d+)[.)]\s+(.*)$")


def kb_steps(snippet: str) -> list[str]:
    """The numbered steps in a KB snippet."""
    return [m.group(2).strip() for line in snippet.splitlines() if (m := STEP.match(line))]


def render_fix(hit: dict[str, Any], subject: str = "", short: bool = False) -> str:
    """A step-by-step fix from the best KB hit (its file stays in the trace: customers never see paths)."""
    steps = kb_steps(str(hit.get("snippet", "")))
    title = str(hit.get("title", "")).strip()
    for_what = f" for your {subject}" if subject else ""
    if not steps:
        return first_sentences(str(hit.get("snippet", "")), 3)
    if short:
        steps = steps[:3]
    lines = "\n".join(f"{i}. {s}" for i, s in enumerate(steps, start=1))
    return say("what_to_try", for_what=for_what, title=title) + "\n" + lines


def first_sentences(text: str, n: int = 2) -> str:
    """The first sentences of a text, markdown headings and bullets flattened."""
    flat = " ".join(re.sub(r"^[#\-*\s]+", "", line).strip() for line in text.splitlines() if line.strip())
    parts = re.split(r"(?<=[.!?])\s+", flat)
    return " ".join(parts[:n]).strip()


def render_kb_answer(hits: list[dict[str, Any]]) -> str:
    """A short answer to a doubt from the best KB hit (no file path: the trace has the source)."""
    hit = hits[0]
    steps = kb_steps(str(hit.get("snippet", "")))
    if steps:
        body = "\n".join(f"{i}. {s}" for i, s in enumerate(steps, start=1))
        return f"{hit.get('title')}:\n{body}"
    snippet = str(hit.get("snippet", ""))
    bullets = [re.sub(r"^[-*]\s+", "", ln).strip() for ln in snippet.splitlines() if re.match(r"^\s*[-*]\s", ln)]
    body = " ".join(bullets[:4]) if bullets else first_sentences(snippet, 3)
    return body


def render_record(obs: dict[str, Any]) -> str:
    """A one-line summary of a record result (e.g. an order)."""
    parts = [f"{str(k).replace('_', ' ')}: {as_text(v)}" for k, v in obs.items() if v not in (None, "")]
    return "; ".join(parts)


HELP_OFFER = re.compile(r"\s*(is there )?anything else (i can help you with|i can do for you)?\??\s*$", re.I)


def strip_help_offer(text: str) -> str:
    """No 'anything else?' right before an end node (response cleaning)."""
    return HELP_OFFER.sub("", text).strip()
