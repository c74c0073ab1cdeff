"""The worker adapter interface: start a run, follow its rows, cancel it."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from worker.api import RunRequest

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

    async def start(self, request: RunRequest) -> WorkerRun: ...

    async def aclose(self) -> None: ...
