"""Every JSON-RPC reply must answer its own request: the ``id`` of a reply (each event of a
streamed one too) must be the request's, or the reply is a participant error, never read. And no
reply is held in memory past a bound: a body (each streamed event of one) longer than
``max_reply_bytes`` is cut off with :class:`ReplyTooLarge` before anyone parses it (the SDK would
read a body, an SSE line or an event of any length into memory).

The a2a-sdk client does not compare ids (a2a-sdk 1.3: it reads ``result`` of whatever object
comes back). The check sits on the HTTP client as a response hook that wraps the body stream,
so a wrong reply is refused before the SDK parses it, and the transport (proxies, timeouts)
stays the client's own.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

from worker.bridge.retries import Retry, RetryingClient

_NO_ID = object()


class MismatchedReply(Exception):
    """A reply that does not answer the request it came back for."""


class ReplyTooLarge(Exception):
    """A reply body, or one streamed event of it, longer than the bridge holds."""

    def __init__(self, limit: int, what: str) -> None:
        super().__init__(f"the participant sent {what} of more than {limit} bytes")
        self.limit = limit


def request_id(request: httpx.Request) -> Any:
    """The JSON-RPC id of ``request``, or ``_NO_ID`` when it is not a JSON-RPC call."""
    if request.method != "POST" or "json" not in request.headers.get("content-type", ""):
        return _NO_ID
    try:
        payload = json.loads(request.content)
    except (ValueError, httpx.RequestNotRead):
        return _NO_ID
    if not isinstance(payload, dict) or payload.get("jsonrpc") != "2.0" or "id" not in payload:
        return _NO_ID
    return payload["id"]


def check_reply(document: Any, expected: Any) -> None:
    """Raise :class:`MismatchedReply` unless ``document`` is a reply to the request ``expected``.
    An error reply may carry a null id (the server could not read the request)."""
    if not isinstance(document, dict):
        return  # not an object: the SDK reports it as an invalid response
    got = document.get("id", _NO_ID)
    if got == expected and type(got) is type(expected):
        return
    if got is None and "error" in document:
        return
    shown = "no id" if got is _NO_ID else f"id {json.dumps(got)[:80]}"
    raise MismatchedReply(
        f"the participant's JSON-RPC reply has {shown}, the request had id {json.dumps(expected)}"
    )


class _Decoder:
    def __init__(self, encoding: str) -> None:
        encoding = encoding.strip().lower()
        if encoding in ("", "identity"):
            self._zlib = None
        elif encoding in ("gzip", "x-gzip", "deflate"):
            self._zlib = zlib.decompressobj(wbits=47)  # gzip or zlib header, detected
        else:
            raise MismatchedReply(f"reply in an encoding that was not asked for: {encoding}")

    def __call__(self, chunk: bytes) -> bytes:
        return chunk if self._zlib is None else self._zlib.decompress(chunk)


class _CheckedStream(httpx.AsyncByteStream):
    """Passes the body through; checks the id of the JSON body (at its end) or of each
    server-sent event (before the chunk holding it is passed on), and the size of the body (of
    each event of a stream) against ``limit``. Pieces are kept in lists and joined once: a long
    body or line costs its length, not its length times its number of chunks."""

    def __init__(self, inner: Any, expected: Any, *, sse: bool, encoding: str, limit: int) -> None:
        self._inner = inner
        self._expected = expected
        self._sse = sse
        self._decode = _Decoder(encoding)
        self._limit = limit
        self._pieces: list[bytes] = []  # JSON: the body; SSE: the unfinished line
        self._pieces_len = 0
        self._data: list[bytes] = []  # SSE: data lines of the current event
        self._data_len = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            plain = self._decode(chunk)
            if self._sse:
                self._feed_sse(plain)
                if self._pieces_len + self._data_len > self._limit:
                    raise ReplyTooLarge(self._limit, "one streamed event")
            else:
                self._pieces.append(plain)
                self._pieces_len += len(plain)
                if self._pieces_len > self._limit:
                    raise ReplyTooLarge(self._limit, "a reply")
            yield chunk
        if self._sse:
            self._feed_sse(b"\n\n")
        elif self._expected is not _NO_ID:
            try:
                document = json.loads(b"".join(self._pieces))
            except ValueError:
                return  # unreadable: the SDK reports it
            check_reply(document, self._expected)

    def _feed_sse(self, plain: bytes) -> None:
        if b"\n" not in plain:
            self._pieces.append(plain)
            self._pieces_len += len(plain)
            return
        *lines, rest = b"".join([*self._pieces, plain]).split(b"\n")
        self._pieces, self._pieces_len = [rest], len(rest)
        for line in lines:
            line = line.removesuffix(b"\r")
            if line.startswith(b"data:"):
                value = line[5:]
                value = value[1:] if value.startswith(b" ") else value
                self._data.append(value)
                self._data_len += len(value)
            elif not line.strip() and self._data:
                body, self._data, self._data_len = b"\n".join(self._data), [], 0
                if self._expected is _NO_ID:
                    continue
                try:
                    document = json.loads(body)
                except ValueError:
                    continue  # unreadable: the SDK reports it
                check_reply(document, self._expected)

    async def aclose(self) -> None:
        await self._inner.aclose()


def size_checker(limit: int) -> Any:
    """httpx response hook: wrap every body in the size check, and the body of a JSON-RPC reply
    in the id check too."""

    async def check_response(response: httpx.Response) -> None:
        expected = request_id(response.request)
        if not response.is_success:
            expected = _NO_ID  # an error page: its size is checked, not its id
        content_type = response.headers.get("content-type", "")
        response.stream = _CheckedStream(
            response.stream,
            expected,
            sse="text/event-stream" in content_type,
            encoding=response.headers.get("content-encoding", ""),
            limit=limit,
        )

    return check_response


def checked_client(
    timeout: httpx.Timeout,
    max_reply_bytes: int,
    remaining: Callable[[], float],
    on_retry: Callable[[Retry], None],
) -> httpx.AsyncClient:
    """An HTTP client whose JSON-RPC replies must answer their requests, whose replies (each
    streamed event) are at most ``max_reply_bytes`` long, and which retries transient failures
    (:mod:`worker.bridge.retries`)."""
    return RetryingClient(
        remaining,
        on_retry,
        timeout=timeout,
        headers={"Accept-Encoding": "identity"},
        event_hooks={"response": [size_checker(max_reply_bytes)]},
    )
