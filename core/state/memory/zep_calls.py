"""Calling Zep (:mod:`core.state.memory.zep`): one SDK call behind a short circuit breaker, and every failure
classified as a :class:`ZepFailure` (retryable or not) with a clear message."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import httpx
from zep_cloud.core.api_error import ApiError
from zep_cloud.core.parse_error import ParsingError

from core.shared.concurrency import waiting

MAX_COOLDOWN_S = 300.0

T = TypeVar("T")


class ZepFailure(Exception):
    """One failed Zep call, classified: ``retryable`` unless Zep rejected the request itself."""

    def __init__(self, message: str, *, retryable: bool = True, status: int | None = None,
                 retry_after: float = 0.0) -> None:
        self.message = message
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after
        super().__init__(message)


class ZepBreaker:
    """Runs SDK calls for one memory: after a retryable failure Zep is skipped for ``cooldown_s`` (a 429's
    Retry-After may extend it), so a down Zep costs one timeout, not one per call."""

    def __init__(self, base_url: str, timeout_s: float, cooldown_s: float, clock: Callable[[], float]) -> None:
        self.base_url = base_url
        self._timeout_s = timeout_s
        self._cooldown_s = cooldown_s
        self._clock = clock
        self._down_until = 0.0
        self._last_error = ""

    def call(self, what: str, request: Callable[[], T]) -> T:
        """Run one SDK call behind the circuit breaker; every failure becomes a :class:`ZepFailure`."""
        now = self._clock()
        if now < self._down_until:
            raise ZepFailure(f"{self._last_error} (Zep skipped for another {self._down_until - now:.0f}s)")
        try:
            with waiting():  # other turns compute while this one waits on Zep
                result = request()
        except Exception as exc:  # noqa: BLE001 - classified below; nothing escapes unclassified
            failure = classify(exc, what, self.base_url, self._timeout_s)
            if failure.retryable and failure.status not in (404, 409):
                self._last_error = failure.message
                self._down_until = now + min(MAX_COOLDOWN_S, max(self._cooldown_s, failure.retry_after))
            raise failure from exc
        self._down_until = 0.0
        return result


def classify(exc: Exception, what: str, base_url: str, timeout_s: float) -> ZepFailure:
    """Turn an SDK or transport exception into a :class:`ZepFailure` with a clear message.

    Retryable: timeouts, connection errors, 408, 409, 429 (with its Retry-After), 5xx, 401/403
    (a key can be fixed; nothing is lost meanwhile) and replies the SDK cannot parse. Any other
    4xx means Zep rejected the request itself, so sending it again cannot help.
    """
    if isinstance(exc, httpx.TimeoutException):
        return ZepFailure(f"Zep did not answer {what} within {timeout_s:g}s")
    if isinstance(exc, httpx.TransportError):
        return ZepFailure(f"cannot reach Zep at {base_url} ({what}): {exc}")
    if isinstance(exc, ParsingError):
        return ZepFailure(f"unexpected reply from Zep to {what} (HTTP {exc.status_code})")
    if not isinstance(exc, ApiError):
        return ZepFailure(f"{what} failed: {type(exc).__name__}: {exc}")
    status = exc.status_code or 0
    detail = _error_detail(exc.body)
    if status in (401, 403):
        return ZepFailure(f"Zep refused the API key ({status}) on {what}: check ZEP_API_KEY", status=status)
    if status == 429:
        return ZepFailure(f"Zep rate limit (429) on {what}{detail}", status=status,
                          retry_after=_retry_after(exc.headers or {}))
    retryable = status >= 500 or status in (404, 408, 409)
    return ZepFailure(f"Zep answered {status} to {what}{detail}", retryable=retryable, status=status)


def _error_detail(body: Any) -> str:
    """``": <message>"`` from a v4 error body ({"error": {"message": …}}), else ""."""
    error = getattr(body, "error", None)
    if error is None and isinstance(body, dict):
        error = body.get("error")
    message = getattr(error, "message", None) if not isinstance(error, dict) else error.get("message")
    return f": {message}" if message else ""


def _retry_after(headers: dict[str, str]) -> float:
    """Seconds from a Retry-After header (numeric form only), 0 when absent or unreadable."""
    value = {k.lower(): v for k, v in headers.items()}.get("retry-after", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return 0.0
