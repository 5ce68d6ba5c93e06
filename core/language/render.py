"""Customer-facing sentences built from tool results (so every figure comes from a tool)."""

from __future__ import annotations

import re
from typing import Any, TypeGuard

from core.language.replies import say, voice
from core.language.text import format_money, without_particles


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


def item_line(item: dict[str, Any], currency: str, language: str | None = None) -> str:
    """``Logitech G304 (Logitech) — ฿1,290, in stock`` (the stock words in ``language``, default the turn's)."""
    name = as_text(item.get("name", item.get("sku", "item")))
    brand = as_text(item.get("brand", ""))
    label = name if not brand or brand.lower() in name.lower() else f"{name} ({brand})"
    parts = []
    if item.get("price") is not None:
        parts.append(format_money(float(item["price"]), currency))
    if item.get("stock") is not None:
        parts.append(say("in_stock" if float(item["stock"]) > 0 else "out_of_stock", language))
    return f"{label} — {', '.join(parts)}" if parts else label


def render_items(items: list[dict[str, Any]], currency: str, short: bool = False, limit: int = 3,
                 language: str | None = None) -> str:
    """A recommendation of 1–3 items, in ``language`` (default: the turn's)."""
    shown = items[: 1 if short else limit]
    if short:
        return say("my_pick", language, item=item_line(shown[0], currency, language))
    lead = say("best_match", language) if len(shown) == 1 else \
        say("good_options", language, count=_count(len(shown), language))
    return lead + "\n" + "\n".join(f"- {item_line(i, currency, language)}" for i in shown)


def _count(n: int, language: str | None = None) -> str:
    if (language or voice().language) != "en":  # a count in digits reads in every language
        return str(n)
    return {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}.get(n, str(n))


STEP = re.compile(r"^\s*(\d+)[.)]\s+(.*)$")


def kb_steps(snippet: str) -> list[str]:
    """The numbered steps in a KB snippet."""
    return [m.group(2).strip() for line in snippet.splitlines() if (m := STEP.match(line))]


def render_fix(hits: list[dict[str, Any]], subject: str = "", short: bool = False, language: str | None = None) -> str:
    """A step-by-step fix: the procedure of the best hit that belongs to one (its file stays in the trace:
    customers never see paths), else the best passage."""
    for hit in hits:
        steps = kb_steps(str(hit.get("procedure") or hit.get("snippet", "")))
        if len(steps) >= 2:
            break
    else:
        return first_sentences(str(hits[0].get("snippet", "")), 3)
    title = str(hit.get("title", "")).strip()
    for_what = say("for_subject", language, subject=as_text(without_particles(subject))) if subject else ""
    if short:
        steps = steps[:3]
    return say("what_to_try", language, for_what=for_what, title=title) + "\n" + _numbered(steps)


def _numbered(steps: list[str]) -> str:
    return "\n".join(f"{i}. {s}" for i, s in enumerate(steps, start=1))


def first_sentences(text: str, n: int = 2) -> str:
    """The first sentences of a text, markdown headings and bullets flattened."""
    flat = " ".join(re.sub(r"^[#\-*\s]+", "", line).strip() for line in text.splitlines() if line.strip())
    parts = re.split(r"(?<=[.!?])\s+", flat)
    return " ".join(parts[:n]).strip()


CLOSE_SCORES = 0.1  # passages scored this close to the best answer the question together


def render_kb_answer(hits: list[dict[str, Any]]) -> str:
    """The answer to a question from the best KB passages (no file path: the trace has the source).

    A passage clearly ahead of the others answers alone. When the best passages score close together
    and come from one section, the question is about that section ("what is your return policy?"):
    the section's first passage and those answer together, in the article's order; steps of one
    procedure answer as the procedure.
    """
    hit = hits[0]
    together = [h for h in hits[:3] if h.get("ref") == hit.get("ref")
                and float(hit.get("score", 0)) - float(h.get("score", 0)) <= CLOSE_SCORES]
    procedure = str(hit.get("procedure", ""))
    if procedure and len([h for h in together if h.get("procedure") == procedure]) >= 2:
        steps = kb_steps(procedure)
        return f"{hit.get('title')}:\n" + _numbered(steps)
    if len(together) >= 2 and not procedure:
        ordered = sorted((h for h in together if not h.get("procedure")), key=lambda h: int(h.get("order", 0)))
        texts = [str(h.get("snippet", "")) for h in ordered]
        lead = next((str(h["lead"]) for h in ordered if h.get("lead")), "")
        if lead and lead not in texts:
            texts.insert(0, lead)
        return " ".join(first_sentences(t, 2) for t in texts)
    steps = kb_steps(str(hit.get("snippet", "")))
    if steps:
        return steps[0]
    if procedure:  # a passage that leads into the steps after it ("..., follow these steps"): it, then them
        return first_sentences(str(hit.get("snippet", "")), 4) + "\n" + _numbered(kb_steps(procedure))
    return first_sentences(str(hit.get("snippet", "")), 4)


def render_record(obs: dict[str, Any]) -> str:
    """A one-line summary of a record result (e.g. an order)."""
    parts = [f"{str(k).replace('_', ' ')}: {as_text(v)}" for k, v in obs.items() if v not in (None, "")]
    return "; ".join(parts)


HELP_OFFER = re.compile(r"\s*(is there )?anything else (i can help you with|i can do for you)?\??\s*$", re.I)


def strip_help_offer(text: str) -> str:
    """No 'anything else?' right before an end node (response cleaning)."""
    return HELP_OFFER.sub("", text).strip()
