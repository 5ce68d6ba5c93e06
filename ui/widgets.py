"""Renderers shared by pages: lint problems, a turn's trace, save results."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import streamlit as st

from core.engine.explain import brief, explain
from core.evaluation.coverage import SopCoverage, overall
from core.evaluation.testing import FileResult
from core.playground import CheckResult, MappingProblem
from core.shared.errors import UserInputError
from core.shared.problems import Problem
from core.understanding import reading_lines


def problems(found: list[Problem], *, ok_text: str = "") -> None:
    """Errors and warnings, one line each with file:line:column; info lines (how slot types were
    inferred) folded away."""
    errs = [p for p in found if p.severity == "error"]
    warns = [p for p in found if p.severity == "warning"]
    infos = [p for p in found if p.severity == "info"]
    for p in errs:
        st.error(str(p), icon=":material/error:")
    for p in warns:
        st.warning(str(p), icon=":material/warning:")
    if infos:
        with st.expander(f"How {len(infos)} slot(s) are read (inferred, not declared)", icon=":material/info:"):
            for p in infos:
                st.markdown(f"- `{p.file}:{p.line}` {p.message}")
    if not errs and ok_text:
        st.success(ok_text, icon=":material/check_circle:")


def annotations(found: list[Problem]) -> list[dict[str, Any]]:
    """Lint problems as the code editor's margin markers (rows and columns counted from 0)."""
    return [{"row": max(p.line - 1, 0), "column": max(p.column - 1, 0), "type": p.severity, "text": p.message}
            for p in found if p.line]


def mapping_problems(found: list[MappingProblem]) -> None:
    """Problems with an inventory column mapping."""
    for p in found:
        (st.error if p.severity == "error" else st.warning)(str(p))


FLASH = "flash_saved"  # what a save that redraws the page did: (what, warnings), shown after the redraw


def saved_test(save: Callable[[], tuple[str, CheckResult, FileResult]]) -> None:
    """Save a conversation as a test (``save`` returns its file, the checked save and the test's run): where
    it went and whether it passes, with a link to Test runs; or why it was not saved."""
    try:
        rel, result, run = save()
    except UserInputError as exc:
        st.error(str(exc), icon=":material/error:")
        return
    if not result.saved:
        saved(result, rel)
        return
    st.success(f"Saved `{rel}`: " + ("it passes." if run.passed else "it does not pass yet (see Test runs)."),
               icon=":material/check_circle:")
    st.page_link("pages/tests.py", label="Open Test runs", icon=":material/checklist:")


def saved(result: CheckResult, what: str, *, redraw: bool = False) -> None:
    """The outcome of a checked save: success, or the errors that stopped it (nothing written). ``redraw``:
    after a save, draw the page again from what is now on disk (counts, lists, indexing progress), with the
    success shown there."""
    if result.saved and redraw:
        st.session_state[FLASH] = (what, [p for p in result.problems if p.severity == "warning"])
        st.rerun()
    if result.saved:
        st.toast(f"{what} saved. Undo is on the SOP studio page.", icon=":material/save:")
        st.success(f"{what} saved and in use.", icon=":material/check_circle:")
        problems([p for p in result.problems if p.severity == "warning"])
    elif result.broken:
        st.warning(f"{what} not saved yet: it would break {len(result.broken)} conversation test(s) that pass "
                   "now. Nothing was changed on disk.", icon=":material/rule:")
        broken_tests(result.broken)
    else:
        st.error(f"{what} not saved: fix these first. Nothing was changed on disk.", icon=":material/block:")
        problems(result.blocking)


def flash() -> None:
    """The success of a save that redrew the page (see :func:`saved`), once."""
    done = st.session_state.pop(FLASH, None)
    if done is not None:
        what, warnings = done
        st.toast(f"{what} saved. Undo is on the SOP studio page.", icon=":material/save:")
        st.success(f"{what} saved and in use.", icon=":material/check_circle:")
        problems(warnings)


def broken_tests(results: list[FileResult]) -> None:
    """What each broken conversation test expected and what the agent would do instead."""
    for r in results:
        failing = [(i, t) for i, t in enumerate(r.turns, start=1) if not t.passed]
        with st.expander(f"{Path(r.file).name}: {r.name}", expanded=len(results) == 1, icon=":material/cancel:"):
            if r.error:
                st.error(r.error)
            for i, turn in failing[:5]:
                st.markdown(f"**Turn {i}:** {user_text(turn.user)}  \n**New reply:** {turn.reply}")
                for f in turn.failures:
                    st.caption(f)


def trace(tr: dict[str, Any], *, why: bool = True) -> None:
    """One turn's trace: why this reply (unless shown beside it), perception, decisions, stack operations,
    tool calls, grounding, memory."""
    perception = tr.get("perception") or {}
    intents = perception.get("intents") or []
    cols = st.columns(3)
    cols[0].metric("latency", f"{tr.get('latency_ms', 0):.0f} ms")
    cols[1].metric("tool calls", len(tr.get("tool_calls") or []))
    cols[2].metric("LLM calls", len(tr.get("llm") or []))
    if why:
        why_this_reply(tr)
    if intents:
        st.caption("Intent scores: " + ", ".join(f"{name} {score:.2f}" for name, score in intents))
    read = reading_lines(tr.get("reading") or {})
    if read:
        st.markdown("**Read from the message**\n" + "\n".join(f"- {user_text(line)}" for line in read))
    decisions = tr.get("decisions") or []
    if decisions:
        st.markdown("**Decisions**\n" + "\n".join(f"1. {d}" for d in decisions))
    if tr.get("actions"):
        st.markdown("**Steps executed:** " + " → ".join(f"`{a}`" for a in tr["actions"]))
    if tr.get("stack_ops"):
        st.markdown("**Goal and stack operations**\n" + "\n".join(
            f"- {o.get('op')} `{o.get('goal')}`" + (f" ({o.get('reason') or o.get('outcome')})"
                                                    if o.get("reason") or o.get("outcome") else "")
            + " · stack: " + (" → ".join(f"`{g}`" for g in o.get("stack") or []) or "empty")
            for o in tr["stack_ops"]))
    calls = tr.get("tool_calls") or []
    if calls:
        lines = []
        for c in calls:
            outcome = f"→ {_cell(brief(c.get('result'), 160))}" if c.get("ok") else \
                f"→ :red[{c.get('error_kind')}: {_cell(c.get('error'))}]"
            lines.append(f"- `{c.get('tool')}` by {c.get('agent') or 'orchestrator'} · {c.get('latency_ms')} ms"
                         + (" · scripted" if c.get("scripted") else "") + (" · reused" if c.get("reused") else "")
                         + f"  \n  args: {_cell(brief(c.get('args'), 160))}  \n  {outcome}")
        st.markdown("**Tool calls**\n" + "\n".join(lines))
    if tr.get("denied"):
        st.markdown("**Denied by the permission matrix**")
        st.json(tr["denied"], expanded=False)
    grounding = tr.get("grounding") or {}
    if grounding.get("ungrounded"):
        st.warning(f"Grounding check replaced a reply: {grounding['ungrounded']}")
    with st.popover("Raw trace"):
        st.json(tr, expanded=1)


def why_this_reply(tr: dict[str, Any]) -> None:
    """The turn in plain sentences: what was read, what decided, what the tools returned, what grounding did."""
    lines = tr.get("why") or explain(tr)  # traces stored before explanations existed are explained now
    if lines:
        st.markdown("**Why this reply**\n" + "\n".join(f"- {user_text(line)}" for line in lines))


def replay_report(rep: dict[str, Any]) -> None:
    """A replay side by side: how many turns change, then each turn before and after."""
    changed = rep["changed"]
    (st.warning if changed else st.success)(
        f"{changed} of {rep['turns']} turn(s) change ({rep['before']} → {rep['after']})")
    for t in rep["details"]:
        title = f"Turn {t['turn']}: {t['user'][:80]}" + (f" · changed: {', '.join(t['changed'])}" if t["changed"]
                                                          else " · unchanged")
        with st.expander(title, expanded=bool(t["changed"])):
            left, right = st.columns(2)
            for col, side, label in ((left, t["before"], rep["before"]), (right, t["after"], rep["after"])):
                with col:
                    st.markdown(f"**{label.capitalize()}**")
                    st.markdown(f"**Reply:** {_cell(side['reply'])}")
                    for aspect, what in (("steps", "Steps"), ("tools", "Tools"), ("decisions", "Decisions")):
                        if side[aspect]:
                            mark = " :orange[(changed)]" if aspect in t["changed"] else ""
                            st.markdown(f"**{what}**{mark}\n" + "\n".join(f"- {user_text(x)}" for x in side[aspect]))
                    if side["why"]:
                        st.caption(" ".join(side["why"]))
            for note in t["notes"]:
                st.caption(f":material/info: {note}")


MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]()#+\-.!|>~<$])")


def user_text(text: str) -> str:
    """A customer's message shown literally (no markdown, links or images from what they typed)."""
    return MARKDOWN_SPECIALS.sub(r"\\\1", text)


def _cell(value: Any) -> str:
    """Text safe inside a Markdown line: no tables, HTML or line breaks from tool data."""
    return str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("<", "&lt;")


def session_label(meta: dict[str, Any]) -> str:
    """A session as people tell sessions apart: its first message, when it was last used, its size."""
    first = " ".join(str(meta.get("first_message") or "").split())
    first = f"“{first[:60]}…”" if len(first) > 60 else (f"“{first}”" if first else "(no message yet)")
    when = str(meta.get("updated_at", ""))[:16].replace("T", " ")
    turns = meta.get("turns", 0)
    who = f" · customer {meta['customer_id']}" if meta.get("customer_id") else ""
    handed = f"handed off (turn {meta['handoff_turn']}) · " if meta.get("handoff_turn") is not None else ""
    return f"{handed}{first} · {when} · {turns} turn{'s' if turns != 1 else ''}{who}"


COVERAGE_GREENS = ("#d8f3dc", "#95d5b2", "#52b788", "#2d6a4f")  # reached by few tests -> by the most
UNREACHED_FILL, UNREACHED_LINE = "#f8d0d0", "#d1242f"


def coverage_paint(counts: dict[str, int], by: str = "test") -> tuple[dict[str, str], dict[str, str]]:
    """Per step: the DOT colours for how many tests reach it (red when none, deeper green with more), and a
    note saying how many."""
    top = max(counts.values(), default=0)
    paint: dict[str, str] = {}
    notes: dict[str, str] = {}
    for step, n in counts.items():
        if n == 0:
            paint[step] = f'fillcolor="{UNREACHED_FILL}", color="{UNREACHED_LINE}", penwidth=2.4, fontcolor="#8b1a1a"'
            notes[step] = f"no {by}"
            continue
        shade = min(len(COVERAGE_GREENS) - 1, int(n / top * len(COVERAGE_GREENS) - 1e-9))
        font = ', fontcolor="#ffffff"' if shade >= 2 else ""
        paint[step] = f'fillcolor="{COVERAGE_GREENS[shade]}", color="#2d6a4f"{font}'
        notes[step] = f"{n} {by}{'s' if n != 1 else ''}"
    return paint, notes


def coverage(found: list[SopCoverage], *, by: str = "test", key: str = "coverage") -> None:
    """Step coverage after a test run (or the sessions of an evaluation: ``by="session"``): steps reached per
    SOP, the steps none reaches, and one SOP's graph with each step coloured by how many reach it. ``key``
    names the page elements, so two views can stand on one page."""
    if not found:
        return
    reached, total, percent = overall(found)
    st.markdown(f"The {by}s reach **{reached} of {total}** SOP steps ({percent:.0f}%).")
    st.dataframe([{"SOP": c.id, "file": c.file, "steps reached": c.reached, "steps": len(c.steps),
                   "%": round(c.percent)} for c in found], hide_index=True, width="stretch")
    missed = [f"- `{c.id}` · `{s.id}`" + (f" {user_text(s.label)}" if s.label != s.id else "") + f" · `{c.where(s)}`"
              for c in found for s in c.unreached]
    with st.container(key=f"{key}_unreached"):
        if missed:
            st.markdown(f"**Steps no {by} reaches** ({len(missed)})\n" + "\n".join(missed))
        else:
            st.success(f"Every step of every SOP is reached by at least one {by}.", icon=":material/check_circle:")
    ids = [c.id for c in found]
    weakest = min(range(len(found)), key=lambda i: found[i].percent)
    pick_col, graph_col = st.columns([1, 2], gap="medium")
    with pick_col:
        pick = st.selectbox("SOP to draw", ids, index=weakest, key=f"{key}_sop")
        shown = found[ids.index(pick)] if pick in ids else found[weakest]
        most = max(shown.counts().values(), default=0)
        st.markdown(f"**{user_text(shown.title)}**: {shown.reached} of {len(shown.steps)} steps reached")
        st.caption(f":red[Red]: no {by} reaches the step. :green[Green]: reached, deeper with more {by}s"
                   + (f" (the deepest: {most} {by}{'s' if most != 1 else ''})." if most else "."))
    if shown.sop is None:
        return
    paint, notes = coverage_paint(shown.counts(), by)
    with graph_col, st.container(key=f"{key}_graph"):
        st.graphviz_chart(shown.sop.to_dot(paint=paint, notes=notes), width="stretch")
