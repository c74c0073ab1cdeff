"""Every example task in tasks/ passes with the oracle and fails with nop on the local sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from task_sets.task import discover_tasks
from tests.support import TASKS_DIR
from tests.worker.support import make_engine
from worker.api import RunRequest, RunTask
from worker.core.failures import RetryPolicy

EXAMPLES = list(discover_tasks(TASKS_DIR)) if TASKS_DIR.is_dir() else []


@pytest.mark.skipif(not EXAMPLES, reason="no example tasks in tasks/ yet")
@pytest.mark.parametrize("agent", ["oracle", "nop"])
async def test_oracle_passes_and_nop_fails_every_example(tmp_path: Path, agent: str) -> None:
    jobs = tmp_path / "jobs"
    engine = make_engine(jobs, TASKS_DIR, "local", concurrency=2, retry=RetryPolicy(max_attempts=1))
    await engine.start(resume=False)
    request = RunRequest(
        config={"condition": "with_skills"},
        task_set="examples",
        task_set_digest="sha256:" + "0" * 64,
        tasks=[RunTask(task_id=task_id) for task_id in EXAMPLES],
        agent=agent,
    )
    run = await engine.wait((await engine.submit(request)).run_id)
    rows = {row["task_id"]: row for row in run.rows()}
    assert sorted(rows) == sorted(EXAMPLES)
    for task_id, row in rows.items():
        assert row["score_eligible"], f"{task_id}: {row['infra_failure_type']}"
        if agent == "oracle":
            assert row["passed"] and row["reward"] == 1.0, task_id
        else:
            assert not row["passed"] and row["reward"] < 1.0, task_id
