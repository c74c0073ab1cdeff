"""The HTTP worker adapter: ``POST /runs``, then follow the run until it ends.

Rows arrive over ``GET /runs/{id}/events`` (server-sent events); where the worker offers no event
stream the adapter polls ``GET /runs/{id}``. Every reconnection starts with a ``GET /runs/{id}``
catch-up, and rows are de-duplicated by ``trial_id``, so a dropped stream or a worker restarted
mid-run loses and repeats nothing. Transient connection errors are retried for
``retry_sec``; at ``timeout_sec`` the run is cancelled and reported as a timeout.

The event stream is read with ``httpx-sse``; the three retry loops (starting a run, following it,
cancelling it) share one tenacity policy, :data:`RETRY`, and differ only in when they stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any

import httpx
from httpx_sse import aconnect_sse
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    retry_if_exception_type,
    stop_after_attempt,
    stop_before_delay,
    wait_exponential,
)

from green_agent.adapters.base import EndState, RowFinished, RunEnded, RunEvent, WorkerHealth
from green_agent.settings import GreenSettings
from worker.api import (
    EVENT_END,
    EVENT_PHASE,
    EVENT_ROW,
    EVENT_STATUS,
    TERMINAL_STATES,
    RunCreated,
    RunRequest,
    RunStatus,
    TrialPhase,
)

log = logging.getLogger(__name__)

TRANSIENT_ERRORS = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.ReadError,
    httpx.ReadTimeout,
    httpx.WriteError,
    httpx.RemoteProtocolError,
    httpx.PoolTimeout,
)
TRANSIENT_STATUS = frozenset({502, 503, 504})
# Failures after which the request surely never reached the worker: the only ones a request
# that is not idempotent (POST /runs) may retry, or a second run would start.
UNSENT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
UNSENT_STATUS = frozenset({502, 503})
_MAX_BACKOFF_SEC = 1.0
_DEFAULTS = GreenSettings()  # the settings own the defaults; the adapter only reads them


class WorkerError(RuntimeError):
    """The worker refused or failed a request in a way retrying will not fix."""


class _Transient(Exception):
    def __init__(self, message: str, *, unsent: bool = False) -> None:
        super().__init__(message)
        self.unsent = unsent  # the request surely never reached the worker


class _NoEventStream(Exception):
    pass


def _log_retry(state: RetryCallState) -> None:
    exc = state.outcome.exception() if state.outcome else None
    pause = state.next_action.sleep if state.next_action else 0.0
    log.info("worker: %s; retrying in %.2fs (attempt %d)", exc, pause, state.attempt_number)


# The one retry policy: transient failures, backoff from 50 ms doubling up to 1 s. Each use
# copies it with its own stop (and, for starting a run, a narrower notion of retryable).
RETRY = AsyncRetrying(
    retry=retry_if_exception_type(_Transient),
    wait=wait_exponential(multiplier=0.05, max=_MAX_BACKOFF_SEC),
    before_sleep=_log_retry,
    reraise=True,
)


def _detail(response: httpx.Response) -> str:
    text = response.text.strip().replace("\n", " ")
    return f"HTTP {response.status_code}: {text[:300]}"


def _phases(found: dict[str, Any]) -> dict[str, TrialPhase]:
    """The readable trial phases of an event (one a newer worker words otherwise is left out)."""
    phases = {}
    for key, value in found.items():
        with contextlib.suppress(ValueError):
            phases[key] = TrialPhase.model_validate(value)
    return phases


def _row_key(row: dict[str, Any]) -> str:
    trial_id = row.get("trial_id")
    return str(trial_id) if trial_id else json.dumps(row, sort_keys=True, default=str)


class HttpWorkerAdapter:
    kind = "http"

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        poll_interval_sec: float = _DEFAULTS.worker_poll_interval_sec,
        timeout_sec: float = _DEFAULTS.worker_timeout_sec,
        retry_sec: float = _DEFAULTS.worker_retry_sec,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.poll_interval_sec = poll_interval_sec
        self.timeout_sec = timeout_sec
        self.retry_sec = retry_sec
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        # Reads may be long on the event stream; connecting must fail fast so retries kick in.
        self.client = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(30.0, connect=5.0),
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
        )

    async def aclose(self) -> None:
        await self.client.aclose()

    async def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One request; transient failures become :class:`_Transient`."""
        try:
            response = await self.client.request(method, path, **kwargs)
        except TRANSIENT_ERRORS as exc:
            raise _Transient(
                f"{type(exc).__name__}: {exc}", unsent=isinstance(exc, UNSENT_ERRORS)
            ) from exc
        if response.status_code in TRANSIENT_STATUS:
            raise _Transient(_detail(response), unsent=response.status_code in UNSENT_STATUS)
        return response

    def not_answering(self, health: WorkerHealth) -> Callable[[RetryCallState], None]:
        """A ``before_sleep`` hook: log the retry, and tell ``health`` the worker is not
        answering (what the assessment's heartbeat says while the retries last)."""

        def hook(state: RetryCallState) -> None:
            _log_retry(state)
            exc = state.outcome.exception() if state.outcome else None
            health.failing(
                f"the worker at {self.base_url} is not answering ({exc})", self.retry_sec
            )

        return hook

    async def call_with_retry(
        self,
        method: str,
        path: str,
        *,
        only_unsent: bool = False,
        health: WorkerHealth | None = None,
        **kwargs: Any,
    ) -> httpx.Response:
        def retryable(exc: BaseException) -> bool:
            return isinstance(exc, _Transient) and (exc.unsent or not only_unsent)

        health = health or WorkerHealth()
        try:
            async for attempt in RETRY.copy(
                retry=retry_if_exception(retryable),
                stop=stop_before_delay(self.retry_sec),
                before_sleep=self.not_answering(health),
            ):
                with attempt:
                    response = await self.call(method, path, **kwargs)
                    health.answering()
                    return response
        except _Transient as exc:
            if only_unsent and not exc.unsent:
                raise WorkerError(
                    f"worker at {self.base_url} may have received {method} {path} "
                    f"but did not answer it: {exc}"
                ) from None
            raise WorkerError(
                f"worker at {self.base_url} unreachable for {self.retry_sec:g}s: {exc}"
            ) from None
        raise AssertionError("unreachable: the retry loop returns or raises")

    async def start(self, request: RunRequest, health: WorkerHealth | None = None) -> HttpRun:
        health = health or WorkerHealth()
        response = await self.call_with_retry(
            "POST", "/runs", only_unsent=True, health=health, json=request.model_dump(mode="json")
        )
        if response.status_code >= 400:
            raise WorkerError(f"worker refused the run: {_detail(response)}")
        created = RunCreated.model_validate(response.json())
        instances = int(request.config.get("num_instances", 1) or 1)
        log.info("worker run %s started at %s", created.run_id, self.base_url)
        return HttpRun(self, created.run_id, total=len(request.tasks) * instances, health=health)


class HttpRun:
    def __init__(
        self,
        adapter: HttpWorkerAdapter,
        run_id: str,
        *,
        total: int,
        health: WorkerHealth | None = None,
    ) -> None:
        self.adapter = adapter
        self.health = health or WorkerHealth()
        self.run_id = run_id
        self.total = total
        self._rows: dict[str, dict[str, Any]] = {}
        self._deadline = time.monotonic() + adapter.timeout_sec
        self._cancelling: asyncio.Future[None] | None = None
        self._last_ok = time.monotonic()  # last sign of life from the worker
        self._use_events = True  # until the worker shows it has no event stream

    # -- following ---------------------------------------------------------------------------

    async def follow(self) -> AsyncGenerator[RunEvent, None]:
        queue: asyncio.Queue[RunEvent] = asyncio.Queue()
        pump = asyncio.create_task(self._pump(queue), name=f"worker-run-{self.run_id}")
        try:
            while True:
                remaining = self._deadline - time.monotonic()
                try:
                    event = await asyncio.wait_for(queue.get(), timeout=max(remaining, 0.0))
                except TimeoutError:
                    pump.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await pump
                    while not queue.empty():
                        late = queue.get_nowait()
                        yield late
                        if isinstance(late, RunEnded):  # it ended right at the deadline
                            return
                    log.warning("worker run %s timed out; cancelling it", self.run_id)
                    await self.cancel()
                    yield RunEnded(
                        state="timeout",
                        rows=list(self._rows.values()),
                        error=f"worker run exceeded {self.adapter.timeout_sec:g}s",
                    )
                    return
                yield event
                if isinstance(event, RunEnded):
                    return
        finally:
            if not pump.done():
                pump.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await pump

    def _accept(self, rows: list[dict[str, Any]], queue: asyncio.Queue[RunEvent]) -> None:
        for row in rows:
            if not isinstance(row, dict):
                continue
            key = _row_key(row)
            if key in self._rows:
                continue
            self._rows[key] = row
            queue.put_nowait(RowFinished(row=row, finished=len(self._rows), total=self.total))

    def _end(self, status: RunStatus, queue: asyncio.Queue[RunEvent]) -> None:
        self._accept(status.rows, queue)
        state: EndState = "failed"
        if status.status in ("completed", "cancelled"):
            state = status.status
        queue.put_nowait(RunEnded(state=state, rows=list(self._rows.values()), error=status.error))

    async def _pump(self, queue: asyncio.Queue[RunEvent]) -> None:
        follow = RETRY.copy(
            stop=lambda _: self._quiet_for() > self.adapter.retry_sec,
            before_sleep=self.adapter.not_answering(self.health),
        )
        first = True
        try:
            while True:  # each pass: catch up, then stream (or poll once) until it closes
                async for attempt in follow:
                    with attempt:
                        catch_up, first = not first, False
                        ended = await self._follow_once(queue, catch_up=catch_up)
                if ended:
                    return
        except _Transient as exc:
            error = f"worker unreachable for {self.adapter.retry_sec:g}s: {exc}"
        except WorkerError as exc:
            error = str(exc)
        except Exception as exc:  # an answer we cannot read: end now, not at the timeout
            log.exception("worker run %s: unreadable answer", self.run_id)
            error = f"unreadable worker answer: {type(exc).__name__}: {exc}"
        queue.put_nowait(RunEnded(state="failed", rows=list(self._rows.values()), error=error))

    def _quiet_for(self) -> float:
        return time.monotonic() - self._last_ok

    def _alive(self) -> None:
        """The worker answered: the retry window starts again, and the silence is over."""
        self._last_ok = time.monotonic()
        self.health.answering()

    async def _follow_once(self, queue: asyncio.Queue[RunEvent], *, catch_up: bool) -> bool:
        """One pass; True when the run has ended. Transient failures raise :class:`_Transient`."""
        # The event stream replays finished rows; a GET catch-up is for reconnects and
        # polling, so the first connection goes straight to the stream.
        if catch_up or not self._use_events:
            status = await self._get_status()
            self._accept(status.rows, queue)
            if status.status in TERMINAL_STATES:
                self._end(status, queue)
                return True
        if self._use_events:
            try:
                return await self._stream(queue)
            except _NoEventStream:
                log.info(
                    "worker has no event stream; polling every %.2fs",
                    self.adapter.poll_interval_sec,
                )
                self._use_events = False
                return False  # the next pass polls
        await asyncio.sleep(self.adapter.poll_interval_sec)
        return False

    async def _get_status(self) -> RunStatus:
        response = await self.adapter.call("GET", f"/runs/{self.run_id}")
        if response.status_code >= 500:
            raise _Transient(_detail(response))
        if response.status_code >= 400:
            raise WorkerError(f"worker lost run {self.run_id}: {_detail(response)}")
        self._alive()
        status = RunStatus.model_validate(response.json())
        self.health.running = status.progress.running
        self.health.phases = dict(status.phases)
        return status

    async def _stream(self, queue: asyncio.Queue[RunEvent]) -> bool:
        """Follow the event stream; True when the run ended, False when the stream just closed."""
        connected = False
        try:
            async with aconnect_sse(
                self.adapter.client,
                "GET",
                f"/runs/{self.run_id}/events",
                timeout=httpx.Timeout(None, connect=5.0),
            ) as source:
                response = source.response
                content_type = response.headers.get("content-type", "")
                if response.status_code in (404, 405, 406, 501) or (
                    response.status_code < 400 and "text/event-stream" not in content_type
                ):
                    raise _NoEventStream
                if response.status_code in TRANSIENT_STATUS or response.status_code >= 500:
                    raise _Transient(f"event stream HTTP {response.status_code}")
                if response.status_code >= 400:
                    await response.aread()
                    raise WorkerError(f"worker refused the event stream: {_detail(response)}")
                connected = True
                self._alive()
                async for event in source.aiter_sse():
                    self._alive()
                    if event.data and self._dispatch(event.event, event.data, queue):
                        return True
        except TRANSIENT_ERRORS as exc:
            if connected:  # the worker was there until the stream dropped (keepalives are not
                self._last_ok = time.monotonic()  # events, so this stands in for the last one)
            raise _Transient(f"event stream: {type(exc).__name__}: {exc}") from exc
        return False

    def _dispatch(self, event: str, payload: str, queue: asyncio.Queue[RunEvent]) -> bool:
        try:
            data = json.loads(payload)
        except json.JSONDecodeError:
            log.warning("worker run %s: undecodable %s event ignored", self.run_id, event)
            return False
        if event == EVENT_ROW and isinstance(data, dict) and isinstance(data.get("row"), dict):
            self._accept([data["row"]], queue)
            self._count_running(data.get("progress"))
            self.health.phases.pop(str(data.get("trial_key")), None)
        elif event == EVENT_STATUS and isinstance(data, dict):
            self._count_running(data.get("progress"))
            phases = data.get("phases")
            if isinstance(phases, dict):
                self.health.phases = _phases(phases)
        elif event == EVENT_PHASE and isinstance(data, dict):
            self.health.phases.update(_phases({str(data.get("trial_key")): data}))
        elif event == EVENT_END and isinstance(data, dict):
            self._end(RunStatus.model_validate(data), queue)
            return True
        return False

    def _count_running(self, progress: object) -> None:
        if isinstance(progress, dict) and isinstance(progress.get("running"), int):
            self.health.running = progress["running"]

    # -- cancelling --------------------------------------------------------------------------

    async def cancel(self) -> None:
        """Every caller waits for the one cancel request (the worker answers once the run has
        stopped), so none returns while the run may still be running."""
        if self._cancelling is None:
            self._cancelling = asyncio.ensure_future(self._cancel())
        await asyncio.shield(self._cancelling)

    async def _cancel(self) -> None:
        try:
            async for attempt in RETRY.copy(stop=stop_after_attempt(20)):
                with attempt:
                    response = await self.adapter.call(
                        "POST", f"/runs/{self.run_id}/cancel", timeout=5.0
                    )
        except _Transient:
            log.warning("could not reach the worker to cancel run %s", self.run_id)
            return
        if response.status_code >= 400 and response.status_code != 409:
            log.warning("worker refused to cancel run %s: %s", self.run_id, _detail(response))
