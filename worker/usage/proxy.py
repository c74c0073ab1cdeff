"""The worker's model proxy: OpenAI ``/v1/chat/completions`` (streamed or not), OpenAI
``/v1/responses`` and Anthropic ``/v1/messages``, forwarded through litellm (as a library) to the
trial's model with the real provider key, which never leaves the worker.

Each trial gets a session with its own random key; the key names the trial, its model route, its
caps and the file its calls are recorded in. One proxy (one port) serves every trial of a worker.
Numbers are read here, at the model boundary, from the provider's responses.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import os
import secrets
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from worker.usage.pricing import load_litellm, price_usd
from worker.usage.records import (
    LLM_TRAJECTORY_FILE,
    TokenUsage,
    UsageTotals,
    redact,
    redact_headers,
)

log = logging.getLogger(__name__)

ApiProtocol = Literal["openai-completions", "openai-responses", "anthropic-messages"]
KEY_PREFIX: Final = "sk-skillsbench-"
PURPOSE_HEADER: Final = "x-skillsbench-call-purpose"
UNIX_SOCKET_PARENT: Final = "/var/tmp"  # shown read-only inside the local sandbox
# Keys litellm reads from the worker's environment; their values are masked in every record.
_PROVIDER_KEY_SUFFIXES: Final = ("_API_KEY", "_AUTH_TOKEN")


@dataclass(frozen=True)
class ModelRoute:
    """Where a trial's calls go: a litellm model name, and optionally its endpoint and key
    (otherwise litellm's own environment variables, e.g. OPENAI_API_KEY, apply)."""

    model: str
    api_base: str | None = None
    api_key: str | None = None

    @classmethod
    def from_env(cls, model: str) -> ModelRoute:
        return cls(
            model,
            api_base=os.environ.get("SKILLSBENCH_MODEL_API_BASE") or None,
            api_key=os.environ.get("SKILLSBENCH_MODEL_API_KEY") or None,
        )


@dataclass(frozen=True)
class Limits:
    max_tokens: int | None = None
    max_cost_usd: float | None = None


@dataclass
class CallSpan:
    """One model call, for the trial's OTLP spans."""

    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    error: str | None = None


@dataclass
class ProxySession:
    """One trial's use of the proxy."""

    trial_id: str
    route: ModelRoute
    limits: Limits
    log_path: Path
    key: str = field(default_factory=lambda: KEY_PREFIX + secrets.token_urlsafe(24))
    totals: UsageTotals = field(default_factory=UsageTotals)
    provider_wait_sec: float = 0.0
    spans: list[CallSpan] = field(default_factory=list)
    limit_message: str | None = None
    limit_reached: asyncio.Event = field(default_factory=asyncio.Event)
    n_refused: int = 0
    keep_calls: bool = True

    def check_limits(self) -> str | None:
        """Why the next call must be refused, or None."""
        used = self.totals.usage.total
        cap = self.limits.max_tokens
        if cap is not None and used >= cap:
            return f"the trial's token budget is used up (--max-tokens {cap}: {used} tokens used)"
        spend = self.limits.max_cost_usd
        if spend is not None:
            unpriced = price_usd(self.route.model, prompt_tokens=1, completion_tokens=1) is None
            if unpriced or self.totals.n_unpriced:
                return (
                    f"--max-cost-usd {spend} cannot be enforced: model {self.route.model!r} has "
                    "no known price (cap it with --max-tokens instead)"
                )
            cost = self.totals.cost_usd or 0.0
            if cost >= spend:
                return f"the trial's cost budget is used up (--max-cost-usd {spend}: ${cost:.6f} spent)"
        return None

    def secrets(self) -> tuple[str, ...]:
        found = [self.key, self.route.api_key or ""]
        found += [
            v for k, v in os.environ.items() if k.endswith(_PROVIDER_KEY_SUFFIXES) and len(v) >= 8
        ]
        return tuple(s for s in found if s)


class _Server(uvicorn.Server):
    """uvicorn without its signal handlers: the worker owns SIGINT/SIGTERM, not the proxy."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class ModelProxy:
    """A starlette app plus the uvicorn server that serves it on loopback."""

    def __init__(self) -> None:
        self.sessions: dict[str, ProxySession] = {}
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/responses", self._responses, methods=["POST"]),
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/healthz", self._health, methods=["GET"]),
            ]
        )
        self._listeners: dict[str, tuple[uvicorn.Server, asyncio.Task[None], int]] = {}
        self.host = "127.0.0.1"
        self.port = 0
        self.unix_path: str | None = None

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Listen on ``host`` (the first address is the default one)."""
        if not self._listeners:
            await asyncio.to_thread(load_litellm)  # seconds of import, off the event loop
            self.host = host
        await self.listen(host, port)
        self.port = self._listeners[self.host][2]

    async def listen(self, host: str, port: int = 0) -> None:
        """Also listen on ``host`` (e.g. the docker bridge gateway)."""
        if host in self._listeners:
            return
        server, serving = await self._serve(
            uvicorn.Config(
                self.app,
                host=host,
                port=port,
                log_level="warning",
                lifespan="off",
                access_log=False,
            ),
            f"{host}:{port}",
        )
        bound = int(server.servers[0].sockets[0].getsockname()[1])
        self._listeners[host] = (server, serving, bound)

    async def listen_unix(self) -> str:
        """Also listen on a unix socket in a host folder sandboxes see (read-only) through
        their view of the host root; returns its path."""
        if self.unix_path is not None:
            return self.unix_path
        folder = tempfile.mkdtemp(prefix="skillsbench-model-proxy-", dir=UNIX_SOCKET_PARENT)
        os.chmod(folder, 0o755)
        path = os.path.join(folder, "proxy.sock")
        server, serving = await self._serve(
            uvicorn.Config(
                self.app, uds=path, log_level="warning", lifespan="off", access_log=False
            ),
            path,
        )
        self._listeners[f"unix:{path}"] = (server, serving, 0)
        self.unix_path = path
        return path

    @staticmethod
    async def _serve(
        config: uvicorn.Config, where: str
    ) -> tuple[uvicorn.Server, asyncio.Task[None]]:
        """Start one uvicorn listener and wait until it accepts connections."""
        server = _Server(config)
        serving = asyncio.create_task(server.serve())
        while not server.started:
            if serving.done():
                with contextlib.suppress(BaseException):
                    serving.result()
                raise OSError(f"model proxy could not listen on {where}")
            await asyncio.sleep(0.01)
        return server, serving

    @property
    def running(self) -> bool:
        return any(not task.done() for _, task, _ in self._listeners.values())

    async def close(self) -> None:
        for server, serving, _ in self._listeners.values():
            server.should_exit = True
            with contextlib.suppress(Exception):
                await asyncio.wait_for(serving, 10)
        self._listeners.clear()
        _remove_socket(self.unix_path)
        self.unix_path = None

    def base_url(self, host: str | None = None) -> str:
        host = host or self.host
        return f"http://{host}:{self._listeners[host][2]}"

    def open_session(
        self,
        trial_id: str,
        route: ModelRoute,
        limits: Limits,
        trial_dir: Path,
        *,
        keep_calls: bool = True,
    ) -> ProxySession:
        """A new trial key; ``keep_calls=False`` (``--usage-tracking off``) writes no call log."""
        session = ProxySession(trial_id, route, limits, trial_dir / LLM_TRAJECTORY_FILE)
        session.keep_calls = keep_calls
        if keep_calls:
            session.log_path.parent.mkdir(parents=True, exist_ok=True)
            session.log_path.touch()
        self.sessions[session.key] = session
        return session

    def close_session(self, session: ProxySession) -> None:
        self.sessions.pop(session.key, None)

    # -- requests --------------------------------------------------------------------------

    async def _health(self, request: Request) -> Response:
        return JSONResponse({"ok": True, "sessions": len(self.sessions)})

    def _session(self, request: Request) -> ProxySession | None:
        auth = request.headers.get("authorization", "")
        key = auth[7:].strip() if auth.lower().startswith("bearer ") else ""
        key = key or request.headers.get("x-api-key", "").strip()
        return self.sessions.get(key)

    async def _chat(self, request: Request) -> Response:
        return await self._handle(request, "openai_chat_completions")

    async def _responses(self, request: Request) -> Response:
        return await self._handle(request, "openai_responses")

    async def _messages(self, request: Request) -> Response:
        return await self._handle(request, "anthropic_messages")

    async def _handle(self, request: Request, call_type: str) -> Response:
        anthropic = call_type == "anthropic_messages"
        session = self._session(request)
        if session is None:
            return _error(
                401, "invalid API key for the model proxy", "authentication_error", anthropic
            )
        try:
            body = await request.json()
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
        except ValueError as exc:
            return _error(400, f"invalid JSON body: {exc}", "invalid_request_error", anthropic)
        call = _Call(session, request, body, call_type)
        refusal = session.check_limits()
        if refusal is not None:
            session.n_refused += 1
            session.limit_message = refusal
            session.limit_reached.set()
            message = f"skillsbench model proxy refused the call: {refusal}; end your turn"
            call.finish(400, {"error": {"message": message}}, None, refused=True)
            return _error(400, message, "budget_exceeded", anthropic)
        try:
            if call_type == "openai_chat_completions":
                return await self._forward_chat(call)
            if call_type == "openai_responses":
                return await self._forward_responses(call)
            return await self._forward_messages(call)
        except Exception as exc:  # a provider error: tell the agent, keep the record
            status = int(getattr(exc, "status_code", 0) or 502)
            # Provider errors can echo the request, key included: redact before it goes anywhere
            # (the agent in the sandbox, the call record, the trace).
            message = str(redact(f"{type(exc).__name__}: {exc}", call.session.secrets()))
            call.finish(status, {"error": {"message": message}}, None, error=message)
            return _error(status, message, "api_error", anthropic)

    # -- forwarding ------------------------------------------------------------------------

    async def _forward_chat(self, call: _Call) -> Response:
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

    async def _forward_responses(self, call: _Call) -> Response:
        litellm = load_litellm()
        kwargs = call.litellm_kwargs()
        stream = bool(kwargs.pop("stream", False))
        result = await litellm.aresponses(**kwargs)
        answer = result.model_dump(mode="json", exclude_none=True)
        usage = TokenUsage.from_openai(answer.get("usage"))
        call.finish(200, answer, usage)
        if not stream:
            return JSONResponse(answer)
        return StreamingResponse(_responses_events(answer), media_type="text/event-stream")

    async def _forward_messages(self, call: _Call) -> Response:
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
        return StreamingResponse(_anthropic_events(answer), media_type="text/event-stream")


class _Call:
    """One request through the proxy: timing, the line it leaves in llm_trajectory.jsonl."""

    def __init__(
        self, session: ProxySession, request: Request, body: dict[str, Any], call_type: str
    ) -> None:
        self.session = session
        self.body = body
        self.call_type = call_type
        self.path = request.url.path
        self.method = request.method
        self.headers = dict(request.headers)
        self.purpose = (
            self.headers.get(PURPOSE_HEADER)
            or str((body.get("metadata") or {}).get("call_purpose") or "")
            or "agent"
        )
        self.started_at = time.time()
        self.start_ns = time.time_ns()
        self.t0 = time.monotonic()
        self.done = False

    def litellm_kwargs(self) -> dict[str, Any]:
        route = self.session.route
        kwargs = {k: v for k, v in self.body.items() if k not in ("model", "metadata", "user")}
        kwargs["model"] = route.model
        if route.api_base:
            kwargs["api_base"] = route.api_base
        if route.api_key:
            kwargs["api_key"] = route.api_key
        return kwargs

    def finish(
        self,
        status: int,
        answer: dict[str, Any],
        usage: TokenUsage | None,
        *,
        refused: bool = False,
        error: str | None = None,
    ) -> None:
        if self.done:
            return
        self.done = True
        session = self.session
        duration = time.monotonic() - self.t0
        if not refused:
            session.provider_wait_sec += duration
        cost = None
        if usage is not None:
            cost = price_usd(
                session.route.model,
                prompt_tokens=usage.input,
                completion_tokens=usage.output,
                cache_read_tokens=usage.cache_read,
                cache_creation_tokens=usage.cache_creation,
            )
        if not refused:
            session.totals.add(usage, cost)
        secrets_ = session.secrets()
        provider_model = answer.get("model")
        metadata = {
            "request_model": self.body.get("model"),
            "provider_model": provider_model,
            "route_model": session.route.model,
            "call_type": self.call_type,
            "call_purpose": self.purpose,
            "usage_source": "provider_response" if usage is not None else None,
            "cost_usd": cost,
            "price_source": "litellm" if cost is not None else None,
            "refused": refused,
            "error": error,
        }
        line = {
            "request": {
                "timestamp": self.started_at,
                "method": self.method,
                "path": self.path,
                "headers": redact_headers(self.headers),
                "body": redact(self.body, secrets_),
            },
            "response": {
                "timestamp": time.time(),
                "status_code": status,
                "body": redact(answer, secrets_),
            },
            "duration_ms": round(duration * 1000, 1),
            "usage": usage.as_openai() if usage else None,
            "metadata": redact(metadata, secrets_),
        }
        if session.keep_calls:
            with session.log_path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
        session.spans.append(
            CallSpan(
                name=f"model call {self.call_type}",
                start_ns=self.start_ns,
                end_ns=time.time_ns(),
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": str(self.body.get("model")),
                    "gen_ai.response.model": str(provider_model or ""),
                    "gen_ai.usage.input_tokens": usage.input if usage else 0,
                    "gen_ai.usage.output_tokens": usage.output if usage else 0,
                    "skillsbench.call_purpose": self.purpose,
                    "http.response.status_code": status,
                    "skillsbench.refused": refused,
                },
                error=error or (session.limit_message if refused else None),
            )
        )


def _error(status: int, message: str, kind: str, anthropic: bool) -> Response:
    if anthropic:
        body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        body = {"error": {"message": message, "type": kind, "code": kind}}
    return JSONResponse(body, status_code=status)


def _sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


async def _anthropic_events(message: dict[str, Any]) -> AsyncIterator[bytes]:
    """A whole Anthropic message as the event stream an SDK expects."""
    usage = dict(message.get("usage") or {})
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {**usage, "output_tokens": 0}
    yield _sse({"type": "message_start", "message": start}, "message_start")
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
        yield _sse(
            {"type": "content_block_start", "index": index, "content_block": opening},
            "content_block_start",
        )
        if delta:
            yield _sse(
                {"type": "content_block_delta", "index": index, "delta": delta},
                "content_block_delta",
            )
        yield _sse({"type": "content_block_stop", "index": index}, "content_block_stop")
    yield _sse(
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
    yield _sse({"type": "message_stop"}, "message_stop")


async def _responses_events(response: dict[str, Any]) -> AsyncIterator[bytes]:
    """A whole OpenAI response as its event stream (created, text deltas, completed)."""
    seq = 0

    def event(kind: str, **fields: Any) -> bytes:
        nonlocal seq
        seq += 1
        return _sse({"type": kind, "sequence_number": seq, **fields}, kind)

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


_SHARED: dict[str, Any] = {}


async def shared_proxy() -> ModelProxy:
    """The worker's one proxy on the running event loop, started on first use."""
    loop = asyncio.get_running_loop()
    if _SHARED.get("loop") is not loop:
        old = _SHARED.get("proxy")
        if old is not None:  # its loop is gone (a new asyncio.run): only its socket file is left
            _remove_socket(old.unix_path)
        _SHARED.clear()
        _SHARED.update(loop=loop, lock=asyncio.Lock(), proxy=None)
    async with _SHARED["lock"]:
        proxy: ModelProxy | None = _SHARED["proxy"]
        if proxy is None or not proxy.running:
            proxy = ModelProxy()
            await proxy.start()
            _SHARED["proxy"] = proxy
        return proxy


def _remove_socket(path: str | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            os.unlink(path)
            os.rmdir(os.path.dirname(path))


@atexit.register
def _cleanup() -> None:
    proxy = _SHARED.get("proxy")
    if proxy is not None:
        _remove_socket(proxy.unix_path)
