"""What every JSON-RPC request body must be before a2a-sdk parses it: small, UTF-8, shallow.

The green agent has no authentication (AgentBeats reaches it inside a private network), so whoever
reaches it must not be able to grow its memory with one large body, nor turn a malformed body
into an internal error (-32603): a body that breaks these rules gets a JSON-RPC InvalidParams
error (-32602) naming the problem, without being read past the limit.

A2A 0.3 methods (``message/send``, ``tasks/get``, …) whose ``params`` are invalid get -32602 here
too: a2a-sdk's 0.3 compatibility layer validates the whole request with one model and answers
-32600 (Invalid Request) for any failure, params included, and offers no setting to change that.
The request is checked with the SDK's own 0.3 models; a broken envelope (``jsonrpc``, ``id``,
``method``) is left to the SDK, which answers it -32600 as JSON-RPC says.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from green_agent.request import json_depth_problem

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

# An assessment request is a few KiB; 1 MiB leaves room for long task_ids lists.
MAX_BODY_BYTES = 1 << 20
INVALID_PARAMS = -32602
# A refused body is read and dropped up to this size, then the connection is closed.
DRAIN_BYTES = 64 << 20


class RequestGuard:
    """ASGI middleware for the JSON-RPC endpoint (POST); other requests pass untouched."""

    def __init__(self, app: ASGIApp, max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_body_bytes:
            await _drain(receive)
            await _refuse(send, 413, self._too_large(declared))
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                chunks.clear()
                if message.get("more_body", False):
                    await _drain(receive)
                await _refuse(send, 413, self._too_large(None))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        problem = _body_problem(body)
        if problem is not None:
            await _refuse(send, 400, problem)
            return
        refusal = v03_params_refusal(body)
        if refusal is not None:
            request_id, why = refusal
            await _refuse(send, 200, why, request_id=request_id)
            return

        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _too_large(self, declared: int | None) -> str:
        got = f"{declared} bytes" if declared is not None else "more"
        return f"request body: {got} is over the limit of {self.max_body_bytes} bytes"


async def _drain(receive: Receive) -> None:
    """Read and drop the rest of a refused body (up to DRAIN_BYTES), so the client, still sending,
    can read the answer instead of a reset connection. Nothing is kept."""
    dropped = 0
    while dropped < DRAIN_BYTES:
        message = await receive()
        if message["type"] != "http.request":
            return
        dropped += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _body_problem(body: bytes) -> str | None:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"request body: not UTF-8 text (byte {exc.start} is not valid UTF-8)"
    problem = json_depth_problem(text)
    return f"request body: {problem}" if problem else None


def _v03_models() -> dict[str, type[BaseModel]]:
    """0.3 method name -> the request model a2a-sdk validates it with (its own table)."""
    from a2a.compat.v0_3.jsonrpc_adapter import JSONRPC03Adapter

    return dict(JSONRPC03Adapter.METHOD_TO_MODEL)


def v03_params_refusal(body: bytes) -> tuple[str | int | None, str] | None:
    """``(id, message)`` when ``body`` is a well-formed JSON-RPC request for an A2A 0.3 method
    whose params the SDK would refuse; None for anything else (the SDK answers it)."""
    try:
        document: Any = json.loads(body)
    except ValueError:
        return None  # the SDK answers -32700
    if not isinstance(document, dict) or document.get("jsonrpc") != "2.0":
        return None
    model = _v03_models().get(document.get("method"))  # type: ignore[arg-type]
    request_id = document.get("id")
    if model is None or not _valid_id(request_id):
        return None
    try:
        # Without an id (a notification) the params are still judged: JSON-RPC answers a
        # notification whose params are invalid with -32602 too, as the A2A TCK expects.
        model.model_validate({**document, "id": 0 if request_id is None else request_id})
    except ValidationError as exc:
        errors = exc.errors()
        if not errors or any(error["loc"][:1] != ("params",) for error in errors):
            return None
        return request_id, _params_message(errors)
    return None


def _valid_id(value: object) -> bool:
    return value is None or (isinstance(value, str | int) and not isinstance(value, bool))


def _params_message(errors: list[Any]) -> str:
    """The first problem as ``params.message.messageId: Field required`` (and how many more)."""
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"


async def _refuse(
    send: Send, status: int, message: str, *, request_id: str | int | None = None
) -> None:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": {"code": INVALID_PARAMS, "message": message},
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
