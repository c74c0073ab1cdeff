"""The green agent's HTTP app: JSON-RPC at ``/`` (A2A 1.0 and 0.3) and the card.

:func:`build_app` is the full a2a-sdk app. :class:`FastStartApp` (what ``green`` serves) answers
the card at once and builds the full app in a thread after start, because importing a2a-sdk takes
about a second; JSON-RPC requests that arrive meanwhile wait for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from green_agent.card import CARD_PATH, card_document
from green_agent.settings import GreenSettings, load_settings
from serving.listen import listening_socket
from serving.urls import advertised_url

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.types import Receive, Scope, Send

    from green_agent.adapters.base import WorkerAdapter

log = logging.getLogger(__name__)

BUILD_DELAY_SEC = 0.1


def build_app(
    card_url: str,
    settings: GreenSettings | None = None,
    adapter: WorkerAdapter | None = None,
) -> Starlette:
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from starlette.applications import Starlette
    from starlette.middleware import Middleware

    from green_agent.adapters import adapter_from_settings
    from green_agent.card import agent_card
    from green_agent.executor import AssessmentExecutor
    from green_agent.request_guard import RequestGuard
    from green_agent.task_store import BoundedTaskStore

    settings = settings or load_settings()
    worker = adapter or adapter_from_settings(settings)
    card = agent_card(card_url)
    executor = AssessmentExecutor(settings, worker)
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=BoundedTaskStore(), agent_card=card
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        log.info("green agent ready at %s (worker: %s)", card_url, worker.kind)
        try:
            yield
        finally:
            await worker.aclose()

    app = Starlette(
        routes=[
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True),
        ],
        lifespan=lifespan,
        middleware=[Middleware(RequestGuard)],
    )
    app.state.executor = executor
    app.state.task_store = handler.task_store
    return app


class FastStartApp:
    """ASGI app: the card immediately, everything else once the full app is built."""

    def __init__(self, card_url: str, load: Callable[[], Starlette]) -> None:
        self._card = json.dumps(card_document(card_url)).encode()
        self._load = load
        self._app: Starlette | None = None
        self._ready: asyncio.Event | None = None
        self._stack = contextlib.AsyncExitStack()

    async def _build(self) -> None:
        assert self._ready is not None
        try:
            # Let uvicorn bind and answer the first card request before the import takes the GIL.
            await asyncio.sleep(BUILD_DELAY_SEC)
            app = await asyncio.to_thread(self._load)
            await self._stack.enter_async_context(app.router.lifespan_context(app))
            self._app = app
        except Exception:
            log.exception("green agent failed to start")
        finally:
            self._ready.set()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        builder: asyncio.Task[None] | None = None
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._ready = asyncio.Event()
                builder = asyncio.create_task(self._build())
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if builder is not None:
                    await builder
                await self._stack.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] == "http" and scope["path"] == CARD_PATH and scope["method"] == "GET":
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": self._card})
            return
        if self._ready is not None:
            await self._ready.wait()
        if self._app is None:
            body = b'{"error": "green agent failed to start"}'
            await send(
                {
                    "type": "http.response.start",
                    "status": 503,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self._app(scope, receive, send)


def serve(host: str, port: int, card_url: str | None = None) -> None:
    import uvicorn

    settings = load_settings()
    url = advertised_url(host, port, card_url)  # a bad --card-url is refused before the bind
    sock = listening_socket(host, port)  # before the app builds: "ready" comes after the bind
    app: Any = FastStartApp(url, lambda: build_app(url, settings))
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="info"))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
