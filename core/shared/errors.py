"""One error tree for the engine.

    SopError
    ├── UserInputError          a user's file or setting is wrong (carries file, line, column)
    │   ├── WorkspaceError      store.yaml, gar.csv, inventory or KB cannot be used
    │   │   └── SourceUnavailableError   a remote source (a Google Sheet) cannot be read now, and no copy is kept
    │   └── SopSyntaxError      an SOP file cannot be compiled
    ├── ToolError               a tool failed (carries kind: invalid_input | failure | timeout | denied)
    ├── StateConflictError      optimistic-lock conflict: someone saved a newer version
    ├── SessionBusyError        another turn of the session held it for longer than a turn may wait
    ├── LLMUnavailableError     the language model endpoint cannot be used right now (carries endpoint, kind)
    └── EngineError             the engine itself misbehaved (a bug, never the user's fault)
"""

from __future__ import annotations

from dataclasses import dataclass

from core.shared.redaction import redact


class SopError(Exception):
    """Base class of every error the engine raises on purpose."""


@dataclass
class Location:
    """Where in a user's file a problem is."""

    file: str
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        where = self.file
        if self.line:
            where += f":{self.line}"
            if self.column:
                where += f":{self.column}"
        return where


class UserInputError(SopError):
    """A user's file or setting is wrong; the message says what and where."""

    def __init__(self, message: str, location: Location | None = None) -> None:
        self.message = message
        self.location = location
        super().__init__(f"{location}: {message}" if location else message)


class WorkspaceError(UserInputError):
    """A workspace file (store.yaml, gar.csv, inventory, KB) cannot be used."""


class SourceUnavailableError(WorkspaceError):
    """A remote source the workspace names (a Google Sheet inventory) cannot be read now and no copy of it is
    kept yet: only what needs it is off, until it can be read."""


class SopSyntaxError(UserInputError):
    """An SOP file cannot be compiled."""


class ToolError(SopError):
    """A tool call failed. ``kind`` is one of invalid_input, failure, timeout, denied.

    ``public``: whether the message is written for the customer (a workspace's own tool saying "invalid
    order number NW-1"); a backend's or a library's text (an HTTP error body, an exception) is not, and
    goes to the trace only.

    ``sent``: whether the request may have reached the tool. False only when the failure proves nothing was
    sent (the arguments refused, the server not started, the connection refused): such a call of a tool that
    changes the world may be tried again; any other failure of one leaves its outcome unknown."""

    def __init__(self, message: str, kind: str = "failure", *, public: bool = True, sent: bool = True) -> None:
        self.kind = kind
        self.public = public
        self.sent = sent
        self.answered = False  # the tool itself answered that it failed (its outcome is known): set by the tool
        super().__init__(message)


class StateConflictError(SopError):
    """A save lost the optimistic-locking race: the stored version is newer."""

    def __init__(self, session_id: str, expected: int, found: int | None) -> None:
        self.session_id = session_id
        self.expected = expected
        self.found = found
        super().__init__(
            f"session {session_id!r}: expected stored version {expected}, found {found}"
        )


class SessionBusyError(SopError):
    """Another turn of the same session held its lock for longer than a turn may wait."""

    def __init__(self, session_id: str, waited_s: float) -> None:
        self.session_id = session_id
        self.waited_s = waited_s
        super().__init__(f"session {session_id!r} is busy with another turn (waited {waited_s:g}s)")


class LLMUnavailableError(SopError):
    """The language model endpoint could not be used (unreachable, timed out, refused the key, ...).

    ``kind`` is one of unreachable, timeout, server_error, auth, not_found, rejected. ``chat_message``
    is what the customer sees when the turn is abandoned because of it (nothing was saved).
    """

    def __init__(self, endpoint: str, reason: str, kind: str = "unreachable") -> None:
        self.endpoint = redact(endpoint)  # the server's words may echo the key: never in a trace or a log
        self.reason = redact(reason)
        self.kind = kind
        super().__init__(f"language model at {self.endpoint}: {kind}: {self.reason}")

    @property
    def chat_message(self) -> str:
        """A plain sentence for the chat: what failed, and that nothing changed. The server's own words
        (which may echo a key or a prompt) stay in the log, never in the chat."""
        what = {"auth": "refused the API key", "not_found": "does not serve the configured model",
                "rejected": "rejected the request", "timeout": "did not answer in time",
                "server_error": "failed"}.get(self.kind, "is unreachable")
        return (f"The language model at {self.endpoint} {what}; nothing was changed. "
                "Please try again, or switch the brain to rule.")


class EngineError(SopError):
    """The engine reached a state it should never reach."""
