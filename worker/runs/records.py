"""What the run store keeps: one document per run, rewritten atomically on every state change.

A run owns one :class:`TrialRecord` per (task, instance) pair, keyed ``<task_id>#<instance>``.
The key, not the attempt, is the unit of "exactly one row": a trial that is re-run (retry or
resume after a crash) replaces its attempt, never adds a row.

A change is made to the record first and stored after; until it is stored (a moment, or as long
as the jobs folder is full), what the run reports is what was stored: :meth:`RunRecord.hold`
keeps a trial's stored state and row (and :meth:`RunRecord.hold_status` the run's status) for
the status document and the event stream, and the store lets go once the change is on disk.
A restart can therefore never take back an answer the run gave.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from worker.api import RunRequest, RunState, TrialPhase

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

    # What is reported while a change is not stored yet: trial key -> (state, row) as stored;
    # and the run's stored status (None: nothing held).
    _held: dict[str, tuple[TrialState, dict[str, Any] | None]] = PrivateAttr(default_factory=dict)
    _held_status: RunState | None = PrivateAttr(default=None)
    # What each trial with an attempt does now (worker/trial/progress.py): live, never stored
    # (a restarted worker tries such a trial again from its start).
    _phases: dict[str, TrialPhase] = PrivateAttr(default_factory=dict)

    @property
    def terminal(self) -> bool:
        return self.status in ("completed", "failed", "cancelled")

    # ---- what is reported: only what is stored ---------------------------------------------

    def hold(self, trial: TrialRecord) -> None:
        """Report ``trial`` as it is now (stored) until the store has its coming change."""
        self._held.setdefault(trial.key, (trial.state, trial.row))

    def hold_status(self) -> None:
        """Report the run's status as it is now (stored) until the store has its change."""
        if self._held_status is None:
            self._held_status = self.status

    def held(self) -> tuple[frozenset[str], bool]:
        """The trial keys and whether the status are held now (a full save lets go of these)."""
        return frozenset(self._held), self._held_status is not None

    def release(self, keys: Iterable[str] = (), *, status: bool = False) -> None:
        """The store has these changes: report them."""
        for key in keys:
            self._held.pop(key, None)
        if status:
            self._held_status = None

    @property
    def shown_status(self) -> RunState:
        return self.status if self._held_status is None else self._held_status

    @property
    def shown_terminal(self) -> bool:
        """Terminal as reported: the end is stored."""
        return self.shown_status in ("completed", "failed", "cancelled")

    def shown_trials(self) -> Iterator[tuple[str, TrialState, dict[str, Any] | None]]:
        """(key, state, row) of every trial as stored, in task order."""
        held = self._held
        for key, trial in self.trials.items():
            if held and key in held:
                state, row = held[key]
                yield key, state, row
            else:
                yield key, trial.state, trial.row

    # ---- what the trials do now (not stored) ------------------------------------------------

    def set_phase(self, key: str, phase: str, *, since: str, attempt: int) -> TrialPhase:
        self._phases[key] = told = TrialPhase(phase=phase, since=since, attempt=attempt)
        return told

    def phase_of(self, key: str) -> str | None:
        told = self._phases.get(key)
        return told.phase if told is not None else None

    def clear_phase(self, key: str) -> None:
        self._phases.pop(key, None)

    def shown_phases(self) -> dict[str, TrialPhase]:
        """The phases of the trials not reported finished (a row not stored yet keeps its
        trial's last phase, as it keeps its state)."""
        held = self._held
        shown = {}
        for key, phase in self._phases.items():
            state = held[key][0] if held and key in held else self.trials[key].state
            if state != "finished":
                shown[key] = phase
        return shown

    def rows(self) -> list[dict[str, Any]]:
        """Finished rows in task order (never more than one per trial key)."""
        return [t.row for t in self.trials.values() if t.row is not None]


def settle() -> None:
    """Move what exists now out of the garbage collector's scans. A run's records live as long
    as the worker; with 10,000 trials a full collection walking them held the event loop for
    100 ms and more, at random moments. (They are still freed by reference counting.)"""
    gc.freeze()
