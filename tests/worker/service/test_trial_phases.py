"""What each running trial does, over the worker's HTTP API on real loopback: the ``phases`` of
``GET /runs/{id}`` and the ``phase`` events, from a real worker running real trials (local
sandbox): one whose agent never ends, one whose verifier never ends, one that passes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.worker.support import make_engine, make_task, read_sse, run_payload, script, serve
from worker.api import TRIAL_PHASES, RunStatus
from worker.core.failures import RetryPolicy
from worker.service.app import create_app

HANGS = "#!/bin/sh\nexec sleep 3600\n"
# The agent solves every task but "slow", where it never ends.
AGENT = "grep -q slow /instruction.md && exec sleep 3600\necho 42 > /root/answer.txt\n"
GUARD_SEC = 120


@pytest.fixture
async def http(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    from worker.sandbox.base import SandboxError, sandbox_class

    try:
        sandbox_class("local")
    except (ValueError, SandboxError) as exc:
        pytest.skip(f"the local sandbox cannot run here: {exc}")
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    make_task(tasks, "quick")
    make_task(tasks, "slow", instruction="slow: write 42 to /root/answer.txt")
    make_task(tasks, "hangs", test_sh=HANGS, verifier_timeout=3600)
    jobs = tmp_path / "jobs"
    engine = make_engine(jobs, tasks, "local", concurrency=3, retry=RetryPolicy())
    async with (
        serve(create_app(engine, script_dir=tmp_path)) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        yield client


def _phases_of(events: list[tuple[str, dict[str, Any]]], key: str) -> list[str]:
    """The phases of trial ``key`` as the stream told them: the first status (when the trial
    had started by then), then its ``phase`` events."""
    seen = []
    for name, data in events:
        if name == "status" and not seen and key in data["phases"]:
            seen.append(data["phases"][key]["phase"])
        elif name == "phase" and data["trial_key"] == key:
            seen.append(data["phase"])
    return seen


async def test_the_status_says_what_each_running_trial_does(
    http: httpx.AsyncClient, tmp_path: Path
) -> None:
    agent = script(tmp_path, "agent", AGENT)
    created = await http.post("/runs", json=run_payload(["quick", "slow", "hangs"], agent=agent))
    assert created.status_code == 201, created.text
    run_id = created.json()["run_id"]
    events: list[tuple[str, dict[str, Any]]] = []
    wanted = {"slow#0": "agent_running", "hangs#0": "verifying"}

    def now_doing() -> dict[str, str]:
        doing: dict[str, str] = {}
        for name, data in events:
            if name == "status":
                doing = {key: told["phase"] for key, told in data["phases"].items()}
            elif name == "phase":
                doing[data["trial_key"]] = data["phase"]
            elif name == "row":
                doing.pop(data["trial_key"], None)
        return doing

    async with (
        asyncio.timeout(GUARD_SEC),
        http.stream("GET", f"/runs/{run_id}/events", timeout=GUARD_SEC) as stream,
    ):
        async for name, data in read_sse(stream):
            events.append((name, data))
            finished = any(n == "row" and d["trial_key"] == "quick#0" for n, d in events)
            if finished and now_doing() == wanted:
                break
    # Each trial went through its phases in order, each told once; the one that passed was
    # graded again on a fresh sandbox.
    for key in ("quick#0", "slow#0", "hangs#0"):
        seen = _phases_of(events, key)
        order = [TRIAL_PHASES.index(phase) for phase in seen]  # only documented names
        assert order == sorted(set(order)), (key, seen)
    assert _phases_of(events, "quick#0")[-3:] == ["agent_running", "verifying", "regrading"]
    assert _phases_of(events, "hangs#0")[-2:] == ["agent_running", "verifying"]
    assert _phases_of(events, "slow#0")[-2:] == ["agent_setup", "agent_running"]
    assert {name for name, _ in events} <= {"status", "phase", "row"}

    answer = await http.get(f"/runs/{run_id}")
    assert answer.status_code == 200
    doc = answer.json()
    # The keys a reader had before are there as they were; the phases come beside them.
    assert doc["tasks"] == {"quick#0": "finished", "slow#0": "running", "hangs#0": "running"}
    assert doc["progress"]["running"] == 2 and len(doc["rows"]) == 1
    assert {key: told["phase"] for key, told in doc["phases"].items()} == wanted
    now = datetime.now(UTC)
    for told in doc["phases"].values():
        assert told["attempt"] == 1
        since = datetime.fromisoformat(told["since"].replace("Z", "+00:00"))
        assert now - timedelta(seconds=GUARD_SEC) < since <= now
    assert RunStatus.model_validate(doc).phases["hangs#0"].phase == "verifying"

    cancelled = await http.post(f"/runs/{run_id}/cancel")
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "cancelled"
    assert cancelled.json()["phases"] == {}  # nothing runs any more
