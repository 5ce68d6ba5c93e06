"""Secrets kept out of logs, traces and error messages: API keys, bearer tokens, passwords in URLs.

:func:`redact` is the one redaction: a tool's and the language model's error text pass it before they reach
a trace or a log, store URLs before they reach an error message, every trace and session state before it is
stored (so the HTTP API, the Inspector and its export only ever see masked text), and
:func:`install_log_redaction` (run when an engine is built) passes every log record of the process
through it, whatever logger made the record and whatever handler writes it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Callable
from typing import Any

MASK = "***"
MIN_SECRET_CHARS = 8  # a configured secret shorter than this is too common a string to mask everywhere
SECRET_VARIABLES = ("OPENAI_API_KEY", "ZEP_API_KEY", "SOP_API_TOKEN")

_TOKEN = r"[A-Za-z0-9._~+/=-]"
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # a URL's password: scheme://user:***@host
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://[^:/@\s]+:)[^@\s]+@", re.I), r"\1***@"),
    # an Authorization header's credential: Bearer <token>, Basic <token> (tokens carry digits; words do not)
    (re.compile(rf"\b(bearer|basic)(\s+)(?={_TOKEN}*\d){_TOKEN}{{8,}}", re.I), r"\1\2***"),
    # OpenAI-style keys, wherever they stand
    (re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{6,}"), "sk-***"),
    # JSON web tokens
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"), MASK),
    # a value given to a key, token, secret or password: api_key=..., "token": "...", password: ...
    (re.compile(r"(?<![A-Za-z0-9])(api[_-]?key|apikey|key|token|secret|password|passwd|pwd)"
                r"(\"?'?\s*[:=]\s*\"?'?)(?!\*\*\*)[^\s\"'&,;)}\]]{6,}", re.I), r"\1\2***"),
    # a long random token right after the word key, token or secret ("token 9f8e7d6c5b4a39281706")
    (re.compile(rf"(?<![A-Za-z0-9])(key|token|secret)(\s+)(?={_TOKEN}*\d){_TOKEN}{{16,}}", re.I), r"\1\2***"),
)

_known: set[str] = set()  # secrets configured in this process (an API key typed in the chat settings)
_known_lock = threading.Lock()


def remember_secret(value: str | None) -> None:
    """Mask ``value`` (a configured API key or token) wherever it appears from now on, whatever its form."""
    text = (value or "").strip()
    if len(text) >= MIN_SECRET_CHARS:
        with _known_lock:
            _known.add(text)


DATA_PATTERNS = 4  # the first patterns, which never take a word of data for a secret (see ``redact``)


def redact(text: str, *, data: bool = False) -> str:
    """``text`` with every secret in it replaced by ``***``: configured keys (as written, and as JSON writes
    them), API keys and tokens, bearer credentials, passwords in URLs. Text without one comes back unchanged.

    ``data``: the text is stored data (a trace's JSON, tool output), where a field named ``key`` or ``token``
    holds a value that is not a secret: only configured values and unmistakable credentials (URL passwords,
    bearer tokens, ``sk-`` keys, JSON web tokens) are masked."""
    if not text:
        return text
    text = mask_values(text)
    for pattern, mask in _PATTERNS[:DATA_PATTERNS] if data else _PATTERNS:
        text = pattern.sub(mask, text)
    return text


def mask_values(text: str) -> str:
    """``text`` with every configured secret value (an API key, a workspace's ``${NAME}`` value, an
    Authorization-like header's value) masked, as written and as JSON writes it."""
    if not text:
        return text
    with _known_lock:
        known = sorted(_known, key=len, reverse=True)
    for secret in known:
        if secret in text:
            text = text.replace(secret, MASK)
        escaped = json.dumps(secret)[1:-1]
        if escaped != secret and escaped in text:
            text = text.replace(escaped, MASK)
    return text


class RedactingFilter(logging.Filter):
    """A logging filter that redacts a record's message (with its arguments filled in), its exception
    text and its stack; it never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        redact_record(record)
        return True


def redact_record(record: logging.LogRecord) -> logging.LogRecord:
    """Redact ``record`` in place (once) and return it."""
    if getattr(record, "redacted", False):
        return record
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - arguments that do not fit the format: the raw parts are redacted instead
        message = f"{record.msg} {record.args}"
    clean = redact(message)
    if clean != message:
        record.msg, record.args = clean, ()
    if record.exc_info and not record.exc_text:
        record.exc_text = logging.Formatter().formatException(record.exc_info)
    if record.exc_text:
        record.exc_text = redact(record.exc_text)
    if record.stack_info:
        record.stack_info = redact(record.stack_info)
    record.__dict__["redacted"] = True  # a mark of our own: each record is redacted once
    return record


_installed: Callable[..., logging.LogRecord] | None = None
_install_lock = threading.Lock()
FILTER = RedactingFilter()


def install_log_redaction(environ: dict[str, str] | None = None) -> None:
    """Redact every log record of this process from now on (idempotent).

    The filter runs where each record is made (the log record factory), so records of every logger
    (the engine's, the HTTP client's, the web server's) are redacted before any handler sees them,
    including handlers added later; the root logger's handlers carry it too. The secrets in
    ``OPENAI_API_KEY``, ``ZEP_API_KEY`` and ``SOP_API_TOKEN`` are masked by value as well.
    """
    global _installed
    env = os.environ if environ is None else environ
    for name in SECRET_VARIABLES:
        remember_secret(env.get(name))
    with _install_lock:
        for handler in logging.getLogger().handlers:
            if FILTER not in handler.filters:
                handler.addFilter(FILTER)
        if _installed is not None:
            return
        make = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            return redact_record(make(*args, **kwargs))

        logging.setLogRecordFactory(factory)
        _installed = factory
