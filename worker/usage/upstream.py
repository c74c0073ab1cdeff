"""The proxy's calls to the provider, one function per API protocol, through litellm.

Each takes the agent's request (a :class:`CallRecord`), calls the trial's model route, finishes
the record with the provider's usage, and answers in the protocol the agent spoke.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.responses import JSONResponse, Response, StreamingResponse

from worker.usage.call_record import CallRecord
from worker.usage.pricing import load_litellm
from worker.usage.records import TokenUsage
from worker.usage.sse_streams import anthropic_events, responses_events


async def chat_completions(call: CallRecord) -> Response:
    litellm = load_litellm()
    kwargs = call.litellm_kwargs()
    stream = bool(kwargs.get("stream"))
    if stream:
        kwargs["stream_options"] = {
            **(kwargs.get("stream_options") or {}),
            "include_usage": True,
        }
    result = await litellm.acompletion(**kwargs)
    if not stream:
        answer = result.model_dump(mode="json", exclude_none=True)
        call.finish(200, answer, TokenUsage.from_openai(answer.get("usage")))
        return JSONResponse(answer)
    wants_usage = bool((call.body.get("stream_options") or {}).get("include_usage"))

    async def events() -> AsyncIterator[bytes]:
        usage: TokenUsage | None = None
        finish: str | None = None
        model: str | None = None
        text: list[str] = []
        try:
            async for chunk in result:
                data = chunk.model_dump(mode="json", exclude_none=True)
                model = data.get("model") or model
                for choice in data.get("choices") or []:
                    finish = choice.get("finish_reason") or finish
                    piece = (choice.get("delta") or {}).get("content")
                    if isinstance(piece, str):
                        text.append(piece)
                if data.get("usage"):
                    usage = TokenUsage.from_openai(data["usage"])
                    if not wants_usage:
                        continue
                yield f"data: {json.dumps(data)}\n\n".encode()
            yield b"data: [DONE]\n\n"
        finally:
            summary = {
                "model": model,
                "choices": [{"finish_reason": finish, "message": {"content": "".join(text)}}],
                "usage": usage.as_openai() if usage else None,
                "stream": True,
            }
            call.finish(200, summary, usage)

    return StreamingResponse(events(), media_type="text/event-stream")


async def responses(call: CallRecord) -> Response:
    litellm = load_litellm()
    kwargs = call.litellm_kwargs()
    stream = bool(kwargs.pop("stream", False))
    result = await litellm.aresponses(**kwargs)
    answer = result.model_dump(mode="json", exclude_none=True)
    usage = TokenUsage.from_openai(answer.get("usage"))
    call.finish(200, answer, usage)
    if not stream:
        return JSONResponse(answer)
    return StreamingResponse(responses_events(answer), media_type="text/event-stream")


async def anthropic_messages(call: CallRecord) -> Response:
    # litellm's native Anthropic stream iterator imports its proxy extra (fastapi), which is
    # no dependency of ours: the upstream call is made whole and re-sent as Anthropic SSE.
    litellm = load_litellm()
    kwargs = call.litellm_kwargs()
    stream = bool(kwargs.pop("stream", False))
    result = await litellm.anthropic.messages.acreate(**kwargs)
    answer = result if isinstance(result, dict) else dict(result)
    answer = json.loads(json.dumps(answer, default=str))
    usage = TokenUsage.from_anthropic(answer.get("usage"))
    call.finish(200, answer, usage)
    if not stream:
        return JSONResponse(answer)
    return StreamingResponse(anthropic_events(answer), media_type="text/event-stream")


# call type (the record's ``call_type``) -> the function that forwards it
FORWARDERS: dict[str, Callable[[CallRecord], Awaitable[Response]]] = {
    "openai_chat_completions": chat_completions,
    "openai_responses": responses,
    "anthropic_messages": anthropic_messages,
}


def error_response(status: int, message: str, kind: str, anthropic: bool) -> Response:
    if anthropic:
        body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        body = {"error": {"message": message, "type": kind, "code": kind}}
    return JSONResponse(body, status_code=status)
