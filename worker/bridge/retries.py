"""A participant's transient HTTP failures, retried a bounded number of times with backoff
before the trial is classified (docs/participant-protocol.md, "Retries").

What is resent, and why it is safe:

- a request that never reached the participant (connection refused, unreachable: httpx's
  ``ConnectError``) is resent, whatever it is;
- a request the participant answered with HTTP 429, 500, 502, 503 or 504 is resent: such an
  answer carries no task and no message, so the participant accepted nothing the bridge could
  have seen. A ``SendMessage`` goes out again byte for byte, with the same ``messageId``, which
  A2A makes unique per message: an agent that did take it up can tell the copy;
- a request whose connection broke after it was sent and before any answer (a reset, the server
  closing the connection) is resent only when reading it again changes nothing: the agent card,
  ``GetTask``, ``CancelTask``, ``SubscribeToTask``. A ``SendMessage`` is not: the participant may
  be working on it, and a second one could start the work twice.

A timeout is never retried (the trial's deadline decides), and no retry sleeps past it. A stream
that breaks after it answered is not this client's business (the conversation polls the task).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import httpx

MAX_RETRIES: Final = 3  # per request: four tries at most
BACKOFF_BASE_SEC: Final = 0.5  # 0.5, 1, 2 s
BACKOFF_MAX_SEC: Final = 10.0  # also the most of a Retry-After that is honoured
RETRIED_STATUSES: Final = frozenset({429, 500, 502, 503, 504})
# Reading these again changes nothing at the participant (JSON-RPC methods, 1.x and 0.3 names).
_REPEATABLE_METHODS: Final = frozenset(
    {
        "GetTask",
        "CancelTask",
        "SubscribeToTask",
        "GetExtendedAgentCard",
        "tasks/get",
        "tasks/cancel",
        "tasks/resubscribe",
        "agent/getAuthenticatedExtendedCard",
    }
)


@dataclass(frozen=True)
class Retry:
    """One retry: what failed, how, and how long the bridge waits before the next try."""

    method: str  # the JSON-RPC method, or "GET <path>"
    attempt: int  # the try that failed (1 = the first)
    reason: str
    delay_sec: float

    def to_data(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "attempt": self.attempt,
            "reason": self.reason,
            "delay_sec": round(self.delay_sec, 3),
        }


def request_method(request: httpx.Request) -> str:
    """The JSON-RPC method of ``request``, else its HTTP method and path."""
    if request.method == "POST":
        try:
            payload = json.loads(request.content)
        except (ValueError, httpx.RequestNotRead):
            payload = None
        if isinstance(payload, dict) and isinstance(payload.get("method"), str):
            return str(payload["method"])[:100]
    return f"{request.method} {request.url.path}"[:200]


def backoff_sec(attempt: int, retry_after: str | None = None) -> float:
    """The wait after failed try ``attempt``: doubling from :data:`BACKOFF_BASE_SEC`, or the
    participant's ``Retry-After`` (seconds or an HTTP date), at most :data:`BACKOFF_MAX_SEC`."""
    wait = BACKOFF_BASE_SEC * 2 ** (attempt - 1)
    if retry_after:
        try:
            wait = float(retry_after)
        except ValueError:
            when = email.utils.parsedate_to_datetime(retry_after) if retry_after else None
            if when is not None:
                wait = when.timestamp() - time.time()
    return max(0.0, min(wait, BACKOFF_MAX_SEC))


class RetryingClient(httpx.AsyncClient):
    """An httpx client that resends what :mod:`this module <worker.bridge.retries>` says is
    safe, at most :data:`MAX_RETRIES` times per request, never waiting past ``remaining()``; each
    retry is told to ``on_retry`` before the wait. A client, not a transport: the client's own
    transport stays (its proxies from the environment included)."""

    def __init__(
        self, remaining: Callable[[], float], on_retry: Callable[[Retry], None], **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self._remaining = remaining
        self._on_retry = on_retry

    async def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        method = request_method(request)
        attempt = 1
        failure: httpx.TransportError | None
        while True:
            try:
                response = await super().send(request, **kwargs)
            except httpx.ConnectError as exc:
                reason, retry_after, failure = _text(exc, "connection failed"), None, exc
            except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError) as exc:
                if method.startswith("GET ") or method in _REPEATABLE_METHODS:
                    reason, retry_after, failure = _text(exc, "connection broken"), None, exc
                else:
                    raise
            else:
                if response.status_code not in RETRIED_STATUSES:
                    return response
                reason, failure = f"HTTP {response.status_code}", None
                retry_after = response.headers.get("retry-after")
            delay = backoff_sec(attempt, retry_after)
            if attempt > MAX_RETRIES or delay >= self._remaining():
                if failure is not None:
                    raise failure
                return response
            if failure is None:
                await response.aclose()
            self._on_retry(Retry(method, attempt, reason, delay))
            await asyncio.sleep(delay)
            attempt += 1


def _text(exc: BaseException, default: str) -> str:
    return f"{type(exc).__name__}: {str(exc).strip() or default}"[:300]
