"""Loopback servers for the green agent tests: green agent, fake worker, a tiny purple agent."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers import new_text_part
from a2a.types import Message, Role, SendMessageRequest, StreamResponse

from green_agent.server import build_app
from green_agent.settings import GreenSettings
from skillsbench_agentbeats.in_process import serve_app
from tests.green_agent.fake_worker import FakeWorker

PURPLE_URL = "http://127.0.0.1:9019/"


def request_text(config: dict[str, Any], agent: str = PURPLE_URL) -> str:
    return json.dumps({"participants": {"agent": agent}, "config": config})


SMOKE = {"task_set": "smoke", "tasks": "all"}
# 5 tasks of skillsbench-v1.1: shard 3 of 20
FIVE = {"task_set": "skillsbench-v1.1", "tasks": "all", "num_shards": 20, "shard_index": 3}


@pytest.fixture
async def mock_green() -> AsyncIterator[str]:
    async with serve_app(lambda url: build_app(url, GreenSettings())) as url:
        yield url


@pytest.fixture
def worker_state(tmp_path: Path) -> Path:
    return tmp_path / "worker-state"


async def stream_events(
    green_url: str, text: str, *, timeout: float = 120.0
) -> list[StreamResponse]:
    """Send one request with a 1.x streaming client and collect every event."""
    async with httpx.AsyncClient(timeout=timeout) as http:
        client = await create_client(
            green_url, client_config=ClientConfig(streaming=True, httpx_client=http)
        )
        message = Message(
            role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[new_text_part(text)]
        )
        events: list[StreamResponse] = []
        async with client:
            async for event in client.send_message(SendMessageRequest(message=message)):
                events.append(event)
        return events


def agent_parts(events: list[StreamResponse]) -> list[Any]:
    """Every part the green agent authored in a stream: status messages and artifacts."""
    parts: list[Any] = []
    for event in events:
        kind = event.WhichOneof("payload")
        if kind == "status_update" and event.status_update.status.HasField("message"):
            parts.extend(event.status_update.status.message.parts)
        elif kind == "artifact_update":
            parts.extend(event.artifact_update.artifact.parts)
        elif kind == "task" and event.task.status.HasField("message"):
            parts.extend(event.task.status.message.parts)
    return parts


__all__ = ["FIVE", "SMOKE", "FakeWorker", "agent_parts", "request_text", "stream_events"]
