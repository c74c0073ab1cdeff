"""Where trial attempts run: :mod:`worker.executors.base` (the seam), ``inprocess`` (this
process, the default) and ``ray`` (a Ray cluster's nodes; ``skillsbench-agentbeats[ray]``)."""

from worker.executors.base import DEFAULT_EXECUTOR, Executor, ExecutorError, executor
from worker.executors.registry import executor_names, make_executor

__all__ = [
    "DEFAULT_EXECUTOR",
    "Executor",
    "ExecutorError",
    "executor",
    "executor_names",
    "make_executor",
]
