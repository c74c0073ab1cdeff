"""The A2A task store with bounded memory: finished tasks are forgotten by count and by age.

a2a-sdk's ``InMemoryTaskStore`` keeps every task forever. An assessment's result reaches the
gateway in the stream (or in the answer to ``message/send``) when it ends, and a gateway that polls
reads it within seconds, so a finished task is kept for ``max_age_sec`` and only the newest
``max_finished`` of them: enough for any client to read a result it has just been sent. Running
tasks are never forgotten.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types import a2a_pb2
from a2a.types.a2a_pb2 import Task, TaskState

MAX_FINISHED_TASKS = 1000
FINISHED_TASK_MAX_AGE_SEC = 3600.0

_FINISHED = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)


class BoundedTaskStore(TaskStore):
    def __init__(
        self,
        max_finished: int = MAX_FINISHED_TASKS,
        max_age_sec: float = FINISHED_TASK_MAX_AGE_SEC,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = InMemoryTaskStore()
        self.max_finished = max_finished
        self.max_age_sec = max_age_sec
        self._clock = clock
        # task id -> (when it finished, the context it was saved with), oldest first
        self._finished: OrderedDict[str, tuple[float, ServerCallContext]] = OrderedDict()

    async def save(self, task: Task, context: ServerCallContext) -> None:
        await self._store.save(task, context)
        if task.status.state in _FINISHED:
            self._finished.pop(task.id, None)
            self._finished[task.id] = (self._clock(), context)
        else:
            self._finished.pop(task.id, None)
        await self._evict()

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        await self._evict()
        return await self._store.get(task_id, context)

    async def list(
        self, params: a2a_pb2.ListTasksRequest, context: ServerCallContext
    ) -> a2a_pb2.ListTasksResponse:
        await self._evict()
        return await self._store.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        self._finished.pop(task_id, None)
        await self._store.delete(task_id, context)

    @property
    def finished_count(self) -> int:
        return len(self._finished)

    async def _evict(self) -> None:
        oldest_kept = self._clock() - self.max_age_sec
        while self._finished:
            task_id, (finished_at, context) = next(iter(self._finished.items()))
            if len(self._finished) <= self.max_finished and finished_at >= oldest_kept:
                return
            del self._finished[task_id]
            await self._store.delete(task_id, context)
