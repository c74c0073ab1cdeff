"""Whole provider answers re-sent as the event streams SDKs expect (Anthropic, OpenAI responses).

The upstream call is made whole (see :mod:`worker.usage.upstream`); these re-encode it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any


def sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


async def anthropic_events(message: dict[str, Any]) -> AsyncIterator[bytes]:
    """A whole Anthropic message as the event stream an SDK expects."""
    usage = dict(message.get("usage") or {})
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {**usage, "output_tokens": 0}
    yield sse({"type": "message_start", "message": start}, "message_start")
    for index, block in enumerate(message.get("content") or []):
        kind = block.get("type")
        opening: dict[str, Any]
        if kind == "text":
            opening = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": block.get("text", "")}
        elif kind == "tool_use":
            opening = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block.get("input", {}))}
        elif kind == "thinking":
            opening = {"type": "thinking", "thinking": ""}
            delta = {"type": "thinking_delta", "thinking": block.get("thinking", "")}
        else:
            opening, delta = block, {}
        yield sse(
            {"type": "content_block_start", "index": index, "content_block": opening},
            "content_block_start",
        )
        if delta:
            yield sse(
                {"type": "content_block_delta", "index": index, "delta": delta},
                "content_block_delta",
            )
        yield sse({"type": "content_block_stop", "index": index}, "content_block_stop")
    yield sse(
        {
            "type": "message_delta",
            "delta": {
                "stop_reason": message.get("stop_reason"),
                "stop_sequence": message.get("stop_sequence"),
            },
            "usage": {"output_tokens": usage.get("output_tokens", 0)},
        },
        "message_delta",
    )
    yield sse({"type": "message_stop"}, "message_stop")


async def responses_events(response: dict[str, Any]) -> AsyncIterator[bytes]:
    """A whole OpenAI response as its event stream (created, text deltas, completed)."""
    seq = 0

    def event(kind: str, **fields: Any) -> bytes:
        nonlocal seq
        seq += 1
        return sse({"type": kind, "sequence_number": seq, **fields}, kind)

    yield event("response.created", response={**response, "status": "in_progress", "output": []})
    for index, item in enumerate(response.get("output") or []):
        yield event("response.output_item.added", output_index=index, item=item)
        for part_index, part in enumerate(item.get("content") or []):
            if part.get("type") == "output_text":
                yield event(
                    "response.output_text.delta",
                    item_id=item.get("id"),
                    output_index=index,
                    content_index=part_index,
                    delta=part.get("text", ""),
                )
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=response)
