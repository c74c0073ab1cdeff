"""The executor seam: where a trial attempt runs.

The engine owns a run (store, events, retries, rows, cancellation, crash-safe resume) and hands
each attempt, as a :class:`~worker.trial.TrialPlan`, to one executor. An executor runs the attempt
somewhere and leaves its trial folder at ``plan.trial_dir`` (``result.json`` included) before it
returns the outcome; a failure of the executor's own machinery is a
:class:`~worker.core.failures.FailureKind` in that outcome (the failure table decides what it means),
never an exception. Cancelling the awaiting task cancels the attempt wherever it runs.

Executors register under a name (``--executor``) with :func:`executor`; :func:`make_executor`
(worker.executors.registry) builds one from its name and options (``{"address": ...}`` for ``ray``).
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import ClassVar, TypeVar

from worker.core.registry import Registry
from worker.trial import TrialOutcome, TrialPlan

DEFAULT_EXECUTOR = "inprocess"


class ExecutorError(RuntimeError):
    """The executor cannot work at all (no cluster, a node of another project version): the
    worker does not start."""


class Executor(abc.ABC):
    """Runs trial attempts; one instance per engine."""

    name: ClassVar[str]

    async def start(self) -> None:
        """Before the first attempt (connect, check the nodes): :class:`ExecutorError` if the
        executor cannot run trials."""
        return None

    @abc.abstractmethod
    async def run(self, plan: TrialPlan) -> TrialOutcome:
        """Run one attempt; its folder is complete at ``plan.trial_dir`` when this returns."""

    async def cleanup_run(self, run_id: str, environment: str) -> int:
        """Before a run resumes: remove what attempts of a killed worker left wherever this
        executor ran them (the engine already cleans its own host); how many things went."""
        return 0

    async def close(self) -> None:
        """When the engine stops (attempts still running were cancelled first)."""
        return None

    def describe(self) -> str:
        """One line for the log."""
        return self.name


E = TypeVar("E", bound=type[Executor])
# The built-in executors (worker/core/registry.py): imported when first named (the ray one
# imports no ray at import time).
EXECUTORS: Registry[type[Executor]] = Registry(
    "executor",
    {
        "inprocess": "worker.executors.inprocess:InProcessExecutor",
        "ray": "worker.executors._ray:RayExecutor",
    },
)


def executor(name: str) -> Callable[[E], E]:
    """Register an executor class under ``name``; it is built with the options mapping."""

    def register(cls: E) -> E:
        EXECUTORS.register(name, cls)
        cls.name = name
        return cls

    return register
