"""Act as the AgentBeats gateway: wait for cards, send the request over streaming, parse parts.

Mirrors ``agentbeats-gateway`` v0.3: cards of every agent awaited (30 s), one user TextPart with
``{"participants", "config"}``, streaming, the card's own URL ignored, and the export
``{"status": <final state>, "results": [<every DataPart and every TextPart that parses as JSON>]}``
taken from the artifacts when the task ends ``completed``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import ssl
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import httpx

CARD_PATH = "/.well-known/agent-card.json"
CARD_WAIT_SEC = 30.0
CARD_NOTICE_SEC = 3.0  # a wait for cards longer than this is said, not silent
CANCEL_TIMEOUT_SEC = 120.0  # the green agent answers a cancel once the worker run has stopped
READ_TIMEOUT_SEC = 300.0  # what the gateway uses; the green agent's heartbeat stays below it

ProgressFn = Callable[[str], None]


class AgentsNotReady(RuntimeError):
    pass


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context per process: building one per client costs tens of milliseconds."""
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


async def wait_for_cards(
    urls: Iterable[str],
    timeout_sec: float = CARD_WAIT_SEC,
    progress: ProgressFn | None = None,
) -> None:
    """Wait until every agent serves its card, like the gateway's ``wait_for_agents``.
    ``progress`` hears which cards are still awaited once the wait lasts CARD_NOTICE_SEC."""
    pending = {url.rstrip("/") + CARD_PATH for url in urls}
    started = time.monotonic()
    deadline = started + timeout_sec
    noticed = False
    async with httpx.AsyncClient(timeout=2.0, verify=_tls()) as client:
        while pending:
            if (
                progress is not None
                and not noticed
                and time.monotonic() - started > CARD_NOTICE_SEC
            ):
                noticed = True
                progress(
                    f"waiting for the agent card at {', '.join(sorted(pending))} "
                    f"(up to {timeout_sec:g} s)"
                )
            for card_url in sorted(pending):
                try:
                    response = await client.get(card_url)
                except httpx.HTTPError:
                    continue
                if response.status_code == 200:
                    pending.discard(card_url)
            if not pending:
                return
            if time.monotonic() > deadline:
                raise AgentsNotReady(f"agents not ready after {timeout_sec:g}s: {sorted(pending)}")
            await asyncio.sleep(0.1)


def state_name(state: int) -> str:
    """``TASK_STATE_INPUT_REQUIRED`` -> ``input-required`` (the 0.3 spelling the gateway exports)."""
    from a2a.types import TaskState

    return TaskState.Name(state).removeprefix("TASK_STATE_").lower().replace("_", "-")


def parse_parts(parts: Iterable[Any]) -> list[Any]:
    """Every DataPart's data, and every TextPart's text that parses as JSON (the gateway rule)."""
    from google.protobuf.json_format import MessageToDict

    found: list[Any] = []
    for part in parts:
        kind = part.WhichOneof("content")
        if kind == "data":
            found.append(MessageToDict(part.data))
        elif kind == "text":
            try:
                found.append(json.loads(part.text))
            except ValueError:
                continue
    return found


async def run_assessment(
    green_url: str,
    participants: dict[str, str],
    config: dict[str, Any],
    progress: ProgressFn | None = None,
    on_task: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Send one assessment to the green agent; the gateway-shaped export. ``on_task`` hears the
    A2A task's id as soon as the green agent names it (what :func:`cancel_assessment` needs)."""
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.helpers import new_text_part
    from a2a.types import Message, Role, SendMessageRequest

    status = "unknown"
    last_text = ""  # the newest status text: on a task that did not complete, it says why
    task_id: str | None = None
    artifacts: dict[str, list[Any]] = {}
    timeout = httpx.Timeout(READ_TIMEOUT_SEC, connect=10.0)
    async with httpx.AsyncClient(timeout=timeout, verify=_tls()) as http:
        card = await A2ACardResolver(http, green_url).get_agent_card()
        for interface in card.supported_interfaces:  # the gateway ignores the card's URL
            interface.url = green_url
        client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
        message = Message(
            role=Role.ROLE_USER,
            message_id=uuid.uuid4().hex,
            parts=[new_text_part(json.dumps({"participants": participants, "config": config}))],
        )
        async with client:
            async for event in client.send_message(SendMessageRequest(message=message)):
                kind = event.WhichOneof("payload")
                if on_task is not None and task_id is None:
                    task_id = _task_id(event)
                    if task_id is not None:
                        on_task(task_id)
                if kind == "task":
                    status = state_name(event.task.status.state)
                    for artifact in event.task.artifacts:
                        artifacts[artifact.artifact_id] = list(artifact.parts)
                elif kind == "status_update":
                    update = event.status_update
                    status = state_name(update.status.state)
                    if update.status.HasField("message"):
                        text = " ".join(p.text for p in update.status.message.parts if p.text)
                        last_text = text or last_text
                        if progress is not None and text:
                            progress(f"[{status}] {text}")
                elif kind == "artifact_update":
                    update_a = event.artifact_update
                    parts = list(update_a.artifact.parts)
                    key = update_a.artifact.artifact_id
                    if update_a.append and key in artifacts:
                        artifacts[key].extend(parts)
                    else:
                        artifacts[key] = parts
                elif kind == "message" and progress is not None:
                    progress(" ".join(p.text for p in event.message.parts if p.text))
    results: list[Any] = []
    if status == "completed":
        for parts in artifacts.values():
            results.extend(parse_parts(parts))
        return {"status": status, "results": results}
    # The gateway exports no results for a task that did not complete; the reason is ours.
    return {"status": status, "results": results, "error": last_text or f"task {status}"}


def _task_id(event: Any) -> str | None:
    kind = event.WhichOneof("payload")
    if kind == "task":
        return str(event.task.id) or None
    if kind in ("status_update", "artifact_update"):
        return str(getattr(event, kind).task_id) or None
    return None


async def cancel_assessment(
    green_url: str, task_id: str, timeout_sec: float = CANCEL_TIMEOUT_SEC
) -> str:
    """A2A ``CancelTask`` for a running assessment (the green agent cancels its worker run
    before it answers); the task's state after it, e.g. ``canceled``."""
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.types import CancelTaskRequest

    timeout = httpx.Timeout(timeout_sec, connect=10.0)
    async with httpx.AsyncClient(timeout=timeout, verify=_tls()) as http:
        card = await A2ACardResolver(http, green_url).get_agent_card()
        for interface in card.supported_interfaces:  # as for the request: the URL we were given
            interface.url = green_url
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
        async with client:
            task = await client.cancel_task(CancelTaskRequest(id=task_id))
    return state_name(task.status.state)
