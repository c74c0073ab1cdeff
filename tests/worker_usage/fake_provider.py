"""A fake model provider on loopback: OpenAI chat completions (plain and streamed), OpenAI
responses and Anthropic messages (plain and streamed), answering with scripted text and usage.

It stands at the edge of the world, where a real provider would be: the proxy under test reaches
it through litellm with ``api_base`` pointing here. Every request it gets is kept in ``requests``.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


@dataclass
class Script:
    """What the fake answers: ``replies`` in turn (the last one repeats), with these usages."""

    replies: list[str] = field(default_factory=lambda: ["done"])
    prompt_tokens: int = 100
    completion_tokens: int = 20
    cached_tokens: int = 0
    answer_model: str | None = None  # the model name the provider reports (default: as asked)


class FakeProvider:
    def __init__(self, script: Script | None = None) -> None:
        self.script = script or Script()
        self.requests: list[dict[str, Any]] = []
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/v1/responses", self.responses, methods=["POST"]),
                Route("/v1/messages", self.messages, methods=["POST"]),
            ]
        )

    def _next_reply(self) -> str:
        n = len(self.requests) - 1
        replies = self.script.replies
        return replies[min(n, len(replies) - 1)]

    async def _take(self, request: Request) -> dict[str, Any]:
        body = await request.json()
        self.requests.append(
            {"path": request.url.path, "headers": dict(request.headers), "body": body}
        )
        return dict(body)

    def _model(self, body: dict[str, Any]) -> str:
        return self.script.answer_model or str(body.get("model"))

    async def chat(self, request: Request) -> Response:
        body = await self._take(request)
        s, text, model = self.script, self._next_reply(), self._model(body)
        usage = {
            "prompt_tokens": s.prompt_tokens,
            "completion_tokens": s.completion_tokens,
            "total_tokens": s.prompt_tokens + s.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": s.cached_tokens},
        }
        base = {"id": "chatcmpl-fake", "created": int(time.time()), "model": model}
        if not body.get("stream"):
            return JSONResponse(
                {
                    **base,
                    "object": "chat.completion",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": usage,
                }
            )
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        async def events() -> AsyncIterator[bytes]:
            chunk = {**base, "object": "chat.completion.chunk"}
            half = len(text) // 2
            for i, piece in enumerate((text[:half], text[half:])):
                delta: dict[str, Any] = {"content": piece}
                if i == 0:
                    delta["role"] = "assistant"
                choice = {"index": 0, "delta": delta, "finish_reason": None}
                yield _sse({**chunk, "choices": [choice]})
            yield _sse({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            if include_usage:
                yield _sse({**chunk, "choices": [], "usage": usage})
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    async def responses(self, request: Request) -> Response:
        body = await self._take(request)
        s, text, model = self.script, self._next_reply(), self._model(body)
        return JSONResponse(
            {
                "id": "resp_fake",
                "object": "response",
                "created_at": int(time.time()),
                "status": "completed",
                "model": model,
                "output": [
                    {
                        "type": "message",
                        "id": "msg_fake",
                        "status": "completed",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text, "annotations": []}],
                    }
                ],
                "usage": {
                    "input_tokens": s.prompt_tokens,
                    "output_tokens": s.completion_tokens,
                    "total_tokens": s.prompt_tokens + s.completion_tokens,
                    "input_tokens_details": {"cached_tokens": s.cached_tokens},
                    "output_tokens_details": {"reasoning_tokens": 0},
                },
            }
        )

    async def messages(self, request: Request) -> Response:
        body = await self._take(request)
        s, text, model = self.script, self._next_reply(), self._model(body)
        # Anthropic counts cache reads apart from input_tokens.
        usage = {
            "input_tokens": s.prompt_tokens - s.cached_tokens,
            "output_tokens": s.completion_tokens,
            "cache_read_input_tokens": s.cached_tokens,
            "cache_creation_input_tokens": 0,
        }
        message = {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            return JSONResponse(message)

        async def events() -> AsyncIterator[bytes]:
            start = {**message, "content": [], "stop_reason": None}
            start["usage"] = {**usage, "output_tokens": 1}
            yield _sse({"type": "message_start", "message": start}, "message_start")
            yield _sse(
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
                "content_block_start",
            )
            yield _sse(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": text},
                },
                "content_block_delta",
            )
            yield _sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
            yield _sse(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": s.completion_tokens},
                },
                "message_delta",
            )
            yield _sse({"type": "message_stop"}, "message_stop")

        return StreamingResponse(events(), media_type="text/event-stream")


def _sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()
