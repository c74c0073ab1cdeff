"""A trial's state change costs the store one journal line, not a rewrite of the run document:
run.json is written at submit and at the end whatever the number of trials, and the journal is
gone once the run is finished."""

from __future__ import annotations

from pathlib import Path

import pytest

import worker.runs.store
from tests.worker.support import make_engine, make_task, run_payload, script
from worker.api import RunRequest
from worker.core.failures import RetryPolicy
from worker.runs.store import JOURNAL_FILENAME, RUN_FILENAME, read_run_document


async def test_run_document_is_not_rewritten_per_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks, jobs = tmp_path / "tasks", tmp_path / "jobs"
    tasks.mkdir()
    task_ids = [f"j-{i}" for i in range(3)]
    for task_id in task_ids:
        make_task(tasks, task_id)
    documents: list[Path] = []
    lines: list[bytes] = []
    write_atomic, append_line = worker.runs.store.write_atomic, worker.runs.store.append_line

    def counted_write(path: Path, data: bytes, *, durable: bool = True) -> None:
        if path.name == RUN_FILENAME:
            documents.append(path)
        write_atomic(path, data, durable=durable)

    def counted_append(path: Path, line: bytes) -> None:
        assert path.name == JOURNAL_FILENAME
        lines.append(line)
        append_line(path, line)

    monkeypatch.setattr(worker.runs.store, "write_atomic", counted_write)
    monkeypatch.setattr(worker.runs.store, "append_line", counted_append)
    engine = make_engine(jobs, tasks, concurrency=2, retry=RetryPolicy())
    await engine.start()
    agent = script(tmp_path, "answer", "echo 42 > /root/answer.txt\n")
    request = RunRequest.model_validate(run_payload(task_ids, agent=agent, num_instances=2))
    try:
        run = await engine.submit(request)
        run = await engine.wait(run.run_id)
    finally:
        await engine.close()
    assert run.status == "completed" and len(run.rows()) == 6
    assert len(documents) == 2  # at submit and at the end, not per trial
    assert len(lines) >= 2 * 6  # each trial's start and finish
    folder = jobs / "runs" / run.run_id
    assert not (folder / JOURNAL_FILENAME).exists()  # compacted at the end
    assert read_run_document(folder) == run.model_dump(mode="json")
