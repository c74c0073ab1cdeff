"""Scripted purple agent on a2a-sdk 0.3.x: replies with a plain Message holding the action.
Usage: <a2a-sdk 0.3 python> server_v03.py PORT MODE"""

from __future__ import annotations

import asyncio
import sys
import uuid

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentSkill,
    DataPart,
    Message,
    Part,
    Role,
    TextPart,
)
from script import next_reply

PORT, MODE = int(sys.argv[1]), sys.argv[2]


class Scripted(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        data = [p.root.data for p in context.message.parts if isinstance(p.root, DataPart)]
        reply = next_reply(MODE, context.context_id or "", data)
        if reply is None:
            await asyncio.sleep(3600)
            return
        if isinstance(reply, str):
            parts = [Part(root=TextPart(text=reply))]
        else:
            parts = [
                Part(root=DataPart(data=d)) for d in (reply if isinstance(reply, list) else [reply])
            ]
        await event_queue.enqueue_event(
            Message(
                role=Role.agent,
                message_id=uuid.uuid4().hex,
                context_id=context.context_id,
                parts=parts,
            )
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


card = AgentCard(
    name="scripted-purple-v03",
    description="scripted skillsbench-shell/v1 participant on a2a-sdk 0.3",
    url=f"http://127.0.0.1:{PORT}/",
    version="0.1.0",
    capabilities=AgentCapabilities(streaming=True),
    default_input_modes=["text"],
    default_output_modes=["text"],
    skills=[AgentSkill(id="shell", name="shell", description="solves tasks", tags=["test"])],
)
app = A2AStarletteApplication(
    agent_card=card, http_handler=DefaultRequestHandler(Scripted(), InMemoryTaskStore())
).build()
uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
