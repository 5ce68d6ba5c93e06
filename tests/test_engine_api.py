"""The Python API end to end: state, traces, preferences, optimistic locking, text SOP branch decisions."""

from __future__ import annotations

from pathlib import Path

from core.engine.build import Workspace, build_orchestrator
from core.state.memory import LocalPreferenceMemory
from core.state.sessions import open_state_store
from core.understanding import RuleBrain


def _orch(ws: Workspace, tmp: Path):  # type: ignore[no-untyped-def]
    return build_orchestrator(ws.files.root, store=open_state_store(f"sqlite:///{tmp}/s.db"),
                              memory=LocalPreferenceMemory(tmp / "p.db"), loaded=ws)


def test_state_trace_and_preferences(demo_ws: Workspace, tmp_path: Path) -> None:
    orch = _orch(demo_ws, tmp_path)
    orch.handle_message("a", "I like Logitech, no Razer please, keep it short", customer_id="c1")
    prefs = orch.preferences("c1")
    assert prefs["preferred_brands"] == ["Logitech"] and prefs["disliked_brands"] == ["Razer"]
    assert prefs["communication_style"] == "short"
    reply = orch.handle_message("b", "recommend a gaming mouse under 2000", customer_id="c1")
    assert "Logitech" in reply and "Razer" not in reply
    trace = orch.last_trace("b")
    assert trace is not None
    call = trace["tool_calls"][0]
    assert call["args"]["exclude_brands"] == ["Razer"] and call["args"]["prefer_brands"] == ["Logitech"]
    state = orch.load_state("b")
    assert state is not None and state.version == 1 and state.model_dump(mode="json")["session_id"] == "b"


def test_conflict_reruns_turn_without_repeating_tools(demo_ws: Workspace, tmp_path: Path) -> None:
    orch = _orch(demo_ws, tmp_path)
    orch.handle_message("s", "Recommend a gaming mouse")
    real_save = orch.store.save
    calls = {"n": 0}

    def racing_save(state, expected, trace=None):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 1:  # another process commits first
            other = orch.store.load("s")
            assert other is not None
            other.version += 1
            real_save(other, other.version - 1)
        return real_save(state, expected, trace)

    orch.store.save = racing_save  # type: ignore[method-assign]
    orch.handle_message("s", "1500")
    trace = orch.last_trace("s")
    assert trace is not None and trace["attempts"] == 2
    assert [c["reused"] for c in trace["tool_calls"]] == [True]
    assert orch.load_state("s").version == 3  # type: ignore[union-attr]


def test_branch_decisions_from_observation(demo_ws: Workspace) -> None:
    brain = RuleBrain(demo_ws.embedder, [])
    assert brain.branch("its active or on-hold", "on-hold")
    assert not brain.branch("its onboarding", "active")
    assert brain.branch("less than or equal to 72 hrs", {"hours_since_request": 10})
    assert not brain.branch("less than or equal to 72 hrs", {"hours_since_request": 100})
    assert brain.branch("user does not have access", {"has_old_email_access": False})
    assert brain.branch("items found", [{"name": "x"}]) and not brain.branch("items found", [])
    # a flag the result writes as a word decides like a true/false one, whichever other fields come first
    result = {"voucher_code": "AB12", "days_old": 2, "refund_allowed": "yes", "note": "checked by the ledger"}
    assert brain.branch("the refund is allowed", result)
    assert not brain.branch("the refund is allowed", {**result, "refund_allowed": "no"})


def test_a_long_message_is_read_whole_up_to_the_limit(demo_ws: Workspace, tmp_path: Path) -> None:
    from core.engine.orchestrator import MAX_MESSAGE_CHARS

    orch = _orch(demo_ws, tmp_path)
    text = "I really like long walks by the sea. " * 275 + "Recommend a gaming mouse."
    assert 10_000 <= len(text) <= MAX_MESSAGE_CHARS
    reply = orch.handle_message("long", text)
    assert "Your message was long" not in reply
    trace = orch.last_trace("long")
    assert trace is not None and trace["user"] == text  # the question at its end is read
    assert reply == orch.handle_message("short", "Recommend a gaming mouse.")


def test_a_message_over_the_limit_keeps_its_last_part_and_the_reply_says_so(demo_ws: Workspace,
                                                                             tmp_path: Path) -> None:
    from core.engine.orchestrator import MAX_MESSAGE_CHARS

    orch = _orch(demo_ws, tmp_path)
    text = "I really like long walks by the sea. " * 400 + "Recommend a gaming mouse."
    assert len(text) > MAX_MESSAGE_CHARS
    reply = orch.handle_message("long", text)
    trace = orch.last_trace("long")
    assert trace is not None and text.endswith(trace["user"]) and text[-len(trace["user"]) - 1] == " "
    assert MAX_MESSAGE_CHARS - 40 < len(trace["user"]) <= MAX_MESSAGE_CHARS  # cut where a word starts
    assert reply.startswith(f"Your message was long, so I read its last {len(trace['user']):,} characters.")
    assert f"message of {len(text.strip())} characters" in " ".join(trace["decisions"])
    short = orch.handle_message("short", "Recommend a gaming mouse.")
    assert "Your message was long" not in short
    assert reply.split("\n\n", 1)[1] == short  # the part read, with the question at its end, is answered as usual
