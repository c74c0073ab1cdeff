"""One A2A conversation (one ``context_id``) with the purple agent, and the classification of
what can go wrong into the reviewed participant failure categories.

The conversation talks to the URL it was given: the URL an agent card advertises is used only
when it serves the same card (a card written for one network, ``http://127.0.0.1:9010/`` in a
container, names another host, or nothing, from the bridge's). What the participant sends is
bounded in memory (:data:`MAX_REPLY_BYTES`), and its transient HTTP failures are retried
(:mod:`worker.bridge.retries`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.client.errors import A2AClientTimeoutError, AgentCardResolutionError
from a2a.helpers import get_data_parts, get_text_parts, new_data_part, new_text_part
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskState,
)
from google.protobuf.json_format import MessageToDict

from worker.bridge.config import MAX_REPLY_BYTES
from worker.bridge.retries import Retry
from worker.bridge.rpc_check import ReplyTooLarge, checked_client, size_checker
from worker.core.failures import FailureKind

CONNECT_TIMEOUT_SEC = 10.0
CARD_PROBE_SEC = 5.0  # at most this long to ask an advertised URL whether it is the same agent
POLL_INTERVAL_SEC = 0.25  # at most this late to notice a finished turn
FIRST_POLL_SEC = 0.005  # polls start fast and back off to POLL_INTERVAL_SEC
CANCEL_TIMEOUT_SEC = 2.0  # the worker kills the bridge 3 s after its own cancel
_FAILED_STATES = {
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_REJECTED: "rejected",
    TaskState.TASK_STATE_CANCELED: "canceled",
    TaskState.TASK_STATE_AUTH_REQUIRED: "auth-required",
}
_PENDING_STATES = {TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING}
# Waiting for the client, not ended: left behind, such a task is cancelled.
_INTERRUPTED_STATES = {TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED}


class ParticipantFailure(Exception):
    def __init__(self, kind: FailureKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class Reply:
    texts: list[str] = field(default_factory=list)
    data: list[Any] = field(default_factory=list)
    state: str | None = None  # task state name, None for a plain Message
    raw: dict[str, Any] = field(default_factory=dict)


def classify(exc: BaseException) -> FailureKind:
    """Unreachable / bad HTTP → communication; no answer in time → timeout; anything the peer
    said that is an error or unreadable → error."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    if any(isinstance(e, ReplyTooLarge) for e in seen):
        return FailureKind.PARTICIPANT_ERROR  # a flood is what the participant said
    if any(
        isinstance(e, A2AClientTimeoutError | httpx.TimeoutException | TimeoutError) for e in seen
    ):
        return FailureKind.PARTICIPANT_TIMEOUT
    if any(
        isinstance(
            e,
            httpx.TransportError
            | httpx.HTTPStatusError
            | AgentCardResolutionError
            | ConnectionError,
        )
        for e in seen
    ):
        return FailureKind.PARTICIPANT_COMMUNICATION
    if any("HTTP Error" in str(e) or "Network communication error" in str(e) for e in seen):
        return FailureKind.PARTICIPANT_COMMUNICATION
    return FailureKind.PARTICIPANT_ERROR


class Conversation:
    """Sends user messages in one context and waits for each reply until a deadline."""

    def __init__(
        self,
        url: str,
        deadline: float,
        *,
        max_reply_bytes: int = MAX_REPLY_BYTES,
        on_retry: Callable[[Retry], None] | None = None,
    ) -> None:
        self.url = url
        self.deadline = deadline
        self.max_reply_bytes = max_reply_bytes
        self.on_retry = on_retry or (lambda retry: None)
        # Each URL the card advertises that is not the given one, and the URL used for it.
        self.card_urls: dict[str, str] = {}
        self.context_id: str | None = None
        self._task_id: str | None = None  # set while the purple task waits for input
        self.open_task: str | None = None  # the purple task not yet in a terminal state
        self._answered: tuple[str, bytes] | None = None  # (task id, _turn_key) last answered
        self._http: httpx.AsyncClient | None = None
        self._client: Any = None

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    async def __aenter__(self) -> Conversation:
        # The SDK's own client would time out after 5 s; a purple agent may think for minutes.
        timeout = max(self.remaining(), 1.0)
        # Replies whose JSON-RPC id is not the request's are refused (a participant error), as
        # are replies past max_reply_bytes; transient HTTP failures are retried.
        self._http = checked_client(
            httpx.Timeout(timeout, connect=CONNECT_TIMEOUT_SEC),
            self.max_reply_bytes,
            self.remaining,
            self.on_retry,
        )
        # The id of a running task must be known, so that a turn still running when time runs
        # out can be cancelled: streamed sends carry it in their first event; without streaming,
        # ``return_immediately`` brings it back at once and the task is polled (agents that
        # ignore the flag simply block).
        config = ClientConfig(streaming=True, polling=True, httpx_client=self._http)
        try:
            self._client = await asyncio.wait_for(
                create_client(await self._card(self._http), client_config=config), timeout
            )
        except BaseException as exc:
            await self._http.aclose()
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise ParticipantFailure(
                classify(exc), f"agent card of {self.url}: {_text(exc)}"
            ) from exc
        return self

    async def _card(self, http: httpx.AsyncClient) -> AgentCard:
        """The participant's card, each URL in it that is not the same agent replaced by the
        URL the bridge was given."""
        card = await A2ACardResolver(http, self.url).get_agent_card()
        served = AgentCard()
        served.CopyFrom(card)
        verdicts: dict[str, bool] = {}
        for interface in card.supported_interfaces:
            advertised = interface.url
            if not advertised or _same_url(advertised, self.url):
                continue
            if advertised not in verdicts:
                verdicts[advertised] = await self._serves_card(advertised, served)
            if not verdicts[advertised]:
                self.card_urls[advertised] = self.url
                interface.url = self.url
        return card

    async def _serves_card(self, url: str, card: AgentCard) -> bool:
        """Whether ``url`` answers, within :data:`CARD_PROBE_SEC`, with the very card the given
        URL served (at its own well-known path, or its origin's): the same agent, reached
        another way. Not retried: an advertised URL that fails is simply not used."""
        try:
            origin = str(httpx.URL(url).copy_with(path="/", query=None, fragment=None))
        except (httpx.InvalidURL, TypeError, ValueError):
            return False
        candidates = [url] if _same_url(url, origin) else [url, origin]
        timeout = max(min(CARD_PROBE_SEC, self.remaining()), 0.1)
        async with httpx.AsyncClient(
            timeout=timeout, event_hooks={"response": [size_checker(self.max_reply_bytes)]}
        ) as probe:
            for candidate in candidates:
                try:
                    answer = await A2ACardResolver(probe, candidate).get_agent_card()
                except Exception:
                    continue
                if answer == card:
                    return True
        return False

    async def __aexit__(self, *exc: object) -> None:
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.close()
        if self._http is not None:
            await self._http.aclose()

    def message(self, parts: list[Any]) -> Message:
        return Message(
            role=Role.ROLE_USER,
            message_id=uuid.uuid4().hex,
            context_id=self.context_id or "",
            task_id=self._task_id or "",
            parts=parts,
        )

    async def send(self, message: Message) -> Reply:
        """One turn; raises :class:`ParticipantFailure`."""
        remaining = self.remaining()
        if remaining <= 0:
            raise ParticipantFailure(FailureKind.PARTICIPANT_TIMEOUT, "no time left for a reply")
        try:
            return await asyncio.wait_for(self._send(message), remaining)
        except ParticipantFailure:
            raise
        except TimeoutError as exc:
            raise ParticipantFailure(
                FailureKind.PARTICIPANT_TIMEOUT, "the participant did not reply before the deadline"
            ) from exc
        except Exception as exc:
            raise ParticipantFailure(classify(exc), _text(exc)) from exc

    async def cancel_open_task(self) -> str | None:
        """Best effort ``CancelTask`` for the task still open, bounded by
        :data:`CANCEL_TIMEOUT_SEC`; says what happened, ``None`` when no task was open."""
        task_id, self.open_task = self.open_task, None
        if task_id is None or self._client is None:
            return None
        try:
            task = await asyncio.wait_for(
                self._client.cancel_task(CancelTaskRequest(id=task_id)), CANCEL_TIMEOUT_SEC
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return f"cancel of task {task_id} failed: {_text(exc)}"
        return f"task {task_id} is now {TaskState.Name(task.status.state)}"

    async def _send(self, message: Message) -> Reply:
        self.open_task = message.task_id or None
        task: Task | None = None
        reply: Message | None = None
        # No task history: the bridge never reads it, and it grows with every turn.
        request = SendMessageRequest(
            message=message, configuration=SendMessageConfiguration(history_length=0)
        )
        received = 0  # bytes of this turn's streamed events
        try:
            async for event in self._client.send_message(request):
                received += event.ByteSize()
                if received > self.max_reply_bytes:
                    raise ParticipantFailure(
                        FailureKind.PARTICIPANT_ERROR,
                        f"the participant streamed more than {self.max_reply_bytes} bytes"
                        " in one turn",
                    )
                task, reply = self._take(event, message, task, reply)
        except ParticipantFailure:
            raise
        except Exception as exc:
            # A stream that broke once the task is known: the task goes on at the participant,
            # and polling it is safe (resending the message is not).
            if task is None or reply is not None:
                raise
            if classify(exc) is not FailureKind.PARTICIPANT_COMMUNICATION:
                raise
            self.on_retry(Retry("SendStreamingMessage", 1, f"stream broken: {_text(exc)}", 0.0))
            task.status.state = TaskState.TASK_STATE_WORKING  # the poll says where it is
        if reply is not None:
            return self._from_message(reply)
        if task is not None:
            pause = FIRST_POLL_SEC
            while task.status.state in _PENDING_STATES or self._stale(task):
                await asyncio.sleep(pause)
                pause = min(pause * 2, POLL_INTERVAL_SEC)
                polled = await self._client.get_task(GetTaskRequest(id=task.id, history_length=0))
                self._check_about(polled.id or task.id, polled.context_id, message, task)
                task = polled
            self._answered = (task.id, _turn_key(task))
            if task.status.state not in _INTERRUPTED_STATES:
                self.open_task = None
            return self._from_task(task)
        raise ParticipantFailure(FailureKind.PARTICIPANT_ERROR, "empty response")

    def _take(
        self, event: Any, message: Message, task: Task | None, reply: Message | None
    ) -> tuple[Task | None, Message | None]:
        """One event of a reply folded into what the turn has (its task, or its message)."""
        kind = event.WhichOneof("payload")
        if kind == "message":
            self._check_about(event.message.task_id, event.message.context_id, message)
            reply = event.message
        elif kind == "task":
            self._check_about(event.task.id, event.task.context_id, message, task)
            task = Task()
            task.CopyFrom(event.task)
            task.ClearField("history")  # never read (an agent may send it anyway)
            self.open_task = task.id
        elif kind in ("status_update", "artifact_update"):
            update = getattr(event, kind)
            self._check_about(update.task_id, update.context_id, message, task)
            task = _apply_update(task, event)
            self.open_task = task.id
        return task, reply

    def _check_about(
        self, task_id: str, context_id: str, sent: Message, task: Task | None = None
    ) -> None:
        """A reply must be about this conversation: its context (once known), the task the
        message continues, and the task this turn already runs; an empty id says nothing."""
        problem = None
        if context_id and self.context_id and context_id != self.context_id:
            problem = f"context {context_id!r}, not this conversation's {self.context_id!r}"
        elif task_id and sent.task_id and task_id != sent.task_id:
            problem = f"task {task_id!r}, not the continued task {sent.task_id!r}"
        elif task_id and task is not None and task.id and task_id != task.id:
            problem = f"task {task_id!r}, not this turn's task {task.id!r}"
        elif context_id and task is not None and task.context_id and context_id != task.context_id:
            problem = f"context {context_id!r}, not this turn's {task.context_id!r}"
        if problem:
            raise ParticipantFailure(
                FailureKind.PARTICIPANT_ERROR, f"the participant replied about another {problem}"
            )

    def _stale(self, task: Task) -> bool:
        """A continued task may be returned before it processed our message (a2a-sdk answers a
        send to an ``input-required`` task with its current state): the status and artifacts
        we already answered are still there, unchanged (a status message id alone is not
        enough: a bare input-required status with the action in an artifact has none)."""
        return (
            task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            and self._answered is not None
            and task.id == self._answered[0]
            and _turn_key(task) == self._answered[1]
        )

    def _from_message(self, message: Message) -> Reply:
        self.context_id = message.context_id or self.context_id
        self._task_id = self.open_task = None
        parts = list(message.parts)
        return Reply(get_text_parts(parts), get_data_parts(parts), None, MessageToDict(message))

    def _from_task(self, task: Task) -> Reply:
        self.context_id = task.context_id or self.context_id
        state = task.status.state
        raw = MessageToDict(task)
        raw.pop("history", None)
        if state in _FAILED_STATES:
            detail = " ".join(get_text_parts(list(task.status.message.parts))) or "no detail"
            raise ParticipantFailure(
                FailureKind.PARTICIPANT_ERROR, f"participant task {_FAILED_STATES[state]}: {detail}"
            )
        self._task_id = task.id if state == TaskState.TASK_STATE_INPUT_REQUIRED else None
        parts = list(task.status.message.parts)
        for artifact in reversed(task.artifacts):  # newest first: it holds this turn's action
            parts.extend(artifact.parts)
        return Reply(get_text_parts(parts), get_data_parts(parts), TaskState.Name(state), raw)


def _same_url(a: str, b: str) -> bool:
    """The same endpoint, up to a trailing slash and the default port."""
    try:
        x, y = httpx.URL(a), httpx.URL(b)
    except httpx.InvalidURL:
        return False
    return (x.scheme, x.host, x.port, x.path.rstrip("/")) == (
        y.scheme,
        y.host,
        y.port,
        y.path.rstrip("/"),
    )


def _turn_key(task: Task) -> bytes:
    """What a new turn of the task changes: its status (state, message, timestamp) and
    artifacts."""
    key = Task(status=task.status, artifacts=task.artifacts)
    return key.SerializeToString(deterministic=True)


def _apply_update(task: Task | None, event: Any) -> Task:
    """A streamed status or artifact update applied to the task it belongs to, as the agent's
    task store applies it (so the turn needs no ``GetTask`` once the stream ends)."""
    status = event.HasField("status_update")
    update = event.status_update if status else event.artifact_update
    if task is None:
        task = Task(id=update.task_id, context_id=update.context_id)
    elif task.id != update.task_id:
        return task  # not this turn's task (the conversation refuses such a reply first)
    if status:
        task.status.CopyFrom(update.status)
        return task
    artifact = update.artifact
    for existing in task.artifacts:
        if existing.artifact_id == artifact.artifact_id:
            if update.append:
                existing.parts.extend(artifact.parts)
            else:
                existing.CopyFrom(artifact)
            return task
    task.artifacts.append(artifact)
    return task


def text_part(text: str) -> Any:
    return new_text_part(text)


def data_part(data: dict[str, Any]) -> Any:
    return new_data_part(data)


def _text(exc: BaseException) -> str:
    return str(exc).strip() or type(exc).__name__
