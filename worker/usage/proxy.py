"""The worker's model proxy: OpenAI ``/v1/chat/completions`` (streamed or not), OpenAI
``/v1/responses`` and Anthropic ``/v1/messages``, forwarded through litellm (as a library) to the
trial's model with the real provider key, which never leaves the worker.

Each trial gets a session with its own random key; the key names the trial, its model route, its
caps and the file its calls are recorded in. One proxy (one port) serves every trial of a worker.
Numbers are read here, at the model boundary, from the provider's responses.

This module is the listener (loopback, extra hosts, a unix socket) and the routing of a request to
its session; the rest lives beside it: :mod:`worker.usage.session` (a trial's key, caps, totals),
:mod:`worker.usage.upstream` (one forwarder per API protocol), :mod:`worker.usage.call_record`
(the record of each call) and :mod:`worker.usage.sse_streams` (answers re-sent as event streams).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, Literal

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from worker.trial_record.paths import LLM_TRAJECTORY_FILE
from worker.usage.call_record import CallRecord
from worker.usage.pricing import load_litellm
from worker.usage.records import redact
from worker.usage.session import ModelRoute, ProxySession, UsageCaps
from worker.usage.upstream import FORWARDERS, error_response

log = logging.getLogger(__name__)

ApiProtocol = Literal["openai-completions", "openai-responses", "anthropic-messages"]
UNIX_SOCKET_PARENT: Final = "/var/tmp"  # a host folder; the sandbox is lent its socket folder only


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
        """Also listen on a unix socket in a folder of its own, which the trial lends to a
        sandbox that reaches host sockets (``Sandbox.lend``); returns its path."""
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
        caps: UsageCaps,
        trial_dir: Path,
        *,
        keep_calls: bool = True,
    ) -> ProxySession:
        """A new trial key; ``keep_calls=False`` (``--usage-tracking off``) writes no call log."""
        session = ProxySession(trial_id, route, caps, trial_dir / LLM_TRAJECTORY_FILE)
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
            return error_response(
                401, "invalid API key for the model proxy", "authentication_error", anthropic
            )
        try:
            body = await request.json()
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
        except ValueError as exc:
            return error_response(
                400, f"invalid JSON body: {exc}", "invalid_request_error", anthropic
            )
        call = CallRecord(session, request, body, call_type)
        refusal = session.check_limits()
        if refusal is not None:
            session.n_refused += 1
            session.limit_message = refusal
            session.limit_reached.set()
            message = f"skillsbench model proxy refused the call: {refusal}; end your turn"
            call.finish(400, {"error": {"message": message}}, None, refused=True)
            return error_response(400, message, "budget_exceeded", anthropic)
        try:
            return await FORWARDERS[call_type](call)
        except Exception as exc:  # a provider error: tell the agent, keep the record
            status = int(getattr(exc, "status_code", 0) or 502)
            # Provider errors can echo the request, key included: redact before it goes anywhere
            # (the agent in the sandbox, the call record, the trace).
            message = str(redact(f"{type(exc).__name__}: {exc}", call.session.secrets()))
            call.finish(status, {"error": {"message": message}}, None, error=message)
            return error_response(status, message, "api_error", anthropic)


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
