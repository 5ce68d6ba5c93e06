"""A fake OpenAI-compatible server: a real HTTP server on 127.0.0.1 speaking ``/v1/chat/completions``.

It records every request body and answers from a script (``FakeOpenAI.script``) or, when the script
is empty, from a responder function. Tests point the engine at ``server.base_url`` exactly as a user
points it at Ollama or vLLM: the real SDK, the real wire format, no patched module paths, no network.

Run on its own (``python -m tests.brains.fake_openai --port 8765 --mode abstain``) it serves the
synthetic evaluation: ``abstain`` answers every question with "cannot tell" (the rules decide, so the
run measures calls and prompt sizes, not a model's judgement); ``chaos`` answers every first attempt
with something the checks must reject (malformed JSON, prose, an invented SOP, an invented value, an
HTTP 500) and every retry with "cannot tell".
"""

from __future__ import annotations

import argparse
import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer: a chat completion with ``content``, or a raw ``body`` with an HTTP ``status``."""

    content: str | None = None
    status: int = 200
    body: Any = None
    delay_s: float = 0.0
    usage: dict[str, int] | None = None
    finish_reason: str = "stop"
    headers: dict[str, str] = field(default_factory=dict)


def content(obj: Any, *, usage: dict[str, int] | None = None, delay_s: float = 0.0) -> Reply:
    """A completion whose message content is ``obj`` (JSON-encoded unless it is a string)."""
    text = obj if isinstance(obj, str) else json.dumps(obj)
    return Reply(content=text, usage=usage, delay_s=delay_s)


def error(status: int, message: str = "boom") -> Reply:
    """An HTTP error with an OpenAI-style error body (retry-after-ms keeps the SDK's backoff short)."""
    return Reply(status=status, body={"error": {"message": message, "type": "server_error"}},
                 headers={"retry-after-ms": "10"})


def command(kind: str, *, sop: str | None = None, slots: dict[str, str] | None = None, query: str | None = None,
            act: str | None = None) -> dict[str, Any]:
    """One wire command of a ``Reading``."""
    return {"command": kind, "sop": sop, "slots": [{"name": k, "value": v} for k, v in (slots or {}).items()],
            "query": query, "act": act}


def reading(kind: str, *, sop: str | None = None, slots: dict[str, str] | None = None, query: str | None = None,
            act: str | None = None, also: list[dict[str, Any]] | None = None, language: str | None = "en",
            **kw: Any) -> Reply:
    """A scripted ``Reading`` answer: one command (``also``: more after it)."""
    first = command(kind, sop=sop, slots=slots, query=query, act=act)
    return content({"commands": [first, *(also or [])], "language": language}, **kw)


def pick(choice: int | None, **kw: Any) -> Reply:
    """A scripted ``BranchPick`` answer."""
    return content({"choice": choice}, **kw)


def wording(text: str, **kw: Any) -> Reply:
    """A scripted ``Wording`` answer."""
    return content({"reply": text}, **kw)


Responder = Callable[[dict[str, Any]], Reply]


class FakeOpenAI:
    """The server. Use as a context manager; ``requests`` holds the JSON bodies received, in order."""

    def __init__(self, responder: Responder | None = None, port: int = 0) -> None:
        self.script: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.responder = responder
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def push(self, *replies: Reply) -> None:
        """Queue replies, answered one per request in order."""
        with self._lock:
            self.script.extend(replies)

    def next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            if self.script:
                return self.script.pop(0)
        if self.responder is not None:
            return self.responder(body)
        return error(599, "the fake server has no scripted reply left")

    def chat_requests(self) -> list[dict[str, Any]]:
        """The chat-completion request bodies (what the engine sent)."""
        return [r for r, p in zip(self.requests, self.paths, strict=True) if p.endswith("/chat/completions")]


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
            else:
                self._send(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                body = {"_unparsable": True}
            with fake._lock:
                fake.paths.append(self.path)
            reply = fake.next_reply(body)
            if reply.delay_s:
                time.sleep(reply.delay_s)
            if reply.status != 200 or reply.body is not None:  # an error, or a raw body sent as it is
                self._send(reply.status, reply.body, reply.headers)
                return
            self._send(200, _completion(body, reply), reply.headers)

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                pass

        def log_message(self, *args: Any) -> None:
            return

    return Handler


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model", "fake-model"),
        "choices": [{"index": 0, "finish_reason": reply.finish_reason, "logprobs": None,
                     "message": {"role": "assistant", "content": reply.content, "refusal": None}}],
    }
    if reply.usage is not None:
        out["usage"] = {**reply.usage, "total_tokens": sum(reply.usage.values())}
    return out


# ---------------------------------------------------------------------------- policies for whole runs


def schema_name(body: dict[str, Any]) -> str:
    """Which answer a request asks for: Reading, BranchPick or Wording (from response_format or the prompt)."""
    fmt = body.get("response_format") or {}
    name = (fmt.get("json_schema") or {}).get("name") if isinstance(fmt, dict) else None
    if name:
        return str(name)
    system = next((m.get("content", "") for m in body.get("messages", []) if m.get("role") == "system"), "")
    if '"choice"' in system:
        return "BranchPick"
    if '"reply"' in system:
        return "Wording"
    return "Reading"


def draft_of(body: dict[str, Any]) -> str:
    """The draft a wording request carries."""
    user = next((m.get("content", "") for m in body.get("messages", []) if m.get("role") == "user"), "")
    return user.split("Draft:\n", 1)[1] if "Draft:\n" in user else user


def abstain(body: dict[str, Any]) -> Reply:
    """'Cannot tell' for readings and branches; the draft unchanged for wording."""
    name = schema_name(body)
    prompt_chars = sum(len(m.get("content", "")) for m in body.get("messages", []))
    usage = {"prompt_tokens": prompt_chars // 4, "completion_tokens": 12}
    if name == "BranchPick":
        return content({"choice": None}, usage=usage)
    if name == "Wording":
        return content({"reply": draft_of(body)}, usage=usage)
    return content({"commands": [command("unclear")], "language": "en"}, usage=usage)


def chaos() -> Responder:
    """A first attempt the checks must reject, then 'cannot tell' (the retry of the same question)."""
    bad = itertools.cycle([
        lambda b: content('{"commands": [{"command": "answer", "slots": [{"name": '),  # malformed JSON
        lambda b: content("Sure! The customer seems to want help with their listing."),  # prose
        lambda b: content({"commands": [command("start_goal", sop="seller.refund_everything")],
                           "language": "en"}),  # an invented SOP
        lambda b: content({"commands": [command("refund")], "language": "en"}),  # an invented action
        lambda b: content({"choice": 42} if schema_name(b) == "BranchPick" else
                          {"commands": [command("answer", slots={"listing_id": "LSTINVENTED99"})],
                           "language": "en"}),  # an invented value
        lambda b: error(500, "upstream model crashed"),  # the SDK retries once: the retry gets 'cannot tell'
    ])
    after_500 = [False]  # the SDK's transport retry of a 500 is answered, not failed again

    def respond(body: dict[str, Any]) -> Reply:
        is_retry = any(m.get("role") == "assistant" for m in body.get("messages", []))
        if is_retry or after_500[0]:
            after_500[0] = False
            return abstain(body)
        reply: Reply = next(bad)(body)
        after_500[0] = reply.status == 500
        return reply

    return respond


def main() -> None:
    parser = argparse.ArgumentParser(description="a fake OpenAI-compatible server for local runs")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--mode", choices=["abstain", "chaos"], default="abstain")
    args = parser.parse_args()
    responder = abstain if args.mode == "abstain" else chaos()
    with FakeOpenAI(responder, port=args.port) as fake:
        print(f"fake OpenAI-compatible server ({args.mode}) at {fake.base_url}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
