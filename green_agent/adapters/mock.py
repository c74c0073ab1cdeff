"""The mock worker: used when no worker is configured.

It runs nothing. Every selected trial gets a row that is *not score-eligible* and carries the
``worker_error`` category, so a mock assessment has the full public shape but can never count as a
score (no pass, no fail) on a leaderboard. The green agent logs loudly that it is in mock mode.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncGenerator
from typing import Any

from green_agent.adapters.base import RowFinished, RunEnded, RunEvent, WorkerHealth
from green_agent.settings import WORKER_URL
from worker.api import RunRequest

log = logging.getLogger(__name__)

MOCK_TRIAL_KIND = "mock"


def mock_row(request: RunRequest, task_index: int) -> dict[str, Any]:
    task = request.tasks[task_index]
    return {
        "task_id": task.task_id,
        "trial_id": f"{task.task_id}__{MOCK_TRIAL_KIND}__{uuid.uuid4().hex[:8]}",
        "task_set": request.task_set,
        "task_set_digest": request.task_set_digest,
        "condition": request.config.get("condition", "with_skills"),
        "score_eligible": False,
        "passed": False,
        "reward": 0.0,
        "max_score": 1.0,
        "time_used": 0.0,
        "task_digest": task.task_digest,
        "category": task.category,
        "difficulty": task.difficulty,
        "tags": list(task.tags),
        "has_skills": True,
        "agent_transport": "a2a",
        "participant_role": "agent",
        "infra_failure_type": "worker_error",
        "error_type": "worker_error",
        "artifact_refs": [],
    }


class MockRun:
    def __init__(self, request: RunRequest) -> None:
        self.run_id = f"mock-{uuid.uuid4().hex[:12]}"
        self._request = request
        self._cancelled = asyncio.Event()

    async def follow(self) -> AsyncGenerator[RunEvent, None]:
        instances = int(self._request.config.get("num_instances", 1) or 1)
        total = len(self._request.tasks) * instances
        rows: list[dict[str, Any]] = []
        for index in range(len(self._request.tasks)):
            for _ in range(instances):
                if self._cancelled.is_set():
                    yield RunEnded(state="cancelled", rows=rows)
                    return
                row = mock_row(self._request, index)
                rows.append(row)
                yield RowFinished(row=row, finished=len(rows), total=total)
                await asyncio.sleep(0)
        yield RunEnded(state="completed", rows=rows)

    async def cancel(self) -> None:
        self._cancelled.set()


class MockWorkerAdapter:
    kind = "mock"

    async def start(self, request: RunRequest, health: WorkerHealth | None = None) -> MockRun:
        run = MockRun(request)
        log.warning(
            "MOCK WORKER: run %s of %d task(s) from %s is not executed; rows are marked "
            "worker_error and are never score-eligible (set %s)",
            run.run_id,
            len(request.tasks),
            request.task_set,
            WORKER_URL,
        )
        return run

    async def aclose(self) -> None:
        return None
