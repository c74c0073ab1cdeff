"""Runs in the a2a-sdk 0.3.x environment: send one assessment the way agentbeats-gateway v0.3 does.

Usage: python a2a03_gateway_client.py GREEN_URL REQUEST_JSON [--cancel-after-first-working]
Prints one JSON object: the gateway export plus what the test checks about the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from uuid import uuid4

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import DataPart, Message, Part, Role, TaskIdParams, TaskQueryParams, TextPart


def parse_parts(parts):  # the gateway's rule
    out = []
    for part in parts:
        root = part.root
        if isinstance(root, DataPart):
            out.append(root.data)
        elif isinstance(root, TextPart):
            with contextlib.suppress(ValueError):
                out.append(json.loads(root.text))
    return out


async def main() -> None:
    green_url, request_text = sys.argv[1], sys.argv[2]
    cancel_after_working = "--cancel-after-first-working" in sys.argv
    report = {"status": None, "results": [], "states": [], "json_status_parts": 0, "errors": []}
    async with httpx.AsyncClient(timeout=300) as http:
        card = await A2ACardResolver(httpx_client=http, base_url=green_url).get_agent_card()
        card.url = green_url
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        msg = Message(
            kind="message",
            role=Role.user,
            parts=[Part(root=TextPart(kind="text", text=request_text))],
            message_id=uuid4().hex,
            context_id=None,
        )
        artifacts = []
        task_id = None
        try:
            async for event in client.send_message(msg):
                if isinstance(event, Message):
                    continue
                task, _update = event
                task_id = task.id
                state = task.status.state.value
                report["states"].append(state)
                report["status"] = state
                message = task.status.message
                if message is not None:
                    report["json_status_parts"] += len(parse_parts(message.parts))
                if state == "completed":
                    artifacts = task.artifacts or []
                if cancel_after_working and state == "working":
                    cancelled = await client.cancel_task(TaskIdParams(id=task.id))
                    report["cancel_returned"] = cancelled.status.state.value
                    break
        except Exception as exc:  # the gateway exports any failure as "failed"
            report["errors"].append(f"{type(exc).__name__}: {exc}")
            report["status"] = report["status"] or "failed"
        if cancel_after_working and task_id is not None:
            for _ in range(50):
                got = await client.get_task(TaskQueryParams(id=task_id))
                if got.status.state.value != "working":
                    break
                await asyncio.sleep(0.1)
            report["final_state"] = got.status.state.value
        for artifact in artifacts:
            report["results"].extend(parse_parts(artifact.parts))
    print(json.dumps(report))


asyncio.run(main())
