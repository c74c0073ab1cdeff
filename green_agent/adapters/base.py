"""The worker adapter interface: start a run, follow its rows, cancel it."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from worker.api import RunRequest, TrialPhase

# How a run ended, from the green agent's point of view ("timeout": we gave up and cancelled it).
EndState = Literal["completed", "failed", "cancelled", "timeout"]


@dataclass(frozen=True)
class RowFinished:
    """One finished trial (a worker row, not yet normalized)."""

    row: dict[str, Any]
    finished: int
    total: int


@dataclass(frozen=True)
class RunEnded:
    """Always the last event of :meth:`WorkerRun.follow`."""

    state: EndState
    rows: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


RunEvent = RowFinished | RunEnded


@dataclass
class WorkerHealth:
    """The worker as the adapter last saw it, for the assessment's heartbeat: a silence is
    explained (the worker is not answering and is being retried) instead of "still running"."""

    problem: str | None = None  # e.g. "the worker at URL is not answering (ConnectError: …)"
    since: float | None = None  # monotonic time of the first failure in a row
    retry_sec: float | None = None  # how long failures in a row are retried before giving up
    running: int | None = None  # trials the worker last reported running
    # What each of them does (trial key -> phase); empty from a worker that does not say.
    phases: dict[str, TrialPhase] = field(default_factory=dict)

    def failing(self, problem: str, retry_sec: float) -> None:
        if self.since is None:
            self.since = time.monotonic()
        self.problem, self.retry_sec = problem, retry_sec

    def answering(self) -> None:
        self.problem = self.since = None


class WorkerRun(Protocol):
    run_id: str

    def follow(self) -> AsyncGenerator[RunEvent, None]:
        """Yield each newly finished row once, then exactly one :class:`RunEnded`."""
        ...

    async def cancel(self) -> None:
        """Ask the worker to stop the run (idempotent, best effort)."""
        ...


class WorkerAdapter(Protocol):
    kind: str  # "http" or "mock"

    async def start(self, request: RunRequest, health: WorkerHealth | None = None) -> WorkerRun:
        """Create the run; ``health`` (kept by the run too) hears how the worker answers."""
        ...

    async def aclose(self) -> None: ...
