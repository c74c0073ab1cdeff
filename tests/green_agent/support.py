"""Helpers of the green agent tests: requests and streams, and the worker behind the green agent.

The worker in the adapter tests is the fake one or the real ``worker.service.app``.

Tests that hold for any worker speaking the worker HTTP API take the ``worker_kind`` fixture
(parametrized ``fake`` and ``real``) and start ``worker_under_test(kind, ...)``, so the fake
(tests/green_agent/fake_worker.py) cannot drift from the real service unnoticed. The real one is the
worker app in this process on loopback, with a real jobs dir, the local sandbox and a tasks dir
holding a tiny task for each task id of the ``FIVE`` selection; the participant is the tiny purple
agent ``purple_app`` below (it answers with plain text, so each trial is verified and
scored, not passed).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers import new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Role,
    SendMessageRequest,
    StreamResponse,
)
from starlette.applications import Starlette

from green_agent.selection import select
from skillsbench_agentbeats.in_process import serve_app
from tests.green_agent.fake_worker import FakeWorker

PURPLE_URL = "http://127.0.0.1:9019/"


def request_text(config: dict[str, Any], agent: str = PURPLE_URL) -> str:
    return json.dumps({"participants": {"agent": agent}, "config": config})


SMOKE = {"task_set": "smoke", "tasks": "all"}
# 5 tasks of skillsbench-v1.1: shard 3 of 20
FIVE = {"task_set": "skillsbench-v1.1", "tasks": "all", "num_shards": 20, "shard_index": 3}


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


KINDS = ("fake", "real")
NEVER_ENDS = "#!/bin/sh\nexec sleep 3600\n"


@dataclass
class WorkerUnderTest:
    kind: str
    url: str
    purple_url: str
    jobs: Path
    fake: FakeWorker | None = None

    def requests(self) -> list[dict[str, Any]]:
        """The run requests the worker accepted, oldest first, as JSON documents."""
        if self.fake is not None:
            runs = sorted(self.fake.runs(), key=lambda run: run["created"])
            return [run["request"] for run in runs]
        from worker.runs.store import RunStore

        runs, problems = RunStore(self.jobs).load_all()
        assert problems == []
        runs.sort(key=lambda run: run.created_at)
        return [run.request.model_dump(mode="json") for run in runs]

    def cancelled(self) -> list[bool]:
        """Per accepted run, oldest first: whether it was asked to cancel."""
        if self.fake is not None:
            runs = sorted(self.fake.runs(), key=lambda run: run["created"])
            return [run["cancelled_at"] is not None for run in runs]
        from worker.runs.store import RunStore

        records, _ = RunStore(self.jobs).load_all()
        records.sort(key=lambda run: run.created_at)
        return [run.cancel_requested for run in records]

    async def wait_cancelled(self, guard_sec: float = 60) -> None:
        """Until the one run accepted was asked to cancel (the green agent's cancel lands)."""
        async with asyncio.timeout(guard_sec):
            while self.cancelled() != [True]:
                await asyncio.sleep(0.05)

    def expected_passed(self, count: int) -> list[bool]:
        """The fake passes every other trial; the purple stub solves nothing for the real one."""
        if self.fake is not None:
            return [i % 2 == 0 for i in range(count)]
        return [False] * count


@pytest.fixture(params=KINDS)
def worker_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    if kind == "real":
        from worker.sandbox.base import SandboxError, sandbox_class

        try:
            sandbox_class("local")
        except (ValueError, SandboxError) as exc:
            pytest.skip(f"the real worker's local sandbox cannot run here: {exc}")
    return kind


@asynccontextmanager
async def worker_under_test(
    kind: str,
    root: Path,
    *,
    config: dict[str, Any],
    token: str | None = None,
    trial_sec: float = 0.05,
    only_first_ends: bool = False,
) -> AsyncIterator[WorkerUnderTest]:
    """A worker of ``kind`` able to run the tasks of ``config``, and a live purple agent.

    ``only_first_ends``: on the real worker, the verifier of every task but the first never ends
    (so a run can be cancelled while its other trials are surely unfinished); the fake's trials
    end every ``trial_sec`` seconds anyway."""
    jobs = root / "jobs"
    async with serve_app(purple_app) as purple_url:
        if kind == "fake":
            fake = FakeWorker(jobs, trial_sec=trial_sec, token=token)
            async with serve_app(lambda url: fake.app()) as url:
                yield WorkerUnderTest(kind, url.rstrip("/"), purple_url, jobs, fake)
            return
        from tests.support import make_task
        from worker.runs.engine import Engine, EngineSettings
        from worker.runs.meta import ProofSettings
        from worker.service.app import create_app

        tasks = root / "tasks"
        tasks.mkdir(parents=True)
        for index, task in enumerate(select(config).tasks):
            if only_first_ends and index > 0:
                make_task(tasks, task.task_id, test_sh=NEVER_ENDS, verifier_timeout=3600)
            else:
                make_task(tasks, task.task_id)
        engine = Engine(
            EngineSettings(
                jobs_dir=jobs,
                tasks_dir=tasks,
                environment="local",
                proof=ProofSettings.from_env(jobs, {}),
            )
        )
        async with serve_app(lambda url: create_app(engine, token=token, script_dir=root)) as url:
            yield WorkerUnderTest(kind, url.rstrip("/"), purple_url, jobs)


# A tiny A2A participant (a2a-sdk 1.x, 1.0 + 0.3): it answers every message with plain text.
class _Polite(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        await event_queue.enqueue_event(new_text_message("Thanks, nothing to do here."))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


class _Silent(AgentExecutor):
    """Never answers: a trial in progress for as long as a test needs."""

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
