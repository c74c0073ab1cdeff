"""The HTTP worker adapter against the REAL worker service (in-process, loopback, local sandbox)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from green_agent.adapters.base import RowFinished, RunEnded
from green_agent.adapters.http import HttpWorkerAdapter
from green_agent.selection import select
from skillsbench_agentbeats.in_process import local_worker
from worker.api import RunRequest

TWO = {"task_set": "examples", "task_ids": ["csv-sales-summary", "grid-path-count"]}


def _request(agent: str) -> RunRequest:
    selection = select(TWO)
    return RunRequest(
        config=selection.config,
        task_set=selection.task_set,
        task_set_digest=selection.task_set_digest,
        tasks=selection.tasks,
        agent=agent,
    )


async def test_oracle_rows_arrive_over_the_event_stream(tmp_path: Path) -> None:
    async with local_worker(tmp_path / "jobs") as url:
        assert url is not None
        # A 60 s poll interval: only the event stream can deliver rows in time.
        adapter = HttpWorkerAdapter(url, poll_interval_sec=60.0, timeout_sec=120.0)
        try:
            run = await adapter.start(_request("oracle"))
            events = [event async for event in run.follow()]
        finally:
            await adapter.aclose()
    rows = [e.row for e in events if isinstance(e, RowFinished)]
    end = events[-1]
    assert isinstance(end, RunEnded) and end.state == "completed"
    assert sorted(r["task_id"] for r in rows) == ["csv-sales-summary", "grid-path-count"]
    assert all(r["passed"] and r["score_eligible"] for r in rows)


async def test_cancel_ends_the_run_cancelled(tmp_path: Path) -> None:
    script = tmp_path / "slow.sh"
    script.write_text("sleep 60\n")
    async with local_worker(tmp_path / "jobs", script_dir=tmp_path) as url:
        assert url is not None
        adapter = HttpWorkerAdapter(url, timeout_sec=120.0)
        try:
            run = await adapter.start(_request(f"script:{script}"))
            await asyncio.sleep(1.0)
            await run.cancel()
            events = [event async for event in run.follow()]
        finally:
            await adapter.aclose()
    end = events[-1]
    assert isinstance(end, RunEnded) and end.state == "cancelled"
    assert {r.get("infra_failure_type") for r in end.rows} == {"worker_cancelled"}


async def test_timeout_cancels_the_real_run(tmp_path: Path) -> None:
    script = tmp_path / "slow.sh"
    script.write_text("sleep 60\n")
    async with local_worker(tmp_path / "jobs", script_dir=tmp_path) as url:
        assert url is not None
        adapter = HttpWorkerAdapter(url, timeout_sec=1.5)
        try:
            run = await adapter.start(_request(f"script:{script}"))
            events = [event async for event in run.follow()]
            status = (await adapter.client.get(f"/runs/{run.run_id}")).json()
            deadline = time.monotonic() + 120  # generous: a loaded machine is slow to cancel
            while status["status"] == "running" and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
                status = (await adapter.client.get(f"/runs/{run.run_id}")).json()
        finally:
            await adapter.aclose()
    end = events[-1]
    assert isinstance(end, RunEnded) and end.state == "timeout"
    assert status["status"] == "cancelled"
