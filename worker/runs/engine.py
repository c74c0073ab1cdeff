"""The worker engine: run store + one asyncio scheduler + run events. Used by the HTTP service
and, in-process, by ``skillsbench-agentbeats run``.

Scheduling: every run has a driver task and a spawner that starts a task for each unfinished
trial once it holds a slot of one semaphore shared by all runs (the worker's trial concurrency),
so a queued trial costs nothing and cancelling a run is O(trials). A trial that fails with a retried failure kind
is tried again after a backoff, with a fresh trial id and folder. A run ends ``completed`` when
every trial has its row (failed trials included), or ``cancelled``.

Crash safety: every state change is stored before the engine goes on: a trial's with one journal
line (O(1), worker/runs/store.py), a run's (submit, end, resume) by rewriting the run document, which
also compacts the journal. On start, runs that were not
finished are resumed: finished trials keep their rows, trials that were running are re-run.
What the crashed attempts left is removed first: the host processes they recorded (killed only
if pid, start time and boot still match) and their sandbox folders.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal

from worker.acp.host_process import ProcessIdentity, started_hook
from worker.agents.base import Agent
from worker.agents.registry import load_plugins, resolve_agent
from worker.api import EVENT_END, EVENT_ROW, EVENT_STATUS, Progress, RunRequest, RunStatus, RunTask
from worker.core.failures import FailureKind
from worker.executors import Executor, make_executor
from worker.runs import status
from worker.runs.catalog import TaskCatalog
from worker.runs.events import KEEPALIVE, Event, RunEvents, row_event
from worker.runs.intake import Intake
from worker.runs.meta import ProofSettings
from worker.runs.proof import write_proof
from worker.runs.records import (
    AttemptRecord,
    HostProcessRecord,
    RunRecord,
    TrialRecord,
    settle,
)
from worker.runs.recovery import Recovery
from worker.runs.settings import EngineSettings
from worker.runs.store import RunStore
from worker.sandbox.failures import FirstStarts
from worker.trial import TrialOutcome, TrialPlan
from worker.trial_record.paths import RESULT_FILE
from worker.trial_record.public_row import build_row, new_trial_id, trial_id_suffixes
from worker.trial_record.trajectory import utc_now

__all__ = ["KEEPALIVE", "Engine", "EngineSettings", "RunNotFound"]

log = logging.getLogger(__name__)

CANCEL_WAIT_SEC = 30.0
# Closing the unfinished trials of a run yields to the event loop after this many rows, so that a
# 10,000-trial cancel never holds the loop for long.
FINALIZE_BATCH = 200


class RunNotFound(KeyError):
    pass


class Engine:
    def __init__(self, settings: EngineSettings) -> None:
        if settings.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.settings = settings
        self.store = RunStore(settings.jobs_dir)
        self.catalog = TaskCatalog(settings.tasks_dir)
        self.proof = settings.proof or ProofSettings.from_env(settings.jobs_dir)
        self.executor: Executor = make_executor(settings.executor, settings.executor_options)
        # This worker's identity for its sandboxes (SandboxSpec.owner): its jobs folder, so a
        # restarted worker finds what its killed predecessor left.
        folder = str(settings.jobs_dir.resolve())
        self.owner = hashlib.sha256(folder.encode()).hexdigest()[:16]
        self._runs: dict[str, RunRecord] = {}
        self._slots = asyncio.Semaphore(settings.concurrency)
        self._drivers: dict[str, asyncio.Task[None]] = {}
        self._trial_tasks: dict[str, set[asyncio.Task[None]]] = {}
        self._run_tasks: dict[str, dict[str, RunTask]] = {}  # run id -> task id -> its RunTask
        self._events = RunEvents()
        self._intake = Intake(settings, self.catalog)
        self._recovery = Recovery(settings, self.store, self.executor, self.owner)
        self._first_starts: dict[str, FirstStarts] = {}  # per run: one failed build per task
        self._closing = False
        self._saves: set[asyncio.Task[None]] = set()

    # ---- lifecycle -------------------------------------------------------------------------

    async def start(self, *, resume: bool = True) -> None:
        """Load the store and resume every run that was not finished (ExecutorError when the
        executor cannot run trials: no cluster, a node of another version)."""
        self.settings.jobs_dir.mkdir(parents=True, exist_ok=True)
        await self.executor.start()
        # The agent kinds' modules, imported now rather than inside the first request (an
        # import on the event loop held it for a second and more).
        await asyncio.to_thread(load_plugins)
        if not resume:
            return
        for run in await self._recovery.load():
            self._runs[run.run_id] = run
            if run.terminal:
                continue
            if await self._recovery.resume(run):
                self._launch(run)
            else:
                await self._finalize(run)
        settle()  # the loaded runs' records live as long as the worker

    def _save_soon(self, run: RunRecord, trial: TrialRecord) -> None:
        task = asyncio.ensure_future(self.store.save_trial(run, trial))
        self._saves.add(task)
        task.add_done_callback(self._saves.discard)

    async def close(self) -> None:
        """Stop working without recording anything as cancelled: a restart resumes the runs."""
        self._closing = True
        tasks = [*self._drivers.values()]
        for group in self._trial_tasks.values():
            tasks.extend(group)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=CANCEL_WAIT_SEC)
        await self.executor.close()

    # ---- runs ------------------------------------------------------------------------------

    def prepare(self, request: RunRequest) -> Agent:
        """Check a request before accepting it: UnknownTask, or ValueError naming the problem
        (:class:`~worker.runs.admission.Rejected` with its field for the rules its rows will meet)."""
        return self._intake.prepare(request)

    async def submit(self, request: RunRequest) -> RunRecord:
        # Checking the request (task folders, one probe row per task) and building up to
        # 10,000 trial records is CPU and disk work: done off the event loop.
        run = await asyncio.to_thread(self._intake.new_run, request)
        settle()
        self._runs[run.run_id] = run
        await self.store.save(run)
        self._launch(run)
        return run

    def get(self, run_id: str) -> RunRecord:
        try:
            return self._runs[run_id]
        except KeyError:
            raise RunNotFound(run_id) from None

    def runs(self) -> list[RunRecord]:
        return list(self._runs.values())

    async def cancel(self, run_id: str) -> RunRecord:
        """Stop the run within seconds; unfinished trials get worker_cancelled rows."""
        run = self.get(run_id)
        if run.terminal:
            return run
        run.cancel_requested = True
        run.updated_at = utc_now()
        await self.store.save_fields(run, ["cancel_requested"])
        for task in list(self._trial_tasks.get(run_id, ())):
            task.cancel()
        driver = self._drivers.get(run_id)
        if driver is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(driver), CANCEL_WAIT_SEC)
        if not run.terminal:  # no driver (or it is stuck): finish the bookkeeping here
            await self._finalize(run)
        return run

    async def wait(self, run_id: str) -> RunRecord:
        """Until the run is terminal."""
        driver = self._drivers.get(run_id)
        if driver is not None:
            await asyncio.shield(driver)
        return self.get(run_id)

    # ---- status and events -----------------------------------------------------------------

    @staticmethod
    def progress(run: RunRecord) -> Progress:
        return status.progress(run)

    def status(self, run: RunRecord, *, with_rows: bool = True) -> RunStatus:
        return RunStatus.model_validate(self.status_doc(run, with_rows=with_rows))

    def status_doc(self, run: RunRecord, *, with_rows: bool = True) -> dict[str, Any]:
        """:meth:`status` as JSON, built in O(trials) (worker/runs/status.py)."""
        return status.status_doc(run, with_rows=with_rows)

    async def events(
        self, run_id: str, *, keepalive_sec: float | None = None
    ) -> AsyncIterator[Event]:
        """Status first, a ``row`` per finished trial (past ones replayed), ``end`` when terminal.

        With ``keepalive_sec``, a ``("keepalive", {})`` event is yielded after that long idle.
        """
        run = self.get(run_id)
        async with contextlib.aclosing(
            self._events.stream(run, keepalive_sec=keepalive_sec)
        ) as stream:
            async for event in stream:
                yield event

    # ---- scheduling ------------------------------------------------------------------------

    def _launch(self, run: RunRecord) -> None:
        self._drivers[run.run_id] = asyncio.create_task(self._drive(run), name=f"run {run.run_id}")

    async def _drive(self, run: RunRecord) -> None:
        if run.cancel_requested:
            await self._finalize(run)
            return
        # A trial gets its task only once it holds a slot of the worker's concurrency, so a
        # queued trial costs nothing to cancel however many there are (O(trials) in all).
        group: set[asyncio.Task[None]] = set()
        self._trial_tasks[run.run_id] = group
        self._track(
            run,
            group,
            asyncio.create_task(self._spawn(run, group), name=f"run {run.run_id} spawner"),
        )
        while group:
            await asyncio.wait(list(group))
        if self._closing:
            return
        await self._finalize(run)

    async def _spawn(self, run: RunRecord, group: set[asyncio.Task[None]]) -> None:
        """Start the run's unfinished trials one by one, each when a slot is free."""
        for trial in list(run.trials.values()):
            if trial.state == "finished":
                continue
            await self._slots.acquire()
            if run.cancel_requested or self._closing:
                self._slots.release()
                return
            task = asyncio.create_task(self._run_one(run, trial), name=f"trial {trial.key}")
            self._track(run, group, task, holds_slot=True)

    def _track(
        self,
        run: RunRecord,
        group: set[asyncio.Task[None]],
        task: asyncio.Task[None],
        *,
        holds_slot: bool = False,
    ) -> None:
        """Keep ``task`` in the run's group until it ends; then free its slot (even when it was
        cancelled before it started) and record a crash."""
        group.add(task)

        def done(task: asyncio.Task[None]) -> None:
            group.discard(task)
            if holds_slot:
                self._slots.release()
            if not task.cancelled() and task.exception() is not None:
                exc = task.exception()
                log.error("trial task of run %s crashed: %r", run.run_id, exc)
                run.error = f"internal error: {exc!r}"

        task.add_done_callback(done)

    async def _set_running(self, run: RunRecord) -> None:
        if run.status == "queued":
            run.status = "running"
            run.updated_at = utc_now()
            await self.store.save_fields(run, ["status"])
            self._events.publish(run.run_id, (EVENT_STATUS, self.status_doc(run, with_rows=False)))

    async def _run_one(self, run: RunRecord, trial: TrialRecord) -> None:
        """One trial, holding a slot the spawner took for it (its done callback frees it)."""
        run_task = self._run_task(run, trial.task_id)
        if run.cancel_requested or self._closing:
            return
        while True:
            outcome = await self._attempt(run, trial, run_task)
            attempts = len(trial.attempts)
            if outcome is not None and self.settings.retry.should_retry(outcome.failure, attempts):
                assert trial.current is not None
                trial.current.outcome = "retried"
                trial.state = "queued"
                await self.store.save_trial(run, trial)
                log.warning(
                    "trial %s failed (%s), retrying: %s",
                    trial.key,
                    outcome.failure,
                    outcome.error,
                )
                await asyncio.sleep(self.settings.retry.backoff_sec(attempts))
                continue
            break
        if outcome is None:
            await self.store.save_trial(run, trial)
            self._events.publish(run.run_id, (EVENT_ROW, row_event(run, trial)))
            return
        if outcome.resource_changes:
            limits = run.worker_meta.setdefault("resource_limits", {})
            limits.setdefault("changed", {})[trial.task_id] = outcome.resource_changes
        trial.state = "finished"
        trial.row = outcome.row
        trial.failure = outcome.failure.value if outcome.failure else None
        assert trial.current is not None
        trial.current.outcome = "finished"
        trial.result_path = f"{trial.current.trial_dir}/{RESULT_FILE}"
        run.updated_at = utc_now()
        await self.store.save_trial(run, trial)
        self._events.publish(run.run_id, (EVENT_ROW, row_event(run, trial)))

    async def _attempt(
        self, run: RunRecord, trial: TrialRecord, run_task: RunTask
    ) -> TrialOutcome | None:
        """One attempt (cancellation propagates; the driver records it)."""
        try:
            task = self.catalog.get(trial.task_id)
            agent = resolve_agent(run.agent)
        except ValueError as exc:  # the task folder or agent went away since the run was accepted
            self._close_trial(run, trial, FailureKind.WORKER_ERROR, str(exc))
            return None
        trial_id = new_trial_id(trial.task_id)
        trial_dir = self.store.trial_dir(run.run_id, trial_id)
        trial.attempts.append(
            AttemptRecord(
                trial_id=trial_id,
                trial_dir=self.store.relative(trial_dir),
                started_at=utc_now(),
            )
        )
        trial.state = "running"
        run.updated_at = utc_now()
        await self.store.save_trial(run, trial)
        await self._set_running(run)
        plan = TrialPlan(
            run_id=run.run_id,
            key=trial.key,
            instance=trial.instance,
            attempt=len(trial.attempts),
            trial_id=trial_id,
            trial_dir=trial_dir,
            task=task,
            run_task=run_task,
            request=run.request,
            agent=agent,
            environment=self.settings.environment,
            prebuilt=self.settings.prebuilt,
            owner=self.owner,
            proxies=self.settings.proxies,
            caps=self.settings.caps,
            first_starts=self._first_starts.setdefault(run.run_id, FirstStarts()),
            resources=self.settings.resources,
        )
        attempt = trial.attempts[-1]

        def started(identity: ProcessIdentity) -> None:
            attempt.host_processes.append(
                HostProcessRecord(
                    pid=identity.pid, start_ticks=identity.start_ticks, boot_id=identity.boot_id
                )
            )
            self._save_soon(run, trial)

        token = started_hook.set(started)
        try:
            outcome = await self.executor.run(plan)
        finally:
            started_hook.reset(token)
        current = trial.current
        assert current is not None
        current.finished_at = utc_now()
        current.failure = outcome.failure.value if outcome.failure else None
        current.error = outcome.error
        current.reason = outcome.reason
        return outcome

    async def _finalize(self, run: RunRecord) -> None:
        if run.terminal:
            return
        kind = FailureKind.WORKER_CANCELLED if run.cancel_requested else FailureKind.WORKER_ERROR
        message = ("the run was cancelled" if run.cancel_requested else run.error) or (
            "the trial did not finish"
        )
        transport = _transport(run.agent)
        progress = self.progress(run)  # kept up to date below: O(trials) in all
        rows: dict[str, dict[str, Any]] = {}
        now = utc_now()
        closed = 0
        suffixes = trial_id_suffixes()
        for trial in list(run.trials.values()):
            if trial.state == "finished":
                continue
            progress.running -= trial.state == "running"
            self._close_trial(
                run, trial, kind, message, transport=transport, rows=rows, now=now, ids=suffixes
            )
            progress.finished += 1
            if self._events.listening(run.run_id):  # no event to build when nobody listens
                self._events.publish(run.run_id, (EVENT_ROW, row_event(run, trial, progress)))
            closed += 1
            if closed % FINALIZE_BATCH == 0:
                await asyncio.sleep(0)  # let other requests in
        if run.terminal:  # finished by a concurrent _finalize while this one yielded
            return
        run.status = "cancelled" if run.cancel_requested else "completed"
        if run.error and not run.cancel_requested:
            run.status = "failed"
        try:
            refs = await asyncio.to_thread(write_proof, run, self.settings.jobs_dir, self.proof)
            run.private_proof_refs = refs["_private_proof_refs"]
            run.private_proof_manifest = refs["_private_proof_manifest"]
        except OSError as exc:
            log.error("private proof of run %s not written: %s", run.run_id, exc)
            run.error = run.error or f"private proof not written: {exc}"
        run.updated_at = utc_now()
        await self.store.save(run)  # the whole run, a batch of trials at a time; compacts
        if self._events.listening(run.run_id):
            self._events.publish(run.run_id, (EVENT_END, self.status_doc(run)))
        self._trial_tasks.pop(run.run_id, None)
        self._first_starts.pop(run.run_id, None)
        self._run_tasks.pop(run.run_id, None)
        settle()

    def _run_task(self, run: RunRecord, task_id: str) -> RunTask:
        tasks = self._run_tasks.get(run.run_id)
        if tasks is None:
            tasks = self._run_tasks[run.run_id] = {t.task_id: t for t in run.request.tasks}
        return tasks[task_id]

    def _close_trial(
        self,
        run: RunRecord,
        trial: TrialRecord,
        kind: FailureKind,
        message: str,
        *,
        transport: str | None = None,
        rows: dict[str, dict[str, Any]] | None = None,
        now: str | None = None,
        ids: Iterator[str] | None = None,
    ) -> None:
        """Give an unfinished trial its failure row (keeping its last trial id). A run whose
        rows cannot be built (stored by a worker that admitted it) gets its error instead.

        ``rows``: the rows already built by this close, per task; a trial of the same task gets
        a copy with its own trial id (one row validation per task, not per trial)."""
        run_task = self._run_task(run, trial.task_id)
        now = now or utc_now()
        current = trial.current
        outcome: Literal["cancelled", "finished"] = (
            "cancelled" if kind == FailureKind.WORKER_CANCELLED else "finished"
        )
        if current is None or current.outcome not in ("running", "retried"):
            trial_id = new_trial_id(trial.task_id, next(ids) if ids is not None else None)
            current = AttemptRecord.model_construct(  # all fields known valid: cheap per trial
                trial_id=trial_id,
                trial_dir=self.store.relative_trial_dir(run.run_id, trial_id),
                started_at=now,
                finished_at=now,
                outcome=outcome,
                failure=kind.value,
                error=message,
                reason=f"{kind.value}: {message}",
                # Given, not defaulted: pydantic inspects a default_factory's signature on every
                # model_construct (~0.2 ms), which made a 10,000-trial cancel take seconds.
                host_processes=[],
            )
            trial.attempts.append(current)
        else:
            current.outcome = outcome
            current.finished_at = current.finished_at or now
            current.failure = kind.value
            current.error = message
            current.reason = f"{kind.value}: {message}"
        trial.state = "finished"
        trial.failure = kind.value
        built = rows.get(trial.task_id) if rows is not None else None
        if built is not None:
            trial.row = {**built, "trial_id": current.trial_id}  # the key keeps its place
            return
        try:
            trial.row = build_row(
                run.request,
                run_task,
                trial_id=current.trial_id,
                agent_transport=transport or _transport(run.agent),
                reward=None,
                failure=kind,
                time_used=None,
            )
        except ValueError as exc:  # pydantic's ValidationError is one
            run.error = run.error or f"rows cannot be built: {str(exc).splitlines()[0]}"
            return
        if rows is not None:
            rows[trial.task_id] = trial.row


def _transport(spec: str) -> str:
    """The row's agent_transport: the agent's kind (the spec's prefix if it no longer resolves)."""
    try:
        return resolve_agent(spec).kind
    except ValueError:
        return spec.split(":", 1)[0]
