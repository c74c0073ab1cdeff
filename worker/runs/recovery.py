"""Resuming after a crash, at the worker's start: the stored runs loaded, what the killed worker's
sandboxes left removed (sparing the runs about to resume), and each unfinished run made ready to
run again: its running trials queued, their attempts ``abandoned``, the host processes those
attempts recorded killed (only if pid, start time and boot still match) and their sandbox
folders removed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
from pathlib import Path

from worker.acp.host_process import ProcessIdentity, kill_if_same
from worker.executors import Executor
from worker.runs import status
from worker.runs.admission import Rejected, check_request
from worker.runs.records import RunRecord
from worker.runs.settings import EngineSettings
from worker.runs.store import RunStore
from worker.sandbox.base import sandbox_class
from worker.trial_record.trajectory import utc_now

log = logging.getLogger(__name__)


class Recovery:
    def __init__(
        self, settings: EngineSettings, store: RunStore, executor: Executor, owner: str
    ) -> None:
        self.settings = settings
        self.store = store
        self.executor = executor
        self.owner = owner  # this worker's sandboxes' owner (SandboxSpec.owner)

    async def load(self, *, reap: bool = True) -> list[RunRecord]:
        """Every readable stored run (an unreadable document is logged and skipped), after
        reaping (``reap``: no other live process uses the jobs folder) what this worker's
        sandboxes left of the runs that will not resume."""
        runs, problems = await asyncio.to_thread(self.store.load_all)
        for problem in problems:
            log.error("unreadable run document skipped: %s", problem)
        if reap:
            await self.reap(active={run.run_id for run in runs if not run.terminal})
        return runs

    async def resume(self, run: RunRecord) -> bool:
        """Make an unfinished run ready to be launched again (stored, its crashed attempts'
        leftovers removed). False when it cannot finish: its ``error`` says why, and it is to be
        finalized instead."""
        try:
            check_request(run.request)
        except Rejected as exc:  # stored by an older worker that admitted it: end it now
            log.error("run %s cannot finish (%s); ending it", run.run_id, exc)
            run.error = f"the run's request is not admissible: {exc}"
            return False
        abandon_running(run, "the worker stopped during this attempt")
        await self.store.save(run)
        await asyncio.to_thread(self._clean_abandoned, run)
        await self._run_cleanup(run.run_id)
        log.info("resuming run %s (%d trials left)", run.run_id, status.unfinished(run))
        return True

    def _clean_abandoned(self, run: RunRecord) -> None:
        """Kill the host processes of the run's abandoned attempts that still run, and remove
        those attempts' sandbox folders (their logs stay)."""
        for trial in run.trials.values():
            for attempt in trial.attempts:
                if attempt.outcome != "abandoned":
                    continue
                for process in attempt.host_processes:
                    identity = ProcessIdentity(process.pid, process.start_ticks, process.boot_id)
                    if kill_if_same(identity):
                        log.info("killed pid %d left by attempt %s", process.pid, attempt.trial_id)
                sandbox = (self.settings.jobs_dir / attempt.trial_dir / "sandbox").resolve()
                inside = sandbox.is_relative_to(self.store.run_dir(run.run_id).resolve())
                if inside and sandbox.is_dir():
                    _remove_tree(sandbox)

    async def reap(self, active: set[str]) -> None:
        """Remove what this worker's sandboxes left behind a crash (the backend's reaper, limited
        to this worker's own), sparing the runs about to resume."""
        try:
            removed = await sandbox_class(self.settings.environment).reap(self.owner, active)
        except Exception as exc:  # the engine may be gone; the trials will say so
            log.warning("could not reap what earlier runs left: %s", exc)
            return
        if removed:
            log.info("reaped %d thing(s) left by earlier runs", removed)

    async def _run_cleanup(self, run_id: str) -> None:
        """Remove what a killed worker left of ``run_id`` (the backend's run cleanup), here and
        where the executor ran its attempts (ray: every sandbox node)."""
        try:
            removed = await sandbox_class(self.settings.environment).run_cleanup(run_id)
        except Exception as exc:  # the engine may be gone; the trials will say so
            log.warning("could not reap containers of run %s: %s", run_id, exc)
        else:
            if removed:
                log.info("removed %d container(s) left by run %s", removed, run_id)
        try:
            removed = await self.executor.cleanup_run(run_id, self.settings.environment)
        except Exception as exc:
            log.warning("could not clean run %s where the executor ran it: %s", run_id, exc)
        else:
            if removed:
                log.info("removed %d thing(s) of run %s on the executor's nodes", removed, run_id)


def abandon_running(run: RunRecord, why: str) -> int:
    """Queue the run's running trials again, their attempts ``abandoned`` (``why``); how many."""
    count = 0
    for trial in run.trials.values():
        if trial.state == "running":
            count += 1
            trial.state = "queued"
            if trial.current is not None and trial.current.outcome == "running":
                trial.current.outcome = "abandoned"
                trial.current.finished_at = trial.current.finished_at or utc_now()
                trial.current.error = why
    if count:
        run.updated_at = utc_now()
    return count


def _remove_tree(path: Path) -> None:
    """Remove ``path``, making read-only folders (a sandbox's layer) writable on the way."""

    def retry(_func: object, failed: str, _exc: object) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(failed), 0o700)
            if os.path.isdir(failed) and not os.path.islink(failed):
                os.chmod(failed, 0o700)
                shutil.rmtree(failed, ignore_errors=True)
            else:
                os.unlink(failed)

    try:
        shutil.rmtree(path, onerror=retry)
    except OSError as exc:
        log.warning("could not remove %s: %s", path, exc)
