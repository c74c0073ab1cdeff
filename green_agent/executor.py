"""The assessment executor: request in, worker run followed, one envelope out.

The A2A task ends ``completed`` when the worker ran the assessment, even when trials failed:
per-task failures are rows (``score_eligible: false`` with a reviewed category), because the
gateway drops the artifacts of a task that ends ``failed``. It ends ``failed`` when nothing was
scored because of the worker (it refused or never started the run, stayed unreachable, or every
trial is a worker failure): such a result measures the worker, not the agent, and must never be
published as the agent's score.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from a2a.helpers import new_data_part, new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, TaskState
from a2a.utils.errors import InvalidParamsError

from green_agent.adapters.base import (
    EndState,
    RowFinished,
    RunEnded,
    WorkerAdapter,
    WorkerHealth,
    WorkerRun,
)
from green_agent.adapters.http import WorkerError
from green_agent.progress import final_summary, heartbeat, plain_text, row_summary
from green_agent.request import RequestError, parse_request
from green_agent.results import PublicResults, worker_failure
from green_agent.routing import route_participant
from green_agent.selection import Selection, select
from green_agent.settings import GreenSettings
from leaderboard.rows import FailureCategory
from worker.api import RunRequest

log = logging.getLogger(__name__)

RESULT_ARTIFACT_NAME = "Result"

# Trials the worker never reported get the category of how the run ended.
GAP_CATEGORY: dict[EndState, FailureCategory] = {
    "completed": "worker_error",
    "failed": "worker_error",
    "cancelled": "worker_cancelled",
    "timeout": "worker_timeout",
}


class _Assessment:
    """One running assessment. Once cancelled, the executor emits nothing more for it."""

    def __init__(self, updater: TaskUpdater, total: int) -> None:
        self.updater = updater
        self.run: WorkerRun | None = None
        self.cancelled = False
        self.finished = 0
        self.total = total
        self.health = WorkerHealth()

    def message(self, text: str) -> Message:
        return self.updater.new_agent_message([new_text_part(plain_text(text))])

    async def working(self, text: str) -> None:
        if not self.cancelled:
            await self.updater.update_status(TaskState.TASK_STATE_WORKING, self.message(text))


class AssessmentExecutor(AgentExecutor):
    def __init__(self, settings: GreenSettings, adapter: WorkerAdapter) -> None:
        self.settings = settings
        self.adapter = adapter
        self._active: dict[str, _Assessment] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        try:
            request = parse_request(context.get_user_input())
            selection = select(request.config)
        except RequestError as exc:
            log.info("invalid assessment request: %s", exc)
            raise InvalidParamsError(message=str(exc)) from None
        assert context.message is not None
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        total = len(selection.tasks) * selection.num_instances
        assessment = _Assessment(TaskUpdater(event_queue, task.id, task.context_id), total)
        self._active[task.id] = assessment
        try:
            await self._assess(assessment, request.participants, selection)
        finally:
            self._active.pop(task.id, None)

    async def _assess(
        self, assessment: _Assessment, participants: dict[str, str], selection: Selection
    ) -> None:
        updater = assessment.updater
        total = len(selection.tasks) * selection.num_instances
        await updater.start_work(
            assessment.message(
                f"Assessment accepted: {total} trial(s) from task set {selection.task_set} "
                f"(shard {selection.config['shard_index']} of {selection.config['num_shards']}), "
                f"worker: {self.adapter.kind}."
            )
        )
        run_request = RunRequest(
            participants={
                role: route_participant(role, url, self.settings)
                for role, url in participants.items()
            },
            config=selection.config,
            task_set=selection.task_set,
            task_set_digest=selection.task_set_digest,
            tasks=selection.tasks,
        )
        results = PublicResults(selection)
        rows, end_state, error = await self._run(assessment, run_request, results)
        if assessment.cancelled:
            return
        failure = None if self.adapter.kind == "mock" else worker_failure(rows, error)
        if failure is not None:
            log.warning("assessment failed: %s", failure)
            await updater.failed(assessment.message(f"Assessment failed: {failure}"))
            return
        result = results.envelope(selection.participant_id or participants["agent"], rows)
        await updater.add_artifact(
            [new_data_part(result)], name=RESULT_ARTIFACT_NAME, last_chunk=True
        )
        await updater.complete(assessment.message(final_summary(rows, end_state)))

    async def _run(
        self, assessment: _Assessment, run_request: RunRequest, results: PublicResults
    ) -> tuple[list[dict[str, Any]], EndState, str | None]:
        """The public rows, how the worker run ended, and the worker's error if it failed."""
        # From the first moment: a worker that does not answer the run request is said to be
        # retried, not left as minutes of silence.
        heartbeat = asyncio.create_task(self._heartbeat(assessment))
        try:
            return await self._start_and_follow(assessment, run_request, results)
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat

    async def _start_and_follow(
        self, assessment: _Assessment, run_request: RunRequest, results: PublicResults
    ) -> tuple[list[dict[str, Any]], EndState, str | None]:
        start = asyncio.ensure_future(self.adapter.start(run_request, assessment.health))
        try:
            run = await asyncio.shield(start)
        except asyncio.CancelledError:
            # The A2A task was cancelled while the run was being created: the worker may have
            # made it, so cancel it once it exists rather than leave it running unowned.
            with contextlib.suppress(Exception):
                await asyncio.shield((await start).cancel())
            raise
        except WorkerError as exc:
            log.error("worker could not start the run: %s", exc)
            # The worker's one line (e.g. which task images a build-less worker lacks and how to
            # provide them) reaches whoever follows the assessment, not only the green's log.
            await assessment.working(f"The worker did not start the run: {exc}")
            return results.missing_rows([], "worker_error"), "failed", str(exc)
        except Exception as exc:  # a broken worker answer: one line, never a traceback upstream
            log.exception("worker could not start the run")
            error = f"the worker's answer to the run request is unreadable: {exc}"
            return results.missing_rows([], "worker_error"), "failed", error
        assessment.run = run
        if assessment.cancelled:  # cancelled while the run was being created
            await run.cancel()
            return [], "cancelled", None
        await assessment.working(f"Worker run {run.run_id} started.")
        ended: RunEnded | None = None
        collected: list[dict[str, Any]] = []
        try:
            async with contextlib.aclosing(run.follow()) as events:
                async for event in events:
                    if isinstance(event, RowFinished):
                        collected.append(event.row)
                        assessment.finished = event.finished
                        public = results.row(event.row)
                        await assessment.working(row_summary(public, event.finished, event.total))
                    else:
                        ended = event
        except asyncio.CancelledError:
            await asyncio.shield(run.cancel())
            raise
        except Exception as exc:  # keep the rows we have; the rest become worker_error rows
            log.exception("following worker run %s failed", run.run_id)
            await run.cancel()
            ended = RunEnded(state="failed", rows=collected, error=f"{type(exc).__name__}: {exc}")
        if ended is None:
            ended = RunEnded(state="failed", error="the worker adapter ended without a result")
        if ended.error:
            log.warning("worker run %s ended %s: %s", run.run_id, ended.state, ended.error)
        rows = results.rows(ended.rows)
        rows += results.missing_rows(rows, GAP_CATEGORY[ended.state])
        return results.in_task_order(rows), ended.state, ended.error

    async def _heartbeat(self, assessment: _Assessment) -> None:
        """Every ``heartbeat_sec``: what the assessment is waiting for (keeps the gateway's
        read timeout away, and tells a person following it why nothing else is said)."""
        started = time.monotonic()
        while True:
            await asyncio.sleep(self.settings.heartbeat_sec)
            await assessment.working(
                heartbeat(
                    assessment.health,
                    started=assessment.run is not None,
                    finished=assessment.finished,
                    total=assessment.total,
                    elapsed=time.monotonic() - started,
                )
            )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id = context.task_id or ""
        assessment = self._active.get(task_id)
        if assessment is None:
            updater = TaskUpdater(event_queue, task_id, context.context_id or "")
            await updater.cancel(updater.new_agent_message([new_text_part("Cancelled.")]))
            return
        assessment.cancelled = True
        await assessment.updater.cancel(assessment.message("Assessment cancelled on request."))
        if assessment.run is not None:
            log.info("cancelling worker run %s for A2A task %s", assessment.run.run_id, task_id)
            await assessment.run.cancel()
