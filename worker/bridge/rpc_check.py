"""Every JSON-RPC reply must answer its own request: the ``id`` of a reply (each event of a
streamed one too) must be the request's, or the reply is a participant error, never read.

The a2a-sdk client does not compare ids (a2a-sdk 1.3: it reads ``result`` of whatever object
comes back). The check sits on the HTTP client as a response hook that wraps the body stream,
so a wrong reply is refused before the SDK parses it, and the transport (proxies, timeouts)
stays the client's own.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

_NO_ID = object()


class MismatchedReply(Exception):
    """A reply that does not answer the request it came back for."""


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
    server-sent event (before the chunk holding it is passed on)."""

    def __init__(self, inner: Any, expected: Any, *, sse: bool, encoding: str) -> None:
        self._inner = inner
        self._expected = expected
        self._sse = sse
        self._decode = _Decoder(encoding)
        self._text = b""  # JSON: the whole body; SSE: the unfinished line
        self._data: list[bytes] = []  # SSE: data lines of the current event

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            plain = self._decode(chunk)
            if self._sse:
                self._feed_sse(plain)
            else:
                self._text += plain
            yield chunk
        if self._sse:
            self._feed_sse(b"\n\n")
        else:
            try:
                document = json.loads(self._text)
            except ValueError:
                return  # unreadable: the SDK reports it
            check_reply(document, self._expected)

    def _feed_sse(self, plain: bytes) -> None:
        *lines, self._text = (self._text + plain).replace(b"\r\n", b"\n").split(b"\n")
        for line in lines:
            if line.startswith(b"data:"):
                value = line[5:]
                self._data.append(value[1:] if value.startswith(b" ") else value)
            elif not line.strip() and self._data:
                body, self._data = b"\n".join(self._data), []
                try:
                    document = json.loads(body)
                except ValueError:
                    continue  # unreadable: the SDK reports it
                check_reply(document, self._expected)

    async def aclose(self) -> None:
        await self._inner.aclose()


async def check_response(response: httpx.Response) -> None:
    """httpx response hook: wrap the body of a JSON-RPC reply in the id check."""
    expected = request_id(response.request)
    if expected is _NO_ID or not response.is_success:
        return
    content_type = response.headers.get("content-type", "")
    response.stream = _CheckedStream(
        response.stream,
        expected,
        sse="text/event-stream" in content_type,
        encoding=response.headers.get("content-encoding", ""),
    )


def checked_client(timeout: httpx.Timeout) -> httpx.AsyncClient:
    """An HTTP client whose JSON-RPC replies must answer their requests."""
    return httpx.AsyncClient(
        timeout=timeout,
        headers={"Accept-Encoding": "identity"},
        event_hooks={"response": [check_response]},
    )
