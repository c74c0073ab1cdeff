"""A purple agent with faults, on a2a-sdk 1.x: a real A2A server (the SDK's card and JSON-RPC
routes, a task per message) that solves ``write-answer`` in two turns, unless told to misbehave.

Usage: ``python faulty_peer.py PORT MODE``. Modes:

- ``exec``: turn 1 runs ``echo 42 > answer.txt``, turn 2 finishes.
- ``flood-artifacts``: a streamed reply that never ends: the task, then 64 KiB artifact chunks
  (``append``) without pause.
- ``huge-event``: one streamed event whose ``data:`` line never ends.
- ``huge-body``: a plain (non-streamed) JSON-RPC reply whose body never ends.

Environment: ``PEER_FAIL=N`` answers the first N JSON-RPC requests with ``PEER_FAIL_STATUS``
(500 by default) before the SDK sees them (``always``: every one); ``PEER_CARD_URL`` is the URL
the card advertises (the real one by default; ``{port}`` is replaced by the server's port); ``PEER_STREAMING=0`` a card without streaming;
``PEER_BREAK_STREAM=1`` breaks the connection of the first streamed reply after its first event
(the task goes on); ``PEER_LOG`` gets one JSON line per JSON-RPC request (``method``, ``status``,
``message_id``) and one per message the agent works on (``executed``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from a2a.helpers import new_data_part, new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

PORT, MODE = int(sys.argv[1]), sys.argv[2]
STREAMING = os.environ.get("PEER_STREAMING", "1") == "1" and MODE != "huge-body"
FAIL = os.environ.get("PEER_FAIL", "0")
FAIL_STATUS = int(os.environ.get("PEER_FAIL_STATUS", "500"))
CHUNK = "x" * (64 << 10)
_turns: dict[str, int] = {}
_failed = 0
_broken = os.environ.get("PEER_BREAK_STREAM") != "1"  # True once a stream was broken


def log(record: dict[str, Any]) -> None:
    path = os.environ.get("PEER_LOG")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps(record) + "\n")


class Solver(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        turn = _turns[task.context_id] = _turns.get(task.context_id, 0) + 1
        log({"executed": context.message.message_id, "turn": turn})
        action: dict[str, Any] = {"action": "exec", "command": "echo 42 > answer.txt"}
        if turn > 1:
            action = {"action": "finish", "message": "done"}
        await updater.add_artifact([new_data_part(action)], name="action")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


def sse(request_id: Any, result: dict[str, Any]) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result})
    return f"data: {body}\n\n".encode()


async def flood(request: Request) -> Response:
    """The flooding modes: replies that never end, built by hand in the protocol's shape."""
    rpc = json.loads(await request.body())
    request_id, message = rpc.get("id"), rpc.get("params", {}).get("message", {})
    log({"method": rpc.get("method"), "status": 200, "message_id": message.get("messageId")})
    context_id = message.get("contextId") or "ctx-flood"
    task_id = "task-flood"

    async def artifacts() -> AsyncIterator[bytes]:
        status = {"state": "TASK_STATE_WORKING"}
        yield sse(request_id, {"task": {"id": task_id, "contextId": context_id, "status": status}})
        n = 0
        while True:
            n += 1
            update = {
                "taskId": task_id,
                "contextId": context_id,
                "append": n > 1,
                "artifact": {"artifactId": "a", "parts": [{"text": CHUNK}]},
            }
            yield sse(request_id, {"artifactUpdate": update})
            await asyncio.sleep(0)

    async def endless(head: bytes) -> AsyncIterator[bytes]:
        yield head
        while True:
            yield CHUNK.encode()
            await asyncio.sleep(0)

    if MODE == "flood-artifacts":
        return StreamingResponse(artifacts(), media_type="text/event-stream")
    if MODE == "huge-event":
        head = f'data: {{"jsonrpc": "2.0", "id": {json.dumps(request_id)}, "result": "'.encode()
        return StreamingResponse(endless(head), media_type="text/event-stream")
    head = f'{{"jsonrpc": "2.0", "id": {json.dumps(request_id)}, "result": "'.encode()
    return StreamingResponse(endless(head), media_type="application/json")


class Faults:
    """ASGI middleware: the first ``PEER_FAIL`` JSON-RPC requests get ``PEER_FAIL_STATUS``, and
    every JSON-RPC request is logged."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        global _failed, _broken
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        rpc = json.loads(body)
        message_id = rpc.get("params", {}).get("message", {}).get("messageId")
        if FAIL == "always" or _failed < int(FAIL):
            _failed += 1
            log({"method": rpc.get("method"), "status": FAIL_STATUS, "message_id": message_id})
            await Response("upstream hiccup", status_code=FAIL_STATUS)(scope, receive, send)
            return
        if not MODE.startswith(("flood", "huge")):
            log({"method": rpc.get("method"), "status": 200, "message_id": message_id})
        pending = [{"type": "http.request", "body": body, "more_body": False}]

        async def replay() -> Any:
            return pending.pop() if pending else await receive()

        if _broken or rpc.get("method") != "SendStreamingMessage":
            await self.app(scope, replay, send)
            return
        _broken = True
        events = 0

        async def one_event(message: Any) -> None:
            nonlocal events
            if message["type"] == "http.response.body" and message.get("body"):
                events += 1
                if events > 1:  # after the first event, the connection goes away
                    raise ConnectionResetError("stream broken on purpose")
            await send(message)

        await self.app(scope, replay, one_event)


url = f"http://127.0.0.1:{PORT}/"
advertised = os.environ.get("PEER_CARD_URL", url).replace("{port}", str(PORT))
card = AgentCard(
    name="faulty-purple",
    description="a skillsbench-shell/v1 participant with faults",
    version="0.1.0",
    supported_interfaces=[
        AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=advertised),
        AgentInterface(protocol_binding="JSONRPC", protocol_version="0.3", url=advertised),
    ],
    capabilities=AgentCapabilities(streaming=STREAMING),
    default_input_modes=["text/plain", "application/json"],
    default_output_modes=["text/plain", "application/json"],
    skills=[AgentSkill(id="shell", name="shell", description="solves tasks", tags=["test"])],
)
handler = DefaultRequestHandler(
    agent_executor=Solver(), task_store=InMemoryTaskStore(), agent_card=card
)
rpc = [Route("/", flood, methods=["POST"])] if MODE.startswith(("flood", "huge")) else []
app = Starlette(
    routes=[
        *create_agent_card_routes(card),
        *rpc,
        *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True),
    ]
)
uvicorn.run(Faults(app), host="127.0.0.1", port=PORT, log_level="warning")
