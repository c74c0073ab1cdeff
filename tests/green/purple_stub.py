"""Tiny A2A participants (a2a-sdk 1.x, 1.0 + 0.3): one answers every message with plain text,
the other never answers (a trial in progress for as long as a test needs)."""

from __future__ import annotations

import asyncio
from typing import Any

from a2a.helpers import new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from starlette.applications import Starlette


class _Polite(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        await event_queue.enqueue_event(new_text_message("Thanks, nothing to do here."))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


class _Silent(AgentExecutor):
    def __init__(self, received: asyncio.Event) -> None:
        self.received = received

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.received.set()
        await asyncio.Event().wait()  # until the client goes away or the server stops

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


def silent_purple_app(received: asyncio.Event) -> Any:
    """An app factory for a participant that never answers; ``received`` is set at the first
    message (so a test knows a trial is under way)."""
    return lambda url: purple_app(url, _Silent(received))


def purple_app(url: str, executor: AgentExecutor | None = None) -> Any:
    card = AgentCard(
        name="purple stub",
        description="answers politely",
        version="0.0.1",
        supported_interfaces=[
            AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=url),
            AgentInterface(protocol_binding="JSONRPC", protocol_version="0.3", url=url),
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="noop", name="noop", description="noop", tags=["test"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=executor or _Polite(), task_store=InMemoryTaskStore(), agent_card=card
    )
    return Starlette(
        routes=[
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True),
        ]
    )
