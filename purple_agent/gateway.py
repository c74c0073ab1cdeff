"""The model gateway: one local base URL per CLI protocol, forwarded to the configured provider.

Every CLI harness talks to ``http://127.0.0.1:PORT`` (a random port, loopback only) in the
protocol it speaks, with a per-session token as its API key; the real key stays in this process.

=========================  ==========================================  =====================
protocol                   path                                        key header
=========================  ==========================================  =====================
OpenAI chat completions    ``POST /v1/chat/completions``               ``Authorization``
OpenAI Responses           ``POST /v1/responses``                      ``Authorization``
Anthropic Messages         ``POST /v1/messages``                       ``x-api-key``
Gemini                     ``POST /v1beta/models/M:generateContent``   ``x-goog-api-key``
                           (and ``:streamGenerateContent``)            (or ``?key=``)
=========================  ==========================================  =====================

Each call goes to the configured model through litellm (which translates between the protocols);
the model the CLI names is ignored. The upstream call is never streamed: a CLI that asks for a
stream gets the whole answer as one well-formed event stream. Every call is counted per session
(calls, input and output tokens, cost when litellm knows the price).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from purple_agent.config import PROVIDER_KEY_VARS, AgentConfig

log = logging.getLogger("purple_agent.gateway")

TOKEN_PREFIX = "sk-skillsbench-session-"
# provider hints the configuration accepts -> litellm's name for them
PROVIDER_ALIASES = {
    "google": "gemini",
    "qwen": "dashscope",
    "glm": "zai",
    "kimi": "moonshot",
    "doubao": "volcengine",
}


def upstream_model(config: AgentConfig, providers: set[str]) -> str:
    """The litellm model for ``config``; raises :class:`GatewayError` for a provider litellm
    lacks when no base URL names an OpenAI-compatible endpoint for it."""
    name = config.provider_name
    if name is None:
        return config.model  # litellm infers the provider from the name (gpt-…, claude-…)
    if config.provider:
        bare = config.model.removeprefix(f"{config.provider}/")
    else:
        bare = config.model.split("/", 1)[1]
    mapped = PROVIDER_ALIASES.get(name, name)
    if mapped in providers:
        return f"{mapped}/{bare}"
    if config.base_url:  # an OpenAI-compatible endpoint for a provider litellm does not name
        return f"openai/{bare}"
    raise GatewayError(
        400,
        f"provider {name!r} is not one the model gateway (litellm) can reach: set "
        "SKILLSBENCH_AGENT_BASE_URL to its OpenAI-compatible endpoint, or use a litellm provider "
        "(openai, anthropic, gemini, openrouter, deepseek, dashscope, zai, moonshot, …)",
    )


class _GatewayServer(uvicorn.Server):
    """uvicorn without its signal handlers: the agent's own server owns SIGINT/SIGTERM. A second
    server that captured them would take Ctrl-C for itself while it runs, and put back a stale
    handler when the two stop out of order."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@dataclass
class SessionUsage:
    """Model calls made through the gateway by one session's CLI."""

    model: str
    calls: int = 0
    failed_calls: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    last_error: str | None = None

    def add(self, input_tokens: int | None, output_tokens: int | None, cost: float | None) -> None:
        if input_tokens is not None:
            self.input_tokens = (self.input_tokens or 0) + input_tokens
        if output_tokens is not None:
            self.output_tokens = (self.output_tokens or 0) + output_tokens
        if cost is not None:
            self.cost_usd = (self.cost_usd or 0.0) + cost

    def report(self) -> dict[str, Any]:
        """The participant ``usage`` object (``ParticipantUsage`` fields; unknown stays None)."""
        return {
            "model": self.model,
            "calls": self.calls,
            "input_tokens": self.input_tokens if self.calls else 0,
            "output_tokens": self.output_tokens if self.calls else 0,
            "cost_usd": self.cost_usd,
        }


@dataclass
class _Upstream:
    model: str
    api_base: str | None
    api_key: str | None
    extra: dict[str, Any] = field(default_factory=dict)


class GatewayError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def load_litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


class Gateway:
    """Serves the four protocols on 127.0.0.1 and forwards them; start it with :meth:`start`."""

    def __init__(self, config: AgentConfig) -> None:
        self._config = config
        self.model = config.litellm_model  # resolved at start
        self._sessions: dict[str, SessionUsage] = {}
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self.port: int | None = None

    # -- sessions --------------------------------------------------------------------------
    def open_session(self) -> str:
        """A new token; calls made with it are counted in :meth:`usage`."""
        token = TOKEN_PREFIX + secrets.token_hex(16)
        self._sessions[token] = SessionUsage(model=self.model)
        return token

    def usage(self, token: str) -> SessionUsage:
        return self._sessions[token]

    def close_session(self, token: str) -> SessionUsage | None:
        return self._sessions.pop(token, None)

    @property
    def url(self) -> str:
        assert self.port is not None, "the gateway is not started"
        return f"http://127.0.0.1:{self.port}"

    # -- server ----------------------------------------------------------------------------
    async def start(self) -> str:
        """Start serving (once) on a random loopback port; returns the base URL."""
        async with self._lock:
            if self._server is not None and self.port is not None:
                return self.url
            litellm = await asyncio.to_thread(load_litellm)  # seconds of import, off the loop
            providers = {str(getattr(p, "value", p)) for p in litellm.provider_list}
            self.model = upstream_model(self._config, providers)
            if self._config.base_url:
                # litellm sends Anthropic Messages for an OpenAI model to the Responses API; an
                # OpenAI-compatible base URL (vLLM, a proxy, …) is sure to serve chat completions
                litellm.use_chat_completions_url_for_anthropic_messages = True
            config = uvicorn.Config(
                self.app(), host="127.0.0.1", port=0, log_config=None, log_level="warning"
            )
            server = _GatewayServer(config)
            self._server = server
            self._task = asyncio.create_task(server.serve())
            while not server.started:
                if self._task.done():
                    self._task.result()
                    raise RuntimeError("the model gateway stopped at start-up")
                await asyncio.sleep(0.01)
            sockets = [s for srv in server.servers for s in (srv.sockets or ())]
            self.port = int(sockets[0].getsockname()[1])
            log.info("model gateway on %s", self.url)
            return self.url

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await self._task
        self._server = self._task = None
        self.port = None

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/responses", self._responses, methods=["POST"]),
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route("/{version}/models/{call:path}", self._gemini, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )

    # -- helpers ---------------------------------------------------------------------------
    def _session(self, request: Request) -> SessionUsage:
        auth = request.headers.get("authorization", "")
        candidates = [
            auth.removeprefix("Bearer ").strip(),
            request.headers.get("x-api-key", ""),
            request.headers.get("x-goog-api-key", ""),
            request.query_params.get("key", ""),
        ]
        for token in candidates:
            if token in self._sessions:
                return self._sessions[token]
        raise GatewayError(401, "unknown session key for the SkillsBench model gateway")

    def _upstream(self) -> _Upstream:
        cfg = self._config
        key = cfg.api_key.get_secret_value() if cfg.api_key is not None else None
        if key is None:  # the provider's own variable, by our names (litellm's may differ)
            names = PROVIDER_KEY_VARS.get(cfg.provider_name or "", ())
            key = next((os.environ[n] for n in names if os.environ.get(n)), None)
        return _Upstream(model=self.model, api_base=cfg.base_url, api_key=key)

    async def _forward(
        self, request: Request, call: Callable[[Any, dict[str, Any], _Upstream], Any]
    ) -> tuple[SessionUsage, dict[str, Any], Any]:
        session = self._session(request)
        try:
            body = await request.json()
        except ValueError:
            raise GatewayError(400, "the request body is not JSON") from None
        if not isinstance(body, dict):
            raise GatewayError(400, "the request body is not a JSON object")
        litellm = load_litellm()
        session.calls += 1
        try:
            response = await call(litellm, body, self._upstream())
        except Exception as exc:
            session.failed_calls += 1
            status = int(getattr(exc, "status_code", 502) or 502)
            message = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500]
            session.last_error = message
            log.warning("model call failed: %s", message)
            raise GatewayError(status if 400 <= status < 600 else 502, message) from None
        return session, body, response

    @staticmethod
    def _error(exc: GatewayError, anthropic: bool = False) -> JSONResponse:
        if anthropic:
            payload: dict[str, Any] = {
                "type": "error",
                "error": {"type": "api_error", "message": str(exc)},
            }
        else:
            payload = {"error": {"message": str(exc), "type": "gateway_error", "code": exc.status}}
        return JSONResponse(payload, status_code=exc.status)

    def _cost(self, litellm: Any, response: Any) -> float | None:
        try:
            cost = litellm.completion_cost(completion_response=response)
        except Exception:
            return None
        return float(cost) if cost else None

    # -- OpenAI chat completions and Responses ---------------------------------------------
    async def _chat(self, request: Request) -> Response:
        return await self._openai(
            request,
            "acompletion",
            lambda body: {k: v for k, v in body.items() if k not in _CHAT_DROPPED},
            ("prompt_tokens", "completion_tokens"),
            _chat_chunks,
            priced=True,
            done_marker=True,
        )

    async def _responses(self, request: Request) -> Response:
        return await self._openai(
            request,
            "aresponses",
            lambda body: {k: v for k, v in body.items() if k in _RESPONSES_KEPT},
            ("input_tokens", "output_tokens"),
            _responses_events,
            priced=False,
            done_marker=False,
        )

    async def _openai(
        self,
        request: Request,
        function: str,
        params: Callable[[dict[str, Any]], dict[str, Any]],
        usage_keys: tuple[str, str],
        events: Callable[[dict[str, Any]], Any],
        *,
        priced: bool,
        done_marker: bool,
    ) -> Response:
        """The two OpenAI protocols differ only in litellm's function, the fields passed on, the
        usage names, whether litellm can price the answer and the stream's event shape."""

        async def call(litellm: Any, body: dict[str, Any], up: _Upstream) -> Any:
            return await getattr(litellm, function)(
                **params(body),
                model=up.model,
                api_base=up.api_base,
                api_key=up.api_key,
                stream=False,
                drop_params=True,
            )

        try:
            session, body, response = await self._forward(request, call)
        except GatewayError as exc:
            return self._error(exc)
        data = response.model_dump(exclude_none=True)
        usage = data.get("usage") or {}
        cost = self._cost(load_litellm(), response) if priced else None
        session.add(usage.get(usage_keys[0]), usage.get(usage_keys[1]), cost)
        if body.get("stream"):
            return _sse(events(data), done_marker=done_marker)
        return JSONResponse(data)

    # -- Anthropic Messages ----------------------------------------------------------------
    async def _messages(self, request: Request) -> Response:
        async def call(litellm: Any, body: dict[str, Any], up: _Upstream) -> Any:
            from litellm.anthropic_interface import messages

            params = {k: v for k, v in body.items() if k in _ANTHROPIC_KEPT}
            params.setdefault("max_tokens", 4096)
            return await messages.acreate(
                **params,
                model=up.model,
                api_base=up.api_base,
                api_key=up.api_key,
                stream=False,
            )

        try:
            session, body, response = await self._forward(request, call)
        except GatewayError as exc:
            return self._error(exc, anthropic=True)
        data = response if isinstance(response, dict) else _dump(response)
        usage = data.get("usage") or {}
        session.add(usage.get("input_tokens"), usage.get("output_tokens"), None)
        if body.get("stream"):
            return _sse(_anthropic_events(data), named=True)
        return JSONResponse(data)

    async def _count_tokens(self, request: Request) -> Response:
        """Claude Code asks this before long prompts; an estimate, not a model call."""
        try:
            self._session(request)
            body = await request.json()
        except (GatewayError, ValueError):
            return JSONResponse({"input_tokens": 0})
        return JSONResponse({"input_tokens": max(1, len(json.dumps(body)) // 4)})

    # -- Gemini ----------------------------------------------------------------------------
    async def _gemini(self, request: Request) -> Response:
        method = request.path_params["call"].rpartition(":")[2]
        if method not in ("generateContent", "streamGenerateContent"):
            return JSONResponse({"error": {"code": 404, "message": "not served"}}, 404)

        async def call(litellm: Any, body: dict[str, Any], up: _Upstream) -> Any:
            from litellm.google_genai import agenerate_content

            config = dict(body.get("generationConfig") or {})
            if body.get("systemInstruction"):
                config["system_instruction"] = body["systemInstruction"]
            if body.get("toolConfig"):
                config["tool_config"] = body["toolConfig"]
            return await agenerate_content(
                model=up.model,
                contents=body.get("contents") or [],
                config=config or None,
                tools=body.get("tools"),
                api_base=up.api_base,
                api_key=up.api_key,
            )

        try:
            session, _body, response = await self._forward(request, call)
        except GatewayError as exc:
            return JSONResponse(
                {"error": {"code": exc.status, "message": str(exc), "status": "UNAVAILABLE"}},
                status_code=exc.status,
            )
        data = response if isinstance(response, dict) else _dump(response)
        usage = data.get("usageMetadata") or data.get("usage_metadata") or {}
        session.add(
            usage.get("promptTokenCount", usage.get("prompt_token_count")),
            usage.get("candidatesTokenCount", usage.get("candidates_token_count")),
            None,
        )
        if method == "streamGenerateContent":
            return _sse([data])
        return JSONResponse(data)

    async def _models(self, request: Request) -> Response:
        name = self.model
        return JSONResponse(
            {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "gateway"}]}
        )


_CHAT_DROPPED = {"model", "stream", "stream_options", "api_base", "api_key", "base_url"}
_RESPONSES_KEPT = {
    "input",
    "instructions",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "temperature",
    "top_p",
    "max_output_tokens",
    "reasoning",
    "text",
    "include",
    "store",
    "truncation",
}
_ANTHROPIC_KEPT = {
    "messages",
    "max_tokens",
    "system",
    "tools",
    "tool_choice",
    "temperature",
    "top_p",
    "top_k",
    "stop_sequences",
    "thinking",
    "metadata",
}


def _dump(response: Any) -> dict[str, Any]:
    if hasattr(response, "model_dump"):
        return dict(response.model_dump(exclude_none=True))
    return dict(response)


def _sse(events: Iterable[Any], *, named: bool = False, done_marker: bool = False) -> Response:
    """One event stream from whole answers (``named``: ``event:`` lines from each ``type``)."""

    async def body() -> AsyncIterator[bytes]:
        for event in events:
            head = f"event: {event['type']}\n" if named else ""
            yield f"{head}data: {json.dumps(event)}\n\n".encode()
        if done_marker:
            yield b"data: [DONE]\n\n"

    return StreamingResponse(body(), media_type="text/event-stream")


def _chat_chunks(data: dict[str, Any]) -> list[dict[str, Any]]:
    base = {
        "id": data.get("id") or f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion.chunk",
        "created": data.get("created") or int(time.time()),
        "model": data.get("model", ""),
    }
    chunks = []
    for choice in data.get("choices", []):
        message = choice.get("message") or {}
        delta: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
        if message.get("tool_calls"):
            delta["tool_calls"] = [
                {**call, "index": i} for i, call in enumerate(message["tool_calls"])
            ]
        index = choice.get("index", 0)
        chunks.append({**base, "choices": [{"index": index, "delta": delta}]})
        chunks.append(
            {
                **base,
                "choices": [
                    {"index": index, "delta": {}, "finish_reason": choice.get("finish_reason")}
                ],
            }
        )
    if data.get("usage"):
        chunks.append({**base, "choices": [], "usage": data["usage"]})
    return chunks


def _responses_events(data: dict[str, Any]) -> list[dict[str, Any]]:
    data = {**data, "status": data.get("status") or "completed"}
    started = {**data, "status": "in_progress", "output": []}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": started, "sequence_number": 0},
        {"type": "response.in_progress", "response": started, "sequence_number": 1},
    ]
    for i, item in enumerate(data.get("output") or []):
        events.append({"type": "response.output_item.added", "output_index": i, "item": item})
        events.append({"type": "response.output_item.done", "output_index": i, "item": item})
    events.append({"type": "response.completed", "response": data})
    for n, event in enumerate(events):
        event["sequence_number"] = n
    return events


def _anthropic_events(data: dict[str, Any]) -> list[dict[str, Any]]:
    usage = data.get("usage") or {}
    start = {**data, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {"input_tokens": usage.get("input_tokens", 0), "output_tokens": 0}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for i, block in enumerate(data.get("content") or []):
        kind = block.get("type")
        if kind == "text":
            events.append(
                {"type": "content_block_start", "index": i, "content_block": {**block, "text": ""}}
            )
            delta: dict[str, Any] = {"type": "text_delta", "text": block.get("text", "")}
        elif kind == "tool_use":
            events.append(
                {"type": "content_block_start", "index": i, "content_block": {**block, "input": {}}}
            )
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block.get("input", {}))}
        elif kind == "thinking":
            events.append(
                {
                    "type": "content_block_start",
                    "index": i,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                }
            )
            events.append(
                {
                    "type": "content_block_delta",
                    "index": i,
                    "delta": {"type": "thinking_delta", "thinking": block.get("thinking", "")},
                }
            )
            delta = {"type": "signature_delta", "signature": block.get("signature", "")}
        else:
            events.append({"type": "content_block_start", "index": i, "content_block": block})
            events.append({"type": "content_block_stop", "index": i})
            continue
        events.append({"type": "content_block_delta", "index": i, "delta": delta})
        events.append({"type": "content_block_stop", "index": i})
    events.append(
        {
            "type": "message_delta",
            "delta": {
                "stop_reason": data.get("stop_reason") or "end_turn",
                "stop_sequence": data.get("stop_sequence"),
            },
            "usage": {"output_tokens": usage.get("output_tokens", 0)},
        }
    )
    events.append({"type": "message_stop"})
    return events
