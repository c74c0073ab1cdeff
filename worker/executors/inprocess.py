"""``inprocess``: the attempt runs in the worker's own process, on this host (the default)."""

from __future__ import annotations

from collections.abc import Mapping

from worker.executors.base import Executor, executor
from worker.trial import TrialOutcome, TrialPlan, run_trial


@executor("inprocess")
class InProcessExecutor(Executor):
    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> InProcessExecutor:
        if options:
            raise ValueError(f"executor inprocess takes no options (got {', '.join(options)})")
        return cls()

    async def run(self, plan: TrialPlan) -> TrialOutcome:
        return await run_trial(plan)
