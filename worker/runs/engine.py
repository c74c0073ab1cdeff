"""The worker engine: the public front over the run store, one asyncio scheduler and the run
events. Used by the HTTP service and, in-process, by ``skillsbench-agentbeats run``.

Its parts, each in its module of ``worker/runs/``:

- ``intake.py``: a request's checks before it is accepted and its new run record;
- ``scheduler.py``: every run's driver, the slots of the worker's trial concurrency, a trial's
  attempts and retries, and a run's end (``closing.py``: the failure rows of the trials that did
  not finish, the final status and the private proof);
- ``events.py`` and ``status.py``: the per-run event stream and the status document;
- ``recovery.py``: at start, resuming the runs a stopped worker left unfinished;
- ``store.py``: where every state change is stored before the engine goes on.

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
from collections.abc import AsyncIterator
from typing import Any

from worker.agents.base import Agent
from worker.agents.registry import load_plugins
from worker.api import Progress, RunRequest, RunStatus
from worker.executors import Executor, make_executor
from worker.runs import status
from worker.runs.catalog import TaskCatalog
from worker.runs.events import KEEPALIVE, Event, RunEvents
from worker.runs.intake import Intake
from worker.runs.meta import ProofSettings
from worker.runs.records import RunRecord, settle
from worker.runs.recovery import Recovery, abandon_running
from worker.runs.scheduler import Scheduler
from worker.runs.settings import EngineSettings
from worker.runs.store import RunStore
from worker.trial_record.trajectory import utc_now

__all__ = ["KEEPALIVE", "Engine", "EngineSettings", "RunBusy", "RunNotFound"]

log = logging.getLogger(__name__)


class RunNotFound(KeyError):
    pass


class RunBusy(RuntimeError):
    """Another live process drives the run (its pid, 0 when it cannot be told)."""

    def __init__(self, run_id: str, pid: int) -> None:
        who = f"process {pid}" if pid else "another process"
        super().__init__(f"run {run_id} is being run by {who}")
        self.pid = pid


# How long stopping (an interrupt) waits for the run documents to be stored (a full disk).
STOP_SAVE_SEC = 10.0


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
        self._events = RunEvents()
        self._intake = Intake(settings, self.catalog)
        self._scheduler = Scheduler(
            settings,
            store=self.store,
            catalog=self.catalog,
            executor=self.executor,
            events=self._events,
            proof=self.proof,
            owner=self.owner,
        )
        self._recovery = Recovery(settings, self.store, self.executor, self.owner)

    # ---- lifecycle -------------------------------------------------------------------------

    async def start(self, *, resume: bool = True, reap: bool | None = None) -> None:
        """Load the store and resume every run that was not finished and that no other live
        process drives (ExecutorError when the executor cannot run trials: no cluster, a node
        of another version). ``reap`` (default: ``resume``): first remove what dead processes'
        sandboxes left (mounts, cgroups, containers), when no other live process uses the
        jobs folder."""
        self.settings.jobs_dir.mkdir(parents=True, exist_ok=True)
        sole = self.store.claim_folder()
        try:
            await self.executor.start()
            # The agent kinds' modules, imported now rather than inside the first request (an
            # import on the event loop held it for a second and more).
            await asyncio.to_thread(load_plugins)
            if not resume:
                if sole and (reap if reap is not None else resume):
                    await self._recovery.reap(active=set())
                return
            runs = await self._recovery.load(reap=sole and reap is not False)
        finally:
            self.store.share_folder()
        for run in runs:
            self._runs[run.run_id] = run
            if run.terminal:
                continue
            holder = self.store.lock_run(run.run_id)
            if holder is not None:
                log.warning(
                    "run %s is being run by process %s: not resumed here", run.run_id, holder
                )
                continue
            await self._resume(run)
        settle()  # the loaded runs' records live as long as the worker

    async def _resume(self, run: RunRecord) -> None:
        if await self._recovery.resume(run):
            self._scheduler.launch(run)
        else:
            await self._scheduler.finalize(run)

    async def resume(self, run_id: str) -> RunRecord:
        """Finish a stored run an earlier process left unfinished (``run --resume``): what its
        attempts left is removed, they are run again, finished trials keep their rows.
        RunNotFound; RunBusy when a live process still runs it; a finished run as it is."""
        try:
            run = await asyncio.to_thread(self.store.load, run_id)
        except KeyError:
            raise RunNotFound(run_id) from None
        self._runs[run.run_id] = run
        if run.terminal:
            return run
        holder = self.store.lock_run(run.run_id)
        if holder is not None:
            raise RunBusy(run.run_id, holder)
        await self._resume(run)
        return run

    async def close(self) -> None:
        """Stop working without recording anything as cancelled: a restart resumes the runs."""
        await self._scheduler.close()
        await self.executor.close()
        self.store.release()

    async def stop(self, why: str) -> list[RunRecord]:
        """Stop every run here without ending it (an interrupted ``run``): the trials are
        cancelled (their sandboxes stopped and removed), the attempts they were in stored as
        ``abandoned`` (``why``), and the runs stay unfinished for a later resume; those runs."""
        await self._scheduler.close()
        stopped = []
        for run in self._runs.values():
            if run.terminal:
                continue
            stopped.append(run)
            if abandon_running(run, why):
                try:
                    await asyncio.wait_for(self.store.save(run), STOP_SAVE_SEC)
                except (TimeoutError, OSError) as exc:  # the resume marks them all the same
                    log.warning("run %s: its stop not stored: %r", run.run_id, exc)
        await self.executor.close()
        self.store.release()
        return stopped

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
        self.store.lock_run(run.run_id)  # new: nobody else has it
        self._scheduler.launch(run)
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
        await self._scheduler.stop(run)
        return run

    async def wait(self, run_id: str) -> RunRecord:
        """Until the run is terminal."""
        await self._scheduler.wait(run_id)
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
        stream = self._events.stream(run, keepalive_sec=keepalive_sec)
        async with contextlib.aclosing(stream):
            async for event in stream:
                yield event
