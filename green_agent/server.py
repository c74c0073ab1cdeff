"""The green agent's HTTP app: JSON-RPC at ``/`` (A2A 1.0 and 0.3) and the card."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from starlette.applications import Starlette

from green_agent.adapters import adapter_from_settings
from green_agent.adapters.base import WorkerAdapter
from green_agent.card import agent_card
from green_agent.executor import AssessmentExecutor
from green_agent.settings import GreenSettings, load_settings

log = logging.getLogger(__name__)


def build_app(
    card_url: str,
    settings: GreenSettings | None = None,
    adapter: WorkerAdapter | None = None,
) -> Starlette:
    settings = settings or load_settings()
    adapter = adapter or adapter_from_settings(settings)
    card = agent_card(card_url)
    executor = AssessmentExecutor(settings, adapter)
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        log.info("green agent ready at %s (worker: %s)", card_url, adapter.kind)
        try:
            yield
        finally:
            await adapter.aclose()

    app = Starlette(
        routes=[
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True),
        ],
        lifespan=lifespan,
    )
    app.state.executor = executor
    return app


def serve(host: str, port: int, card_url: str | None = None) -> None:
    import uvicorn

    settings = load_settings()
    app = build_app(card_url or f"http://{host}:{port}/", settings)
    uvicorn.run(app, host=host, port=port, log_level="info")
