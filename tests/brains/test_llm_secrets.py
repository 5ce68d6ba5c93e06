"""An endpoint that refuses the key and echoes it back: the key never reaches a log line, a trace or the chat."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.engine.build import Workspace, build_orchestrator
from core.engine.orchestrator import Orchestrator
from core.shared.redaction import install_log_redaction, redact
from core.state.memory import LocalPreferenceMemory
from core.state.sessions import open_state_store
from core.tools.gateway import ToolScript
from core.understanding import LLMSettings
from tests.brains.fake_openai import FakeOpenAI, error

MARKER = "sk-test-MARKER1234567890abcdef"
OTHER_KEY = "sk-live-UNSEEN1q2w3e4r5t6y7u8i9o"  # never configured: masked by its form alone
CUSTOMER = "S1001"
OPENING = "why is my listing blocked?"
BLOCKED = "LSTBLKPRC01"
UNCLEAR_CHECK = ToolScript({"seller.reactivation_check": {"result": {"review": "eligible after a manual review"}}})


@pytest.fixture()
def orch(seller: Workspace, fake: FakeOpenAI, tmp_path: Path) -> Iterator[Orchestrator]:
    """The demo seller workspace on the hybrid brain, its LLM configured with the marker key."""
    store = open_state_store(f"sqlite:///{tmp_path}/sessions.sqlite")
    memory = LocalPreferenceMemory(tmp_path / "prefs.sqlite")
    llm = LLMSettings(model="fake-model", base_url=fake.base_url, api_key=MARKER, timeout_s=5, max_retries=0)
    built = build_orchestrator(seller.files.root, brain="hybrid", store=store, memory=memory, loaded=seller, llm=llm)
    yield built
    built.close()
    store.close()
    memory.close()


def _everything_kept(orch: Orchestrator, caplog: pytest.LogCaptureFixture) -> str:
    """Every log line captured (formatted, with exceptions) and everything the session's store holds."""
    logged = "\n".join(logging.Formatter("%(message)s").format(r) for r in caplog.records)
    traces = json.dumps(orch.store.traces("s1"), default=str)
    incidents = json.dumps(orch.store.incidents("s1"), default=str) if hasattr(orch.store, "incidents") else ""
    return "\n".join([caplog.text, logged, traces, incidents])


def test_a_401_echoing_the_key_never_logs_it(orch: Orchestrator, fake: FakeOpenAI,
                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    orch.handle_message("s1", OPENING, customer_id=CUSTOMER)
    fake.push(error(401, f"Incorrect API key provided: {MARKER}. You can find your API key at the dashboard."))
    reply = orch.handle_message("s1", "hmm", customer_id=CUSTOMER)
    assert "refused the API key" in reply and MARKER not in reply
    abandoned = [r for r in caplog.records if "turn abandoned" in r.getMessage()]
    assert abandoned, "the refused key is logged as a warning"
    assert "HTTP 401: Incorrect API key provided: ***" in abandoned[0].getMessage()
    kept = _everything_kept(orch, caplog)
    assert "MARKER" not in kept


def test_a_401_after_a_tool_ran_keeps_the_key_out_of_the_trace(orch: Orchestrator, fake: FakeOpenAI,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    orch.handle_message("s1", OPENING, customer_id=CUSTOMER)
    fake.push(error(401, f"Incorrect API key provided: {MARKER}"))
    reply = orch.handle_message("s1", BLOCKED, customer_id=CUSTOMER, script=UNCLEAR_CHECK)
    assert MARKER not in reply
    trace = orch.last_trace("s1")
    assert trace is not None
    [rec] = trace["llm"]
    assert rec["outcome"] == "unavailable" and rec["kind"] == "auth" and "provided: ***" in rec["error"]
    assert "MARKER" not in _everything_kept(orch, caplog) + json.dumps(trace, default=str)


def test_every_logger_is_redacted_once_installed(caplog: pytest.LogCaptureFixture) -> None:
    install_log_redaction()
    caplog.set_level(logging.INFO)
    logging.getLogger("core.anything").warning("endpoint said %s", f"bad key {OTHER_KEY}")
    logging.getLogger("some.library").info("Authorization: Bearer %s", "abc123def456ghi789")
    logging.getLogger().error("store at %s", "postgresql://app:hunter2secret@db:5432/sop")
    try:
        raise RuntimeError(f"refused {OTHER_KEY}")
    except RuntimeError:
        logging.getLogger("core.other").exception("call failed")
    assert "UNSEEN1q2w" not in caplog.text and "abc123def456ghi789" not in caplog.text
    assert "hunter2secret" not in caplog.text and "postgresql://app:***@db:5432/sop" in caplog.text
    assert "call failed" in caplog.text and "RuntimeError: refused sk-***" in caplog.text


@pytest.mark.parametrize(("text", "kept"), [
    (f"Incorrect API key provided: {OTHER_KEY}", "Incorrect API key provided: sk-***"),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abc", "Authorization: Bearer ***"),
    ("GET https://x.test/v1?api_key=9f8e7d6c5b4a3928&q=1", "GET https://x.test/v1?api_key=***&q=1"),
    ('{"token": "a1b2c3d4e5f6g7h8"}', '{"token": "***"}'),
    ("token 9f8e7d6c5b4a39281706aa", "token ***"),
    ("https://user:pa55word@example.test/path", "https://user:***@example.test/path"),
    ("a plain sentence about a token budget and basic help", "a plain sentence about a token budget and basic help"),
    ("I need a desk-lamp and sk-ii cream", "I need a desk-lamp and sk-ii cream"),
])
def test_redact_masks_secrets_and_leaves_plain_text(text: str, kept: str) -> None:
    assert redact(text) == kept
