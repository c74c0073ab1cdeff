"""Scripted purple agent on a2a-sdk 1.x: replies with a completed Task whose artifact holds the
action. Usage: python server_v1.py PORT MODE"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import uvicorn
from a2a.helpers import get_data_parts, new_data_part, new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from script import next_reply, record_cancel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

PORT, MODE = int(sys.argv[1]), sys.argv[2]
# "ask-<mode>": keep one task open, asking for input (the action in its status message) until
# the action is a finish; "ask-art-<mode>": the same with the action in an artifact and a bare
# input-required status (no message).
# "wrong-id-<mode>": <mode>, but every JSON-RPC reply carries an id that is not the request's;
# "wrong-context-<mode>": replies to a message in a known context name another context.
WRONG = MODE.split("-")[1] if MODE.startswith(("wrong-id-", "wrong-context-")) else None
MODE = MODE.removeprefix(f"wrong-{WRONG}-")
ASK = MODE.startswith("ask-")
ASK_ARTIFACT = MODE.startswith("ask-art-")
SCRIPT_MODE = MODE.removeprefix("ask-").removeprefix("art-")


class Scripted(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        if MODE == "fail":
            await updater.failed(updater.new_agent_message([new_text_part("model quota exceeded")]))
            return
        if MODE == "auth":  # an interrupted task, not a terminal one: it stays open
            await updater.requires_auth(updater.new_agent_message([new_text_part("log in first")]))
            return
        reply = next_reply(
            SCRIPT_MODE, task.context_id, get_data_parts(list(context.message.parts))
        )
        if reply is None:
            await asyncio.sleep(3600)
            return
        if isinstance(reply, str):
            parts = [new_text_part(reply)]
        else:
            parts = [new_data_part(d) for d in (reply if isinstance(reply, list) else [reply])]
        if ASK and isinstance(reply, dict) and reply.get("action") != "finish":
            if ASK_ARTIFACT:
                await updater.add_artifact(parts, name="action")
                await updater.requires_input()
            else:
                await updater.requires_input(updater.new_agent_message(parts))
            return
        await updater.add_artifact(parts, name="action")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        record_cancel(context.task_id or "", context.context_id or "")
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


url = f"http://127.0.0.1:{PORT}/"
card = AgentCard(
    name="scripted-purple-v1",
    description="scripted skillsbench-shell/v1 participant",
    version="0.1.0",
    supported_interfaces=[
        AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=url),
        AgentInterface(protocol_binding="JSONRPC", protocol_version="0.3", url=url),
    ],
    # PURPLE_STREAMING=0: a card without streaming (the bridge then polls GetTask)
    capabilities=AgentCapabilities(streaming=os.environ.get("PURPLE_STREAMING", "1") == "1"),
    default_input_modes=["text/plain", "application/json"],
    default_output_modes=["text/plain", "application/json"],
    skills=[AgentSkill(id="shell", name="shell", description="solves tasks", tags=["test"])],
)
handler = DefaultRequestHandler(
    agent_executor=Scripted(), task_store=InMemoryTaskStore(), agent_card=card
)


async def garbage(request: Request) -> Response:
    """Mode "garbage": a valid card, but replies that are not JSON-RPC at all."""
    return Response("<html>proxy says hi</html>", media_type="text/html")


class WrongIds:
    """ASGI middleware: the request's JSON-RPC id (or its message's context id) in every reply,
    each streamed event too, is replaced by another of the same length (Content-Length holds)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        request = json.loads(body)
        request_id = request.get("id")
        if WRONG == "context":
            request_id = request.get("params", {}).get("message", {}).get("contextId")
            if not request_id:
                request_id = "no context to replace"
        old = json.dumps(request_id).encode()
        new = (
            json.dumps("x" * len(str(request_id))).encode() if isinstance(request_id, str) else b"0"
        )
        pending = [{"type": "http.request", "body": body, "more_body": False}]

        async def replay() -> Any:
            return pending.pop() if pending else await receive()

        async def rewrite(message: Any) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": message.get("body", b"").replace(old, new)}
            await send(message)

        await self.app(scope, replay, rewrite)


rpc = [Route("/", garbage, methods=["POST"])] if MODE == "garbage" else []
app = Starlette(
    routes=[
        *create_agent_card_routes(card),
        *rpc,
        *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True),
    ]
)
uvicorn.run(WrongIds(app) if WRONG else app, host="127.0.0.1", port=PORT, log_level="warning")
