"""How a trial that did not finish and a run that ends are closed: the trial's failure row
(``worker_cancelled`` or ``worker_error``, keeping its last trial id), and the run's final
status with its private proof written. Record changes only: storing them and telling the
subscribers is the scheduler's."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from worker.agents.registry import resolve_agent
from worker.api import RunTask
from worker.core.failures import FailureKind
from worker.core.files import disk_full
from worker.runs.meta import ProofSettings
from worker.runs.proof import write_proof
from worker.runs.records import AttemptRecord, RunRecord, TrialRecord
from worker.runs.store import RunStore
from worker.trial_record.public_row import build_row, new_trial_id
from worker.trial_record.trajectory import utc_now

log = logging.getLogger(__name__)


def close_trial(
    store: RunStore,
    run: RunRecord,
    trial: TrialRecord,
    run_task: RunTask,
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
    now = now or utc_now()
    current = trial.current
    outcome: Literal["cancelled", "finished"] = (
        "cancelled" if kind == FailureKind.WORKER_CANCELLED else "finished"
    )
    if current is None or current.outcome not in ("running", "retried"):
        trial_id = new_trial_id(trial.task_id, next(ids) if ids is not None else None)
        current = AttemptRecord.model_construct(  # all fields known valid: cheap per trial
            trial_id=trial_id,
            trial_dir=store.relative_trial_dir(run.run_id, trial_id),
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
            agent_transport=transport or agent_transport(run.agent),
            reward=None,
            failure=kind,
            time_used=None,
        )
    except ValueError as exc:  # pydantic's ValidationError is one
        run.error = run.error or f"rows cannot be built: {str(exc).splitlines()[0]}"
        return
    if rows is not None:
        rows[trial.task_id] = trial.row


async def end_run(
    run: RunRecord,
    jobs_dir: Path,
    proof: ProofSettings,
    wait_for_space: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Set the final status of a run whose trials all have their rows, and write its private
    proof (a proof that cannot be written is the run's error; on a full disk it is written once
    space returns, with ``wait_for_space``)."""
    run.status = "cancelled" if run.cancel_requested else "completed"
    if run.error and not run.cancel_requested:
        run.status = "failed"
    while True:
        try:
            refs = await asyncio.to_thread(write_proof, run, jobs_dir, proof)
            run.private_proof_refs = refs["_private_proof_refs"]
            run.private_proof_manifest = refs["_private_proof_manifest"]
        except OSError as exc:
            if wait_for_space is not None and disk_full(exc):
                await wait_for_space()
                continue
            log.error("private proof of run %s not written: %s", run.run_id, exc)
            run.error = run.error or f"private proof not written: {exc}"
        break
    run.updated_at = utc_now()


def agent_transport(spec: str) -> str:
    """The row's agent_transport: the agent's kind (the spec's prefix if it no longer resolves)."""
    try:
        return resolve_agent(spec).kind
    except ValueError:
        return spec.split(":", 1)[0]
