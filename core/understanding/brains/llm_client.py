"""The language model as a side effect behind a small protocol, and its one adapter: any server that
speaks OpenAI's ``/v1/chat/completions`` (OpenAI itself, Ollama, vLLM, llama.cpp server, LiteLLM).

The adapter asks for structured output (``response_format`` built by the ``openai`` SDK from a
pydantic model) and never trusts it: a server that ignores the schema, answers in prose, wraps the
JSON in a code fence or a thinking trace, or rejects ``response_format`` altogether still gives a
``ChatReply`` whose ``parsed`` is None and whose ``error`` says why. Transport problems (connection
refused, timeout after the bounded retries, HTTP 5xx, a refused key) raise ``LLMUnavailableError``.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from core.shared.concurrency import waiting
from core.shared.errors import LLMUnavailableError, UserInputError

OPENAI_URL = "https://api.openai.com/v1"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
LOCAL_KEY = "not-needed"  # Ollama, vLLM and llama.cpp accept any key; the SDK insists on one
DEFAULT_TIMEOUT_S = 30.0

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class LLMSettings:
    """Where the language model is and how long to wait for it.

    Args:
        model: the model name the server serves (``gpt-4o-mini``, ``llama3.1``, ``Qwen/Qwen2.5-7B-Instruct``).
        base_url: the server's OpenAI-compatible root, e.g. ``http://localhost:11434/v1``; None for OpenAI.
        api_key: the key; optional for local servers.
        timeout_s: per request; a request that takes longer counts as a timeout.
        max_retries: transport retries per request (HTTP 5xx, 429, timeouts, dropped connections).
    """

    model: str = ""
    base_url: str | None = None
    api_key: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_retries: int = 1

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LLMSettings | None:
        """Settings from ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` / ``SOP_LLM_MODEL`` (and the optional
        ``SOP_LLM_TIMEOUT_S``); None when neither a key nor a base URL is set (no LLM configured).

        Raises:
            UserInputError: when the variables are set but cannot work together (see ``checked``).
        """
        env = os.environ if environ is None else environ
        key, base, model = (env.get(n, "").strip() for n in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SOP_LLM_MODEL"))
        if not key and not base:
            return None
        raw_timeout = env.get("SOP_LLM_TIMEOUT_S", "").strip()
        try:
            timeout = float(raw_timeout) if raw_timeout else DEFAULT_TIMEOUT_S
        except ValueError as exc:
            raise UserInputError(f"SOP_LLM_TIMEOUT_S must be a number of seconds, got {raw_timeout!r}") from exc
        return cls(model=model, base_url=base or None, api_key=key or None, timeout_s=timeout).checked()

    @classmethod
    def from_fields(cls, model: str = "", base_url: str = "", api_key: str = "", timeout_s: float | None = None,
                    environ: Mapping[str, str] | None = None) -> LLMSettings | None:
        """Settings from a form (the playground's chat settings); a blank field falls back to its
        environment variable, except that the environment's key is never sent to a base URL typed
        into the form (it may belong to someone else). None when nothing is configured anywhere.

        Raises:
            UserInputError: see ``checked``.
        """
        env = os.environ if environ is None else environ
        base = base_url.strip()
        key = api_key.strip() or ("" if base else env.get("OPENAI_API_KEY", ""))
        merged = {"OPENAI_API_KEY": key, "OPENAI_BASE_URL": base or env.get("OPENAI_BASE_URL", ""),
                  "SOP_LLM_MODEL": model.strip() or env.get("SOP_LLM_MODEL", ""),
                  "SOP_LLM_TIMEOUT_S": str(timeout_s) if timeout_s else env.get("SOP_LLM_TIMEOUT_S", "")}
        return cls.from_env(merged)

    def checked(self) -> LLMSettings:
        """These settings completed (OpenAI's default model, a placeholder key for local servers).

        Raises:
            UserInputError: no key and no base URL, a base URL without a model name, a base URL
                that is not http(s), or a timeout that is not positive.
        """
        base = (self.base_url or "").strip().rstrip("/") or None
        key = (self.api_key or "").strip() or None
        model = self.model.strip()
        if base is None and key is None:
            raise UserInputError("no language model is configured: set OPENAI_API_KEY for OpenAI, or OPENAI_BASE_URL "
                                 "(and SOP_LLM_MODEL) for an OpenAI-compatible server such as Ollama or vLLM")
        if base is not None and not re.match(r"^https?://[^/\s]+", base):
            raise UserInputError(f"the LLM base URL must start with http:// or https://, got {base!r}")
        if not model:
            if base is not None and base != OPENAI_URL:
                raise UserInputError(f"set SOP_LLM_MODEL (the chat settings' Model) to a model the server at {base} "
                                     "serves, e.g. llama3.1 for Ollama")
            model = DEFAULT_OPENAI_MODEL
        if not self.timeout_s > 0:
            raise UserInputError(f"the LLM timeout must be positive, got {self.timeout_s}")
        return replace(self, model=model, base_url=base, api_key=key or LOCAL_KEY,
                       max_retries=max(0, int(self.max_retries)))

    @property
    def endpoint(self) -> str:
        """The base URL requests go to."""
        return (self.base_url or OPENAI_URL).rstrip("/")

    def describe(self) -> str:
        """``model at endpoint`` (never the key)."""
        return f"{self.model or DEFAULT_OPENAI_MODEL} at {self.endpoint}"


@dataclass
class ChatReply(Generic[T]):
    """One chat completion: the text, the parsed object (None when it did not fit the schema) and usage."""

    content: str
    parsed: T | None
    error: str = ""
    prompt_tokens: int | None = None  # as the server reported them
    completion_tokens: int | None = None
    latency_ms: float = 0.0
    schema_sent: bool = True


class ChatModel(Protocol):
    """A chat model that answers with one JSON object of a given schema."""

    @property
    def endpoint(self) -> str:
        """Where requests go (for messages and traces)."""
        ...

    @property
    def model(self) -> str:
        """The model name."""
        ...

    def complete(self, messages: list[dict[str, str]], schema: type[T]) -> ChatReply[T]:
        """One completion asked to follow ``schema``.

        Raises:
            LLMUnavailableError: the server cannot be used (after the bounded transport retries).
        """
        ...


class OpenAIChat:
    """``ChatModel`` over the ``openai`` SDK's ``chat.completions`` (any OpenAI-compatible server)."""

    def __init__(self, settings: LLMSettings, client: Any | None = None) -> None:
        """``client`` (an ``openai.OpenAI``) may be passed in; by default one is built from the settings."""
        import openai

        self.settings = settings.checked()
        self._client = client or openai.OpenAI(api_key=self.settings.api_key, base_url=self.settings.endpoint,
                                               timeout=self.settings.timeout_s, max_retries=self.settings.max_retries)
        self._schema_ok = True  # cleared when the server rejects response_format; JSON is then asked in the prompt

    def close(self) -> None:
        """Close the HTTP connections to the server."""
        close = getattr(self._client, "close", None)
        if callable(close):
            close()

    @property
    def endpoint(self) -> str:
        return self.settings.endpoint

    @property
    def model(self) -> str:
        return self.settings.model

    def complete(self, messages: list[dict[str, str]], schema: type[T]) -> ChatReply[T]:
        import openai

        started = time.perf_counter()
        sent = self._schema_ok
        try:
            raw = self._post(messages, schema, sent)
        except openai.APIStatusError as exc:
            if not (sent and exc.status_code in (400, 422)):
                raise _unavailable(self.endpoint, exc) from exc
            self._schema_ok = sent = False  # e.g. "response_format is not supported": ask in the prompt only
            try:
                raw = self._post(messages, schema, sent)
            except openai.OpenAIError as again:
                raise _unavailable(self.endpoint, again) from again
        except openai.OpenAIError as exc:
            raise _unavailable(self.endpoint, exc) from exc
        reply = _read(raw, schema, sent)
        reply.latency_ms = round((time.perf_counter() - started) * 1000, 1)
        return reply

    def _post(self, messages: list[dict[str, str]], schema: type[T], with_schema: bool) -> Any:
        raw = self._client.chat.completions.with_raw_response
        common: dict[str, Any] = {"model": self.settings.model, "messages": messages, "temperature": 0}
        with waiting():  # other turns compute while this one waits on the model
            if with_schema:
                return raw.parse(response_format=schema, **common)
            return raw.create(**common)


def _read(raw: Any, schema: type[T], sent: bool) -> ChatReply[T]:
    """The reply from a raw HTTP response: the SDK's parse first, then a tolerant reading of the text."""
    try:
        body = json.loads(raw.text)
        choice = body["choices"][0]
        content = str((choice.get("message") or {}).get("content") or "")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return ChatReply("", None, "the server's answer is not a chat completion", schema_sent=sent)
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    reply: ChatReply[T] = ChatReply(content, None, prompt_tokens=_int(usage.get("prompt_tokens")),
                                    completion_tokens=_int(usage.get("completion_tokens")), schema_sent=sent)
    if sent:
        try:
            parsed = raw.parse().choices[0].message.parsed
            if isinstance(parsed, schema):
                reply.parsed = parsed
                return reply
        except Exception:  # noqa: BLE001 - any SDK parse failure falls through to the tolerant reading
            pass
    reply.parsed, reply.error = parse_json_reply(content, schema)
    return reply


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


THINKING = re.compile(r"<(think|thinking|reasoning|reflection)>.*?</\1>", re.S | re.I)
FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)


def parse_json_reply(content: str, schema: type[T]) -> tuple[T | None, str]:
    """Read one JSON object of ``schema`` from a model's text: thinking traces and code fences are
    dropped, prose around the object is ignored. Returns (object, "") or (None, why not)."""
    text = THINKING.sub("", content or "")
    text = re.sub(r"^.*?</(think|thinking|reasoning)>", "", text, flags=re.S | re.I).strip()
    fenced = FENCE.search(text)
    if fenced:
        text = fenced.group(1).strip()
    start, end = text.find("{"), text.rfind("}")
    if start >= 0 and end <= start:
        return None, "the answer is not valid JSON (the object is never closed)"
    if start < 0:
        shown = " ".join(content.split())[:80]
        return None, f"the answer is not a JSON object: {shown!r}" if shown else "the answer is empty"
    try:
        data = json.loads(text[start:end + 1])
    except json.JSONDecodeError as exc:
        return None, f"the answer is not valid JSON ({exc.msg} at character {exc.pos})"
    try:
        return schema.model_validate(data), ""
    except ValidationError as exc:
        problems = [f"{'.'.join(str(p) for p in e['loc']) or 'answer'}: {e['msg']}" for e in exc.errors()[:4]]
        return None, "the JSON does not fit the schema: " + "; ".join(problems)


def _unavailable(endpoint: str, exc: Exception) -> LLMUnavailableError:
    """An SDK error as the engine's error, with a kind the chat can explain."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return LLMUnavailableError(endpoint, "no answer in time", "timeout")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        return LLMUnavailableError(endpoint, _short(str(cause or exc) or "connection failed"), "unreachable")
    if isinstance(exc, openai.APIStatusError):
        code = exc.status_code
        kind = {401: "auth", 403: "auth", 404: "not_found"}.get(code, "server_error" if code >= 429 else "rejected")
        return LLMUnavailableError(endpoint, f"HTTP {code}: {_short(_status_text(exc))}", kind)
    return LLMUnavailableError(endpoint, _short(str(exc)), "unreachable")


def _status_text(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        msg = inner.get("message") if isinstance(inner, dict) else inner
        if msg:
            return str(msg)
    return str(getattr(exc, "message", "") or exc)


def _short(text: str, limit: int = 160) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
