"""What the run store keeps: one document per run, rewritten atomically on every state change.

A run owns one :class:`TrialRecord` per (task, instance) pair, keyed ``<task_id>#<instance>``.
The key, not the attempt, is the unit of "exactly one row": a trial that is re-run (retry or
resume after a crash) replaces its attempt, never adds a row.
"""

from __future__ import annotations

import gc
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from worker.api import RunRequest, RunState

RUN_SCHEMA_VERSION: Final = "skillsbench.agentbeats.worker_run.v1"

TrialState = Literal["queued", "running", "finished"]


def trial_key(task_id: str, instance: int) -> str:
    return f"{task_id}#{instance}"


class HostProcessRecord(BaseModel):
    """A process the attempt started on the worker host (the a2a bridge): a restarted worker
    kills it if it still runs, after checking it is the same process (start time, boot)."""

    model_config = ConfigDict(extra="forbid")

    pid: int
    start_ticks: int
    boot_id: str


class AttemptRecord(BaseModel):
    """One try at a trial; kept so retries and crash-abandoned attempts stay visible."""

    model_config = ConfigDict(extra="forbid")

    trial_id: str
    trial_dir: str  # relative to the jobs dir
    started_at: str
    finished_at: str | None = None
    outcome: Literal["running", "finished", "retried", "abandoned", "cancelled"] = "running"
    failure: str | None = None  # FailureKind value
    error: str | None = None
    host_processes: list[HostProcessRecord] = Field(default_factory=list)
    reason: str | None = None  # why it did not pass, one line (worker/trial/lifecycle.py)


class TrialRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str
    task_id: str
    instance: int = 0
    state: TrialState = "queued"
    attempts: list[AttemptRecord] = Field(default_factory=list)
    row: dict[str, Any] | None = None  # the public row, set exactly once when finished
    failure: str | None = None
    result_path: str | None = None  # relative to the jobs dir

    @property
    def current(self) -> AttemptRecord | None:
        return self.attempts[-1] if self.attempts else None


class RunRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal["skillsbench.agentbeats.worker_run.v1"] = RUN_SCHEMA_VERSION
    run_id: str
    status: RunState = "queued"
    created_at: str
    updated_at: str
    request: RunRequest
    agent: str  # the resolved agent spec
    trials: dict[str, TrialRecord]  # insertion order = task order x instance
    worker_meta: dict[str, Any] = Field(default_factory=dict)
    cancel_requested: bool = False
    error: str | None = None
    private_proof_refs: list[dict[str, Any]] | None = None
    private_proof_manifest: str | None = None
    # The last line of the run's journal this document includes (worker/runs/store.py).
    journal_seq: int = 0

    @property
    def terminal(self) -> bool:
        return self.status in ("completed", "failed", "cancelled")

    def rows(self) -> list[dict[str, Any]]:
        """Finished rows in task order (never more than one per trial key)."""
        return [t.row for t in self.trials.values() if t.row is not None]


def settle() -> None:
    """Move what exists now out of the garbage collector's scans. A run's records live as long
    as the worker; with 10,000 trials a full collection walking them held the event loop for
    100 ms and more, at random moments. (They are still freed by reference counting.)"""
    gc.freeze()
