"""Running the trials of runs: one asyncio scheduler for all of them.

Every run has a driver task and a spawner that starts a task for each unfinished trial once it
holds a slot of one semaphore shared by all runs (the worker's trial concurrency), so a queued
trial costs nothing and cancelling a run is O(trials). A trial that fails with a retried failure
kind is tried again after a backoff, with a fresh trial id and folder. A run ends ``completed``
when every trial has its row (failed trials included), or ``cancelled``: the driver finalizes it
(worker/runs/closing.py), stores it and sends its ``end`` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from worker.acp.host_process import ProcessIdentity, started_hook
from worker.agents.registry import resolve_agent
from worker.api import EVENT_END, EVENT_PHASE, EVENT_ROW, EVENT_STATUS, RunTask
from worker.core.failures import FailureKind
from worker.executors import Executor
from worker.runs import status
from worker.runs.catalog import TaskCatalog
from worker.runs.closing import agent_transport, close_trial, end_run
from worker.runs.events import RunEvents, row_event
from worker.runs.meta import ProofSettings
from worker.runs.records import AttemptRecord, HostProcessRecord, RunRecord, TrialRecord, settle
from worker.runs.settings import EngineSettings
from worker.runs.store import RunStore
from worker.sandbox.failures import FirstStarts
from worker.trial import TrialOutcome, TrialPlan
from worker.trial.progress import phase_hook
from worker.trial_record import harbor
from worker.trial_record.paths import RESULT_FILE
from worker.trial_record.public_row import new_trial_id, trial_id_suffixes
from worker.trial_record.trajectory import utc_now

log = logging.getLogger(__name__)

CANCEL_WAIT_SEC = 30.0
# Closing the unfinished trials of a run yields to the event loop after this many rows, so that a
# 10,000-trial cancel never holds the loop for long.
FINALIZE_BATCH = 200
# Attempts of one trial that may end for a full jobs folder (each tried once space returned).
MAX_DISK_FULL_ATTEMPTS = 20


class Scheduler:
    def __init__(
        self,
        settings: EngineSettings,
        *,
        store: RunStore,
        catalog: TaskCatalog,
        executor: Executor,
        events: RunEvents,
        proof: ProofSettings,
        owner: str,
    ) -> None:
        self.settings = settings
        self.store = store
        self.catalog = catalog
        self.executor = executor
        self.events = events
        self.proof = proof
        self.owner = owner  # this worker's sandboxes' owner (SandboxSpec.owner)
        self._slots = asyncio.Semaphore(settings.concurrency)
        self._drivers: dict[str, asyncio.Task[None]] = {}
        self._trial_tasks: dict[str, set[asyncio.Task[None]]] = {}
        self._run_tasks: dict[str, dict[str, RunTask]] = {}  # run id -> task id -> its RunTask
        self._first_starts: dict[str, FirstStarts] = {}  # per run: one failed build per task
        self._closing = False
        self._saves: set[asyncio.Task[None]] = set()

    # ---- a run's driver --------------------------------------------------------------------

    def launch(self, run: RunRecord) -> None:
        self._drivers[run.run_id] = asyncio.create_task(self._drive(run), name=f"run {run.run_id}")

    async def stop(self, run: RunRecord) -> None:
        """After the run's cancel was requested (and stored): cancel its trials, wait for its
        driver to finalize it (or finish the bookkeeping here when there is none, or it is stuck)."""
        for task in list(self._trial_tasks.get(run.run_id, ())):
            task.cancel()
        driver = self._drivers.get(run.run_id)
        if driver is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(driver), CANCEL_WAIT_SEC)
        if not run.terminal:
            await self.finalize(run)

    async def wait(self, run_id: str) -> None:
        """Until the run's driver is done (at once when it has none)."""
        driver = self._drivers.get(run_id)
        if driver is not None:
            await asyncio.shield(driver)

    async def close(self) -> None:
        """Stop every driver and trial without recording anything as cancelled."""
        self._closing = True
        tasks = [*self._drivers.values()]
        for group in self._trial_tasks.values():
            tasks.extend(group)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=CANCEL_WAIT_SEC)

    async def _drive(self, run: RunRecord) -> None:
        if run.cancel_requested:
            await self.finalize(run)
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
        await self.finalize(run)

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
            run.hold_status()
            run.status = "running"
            run.updated_at = utc_now()
            await self.store.save_fields(run, ["status"])
            self.events.publish(run.run_id, (EVENT_STATUS, status.status_doc(run, with_rows=False)))

    # ---- a trial ---------------------------------------------------------------------------

    async def _run_one(self, run: RunRecord, trial: TrialRecord) -> None:
        """One trial, holding a slot the spawner took for it (its done callback frees it)."""
        run_task = self._run_task(run, trial.task_id)
        if run.cancel_requested or self._closing:
            return
        while True:
            outcome = await self._attempt(run, trial, run_task)
            # Attempts that met a full jobs folder are the disk's: not counted against the
            # retries (bounded all the same, should space come and go for ever).
            full = sum(a.failure == FailureKind.JOBS_DISK_FULL.value for a in trial.attempts)
            attempts = len(trial.attempts) - full
            disk = outcome is not None and outcome.failure is FailureKind.JOBS_DISK_FULL
            if disk and full < MAX_DISK_FULL_ATTEMPTS:
                retry = True
            else:
                failure = outcome.failure if outcome is not None else None
                retry = outcome is not None and self.settings.retry.should_retry(failure, attempts)
            if retry:
                assert outcome is not None and trial.current is not None
                run.hold(trial)
                trial.current.outcome = "retried"
                trial.state = "queued"
                await self.store.save_trial(run, trial)
                log.warning(
                    "trial %s failed (%s), retrying: %s",
                    trial.key,
                    outcome.failure,
                    outcome.error,
                )
                self._phase(run, trial, "waiting_for_space" if disk else "waiting_to_retry")
                if disk:
                    await self.store.wait_for_space()  # the run is paused until then
                else:
                    await asyncio.sleep(self.settings.retry.backoff_sec(attempts))
                continue
            break
        if outcome is None:
            await self.store.save_trial(run, trial)
            run.clear_phase(trial.key)
            self.events.publish(run.run_id, (EVENT_ROW, row_event(run, trial)))
            return
        run.hold(trial)
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
        run.clear_phase(trial.key)  # its row is stored: `tasks` says finished
        self.events.publish(run.run_id, (EVENT_ROW, row_event(run, trial)))

    def _phase(self, run: RunRecord, trial: TrialRecord, phase: str) -> None:
        """The trial does ``phase`` now: kept for the status document, sent to listeners
        (told again, a phase keeps its start)."""
        if run.phase_of(trial.key) == phase:
            return
        told = run.set_phase(trial.key, phase, since=utc_now(), attempt=len(trial.attempts))
        if self.events.listening(run.run_id):
            event = {"run_id": run.run_id, "trial_key": trial.key, **told.model_dump()}
            self.events.publish(run.run_id, (EVENT_PHASE, event))

    async def _attempt(
        self, run: RunRecord, trial: TrialRecord, run_task: RunTask
    ) -> TrialOutcome | None:
        """One attempt (cancellation propagates; the driver records it)."""
        try:
            task = self.catalog.get(trial.task_id)
            agent = resolve_agent(run.agent)
        except ValueError as exc:  # the task folder or agent went away since the run was accepted
            run.hold(trial)
            close_trial(self.store, run, trial, run_task, FailureKind.WORKER_ERROR, str(exc))
            return None
        trial_id = new_trial_id(trial.task_id)
        trial_dir = self.store.trial_dir(run.run_id, trial_id)
        # Where Harbor's viewer looks for the run's trials (worker/trial_record/harbor.py).
        harbor.link_trial(
            self.store.run_dir(run.run_id),
            trial_id,
            harbor.job_config(
                run_id=run.run_id,
                runs_dir=self.store.runs_dir,
                agent_name=getattr(agent, "manifest_name", None) or agent.kind,
                environment=self.settings.environment,
            ),
        )
        run.hold(trial)
        trial.attempts.append(
            AttemptRecord(
                trial_id=trial_id,
                trial_dir=self.store.relative(trial_dir),
                started_at=utc_now(),
            )
        )
        trial.state = "running"
        run.updated_at = utc_now()
        self._phase(run, trial, "started")
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
        told = phase_hook.set(lambda phase: self._phase(run, trial, phase))
        try:
            outcome = await self.executor.run(plan)
        finally:
            phase_hook.reset(told)
            started_hook.reset(token)
        current = trial.current
        assert current is not None
        current.finished_at = utc_now()
        current.failure = outcome.failure.value if outcome.failure else None
        current.error = outcome.error
        current.reason = outcome.reason
        return outcome

    def _save_soon(self, run: RunRecord, trial: TrialRecord) -> None:
        task = asyncio.ensure_future(self.store.save_trial(run, trial))
        self._saves.add(task)
        task.add_done_callback(self._saves.discard)

    def _run_task(self, run: RunRecord, task_id: str) -> RunTask:
        tasks = self._run_tasks.get(run.run_id)
        if tasks is None:
            tasks = self._run_tasks[run.run_id] = {t.task_id: t for t in run.request.tasks}
        return tasks[task_id]

    # ---- a run's end -----------------------------------------------------------------------

    async def finalize(self, run: RunRecord) -> None:
        """End the run: its unfinished trials get failure rows (``worker_cancelled`` when its
        cancel was requested, else ``worker_error``), then its status, proof and ``end`` event."""
        if run.terminal:
            return
        kind = FailureKind.WORKER_CANCELLED if run.cancel_requested else FailureKind.WORKER_ERROR
        message = ("the run was cancelled" if run.cancel_requested else run.error) or (
            "the trial did not finish"
        )
        transport = agent_transport(run.agent)
        rows: dict[str, dict[str, Any]] = {}
        now = utc_now()
        closed: list[TrialRecord] = []
        suffixes = trial_id_suffixes()
        # Reported as stored until the run's end is: a restart meanwhile resumes the run, and
        # its rows and status are not taken back (worker/runs/records.py).
        run.hold_status()
        for trial in list(run.trials.values()):
            if trial.state == "finished":
                continue
            run.hold(trial)
            close_trial(
                self.store,
                run,
                trial,
                self._run_task(run, trial.task_id),
                kind,
                message,
                transport=transport,
                rows=rows,
                now=now,
                ids=suffixes,
            )
            closed.append(trial)
            if len(closed) % FINALIZE_BATCH == 0:
                await asyncio.sleep(0)  # let other requests in
        if run.terminal:  # finished by a concurrent finalize while this one yielded
            return
        await end_run(run, self.settings.jobs_dir, self.proof, self.store.wait_for_space)
        await self.store.save(run)  # the whole run, a batch of trials at a time; compacts
        for trial in closed:
            run.clear_phase(trial.key)
        if self.events.listening(run.run_id):  # no event to build when nobody listens
            progress = status.progress(run)
            progress.finished -= len(closed)
            for index, trial in enumerate(closed, 1):
                progress.finished += 1
                self.events.publish(run.run_id, (EVENT_ROW, row_event(run, trial, progress)))
                if index % FINALIZE_BATCH == 0:
                    await asyncio.sleep(0)
            self.events.publish(run.run_id, (EVENT_END, status.status_doc(run)))
        self._trial_tasks.pop(run.run_id, None)
        self._first_starts.pop(run.run_id, None)
        self._run_tasks.pop(run.run_id, None)
        self.store.unlock_run(run.run_id)  # ended and stored: nothing left to drive
        settle()
