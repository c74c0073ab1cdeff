"""An agent that harms its own processes fails its trial; it never turns it into "not counted".

``kill -9 -1``, signals to PID 1, its shell exiting or filling memory past the task's
``memory_mb`` (then the row says ``oom``) give a failed, score-eligible row with reward 0 (never
retried) on both sandboxes.
A sandbox removed from outside (the host's fault) stays an infrastructure failure."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.worker.support import make_task, run_payload, script, serve, submit_and_follow
from worker.core.failures import FailureKind, RetryPolicy, semantics
from worker.runs.engine import Engine, EngineSettings
from worker.runs.meta import ProofSettings
from worker.service.app import create_app

MEMORY_MB = 64
SELF_HARM = {
    "kill-everything": "kill -9 -1\n",
    "kill-init": "kill -9 1; kill -TERM 1; kill -INT 1; kill -HUP 1; kill -STOP 1\n",
    "exit-shell": "echo 42 > /root/not-the-answer.txt\nexit 0\n",
    # Four times the limit, touched: the trial's memory limit stops it (both sandboxes).
    "fill-memory": (
        f"python3 -c 'b = []\nfor _ in range({4 * MEMORY_MB}): b.append(b\"x\" * (1 << 20))'\n"
    ),
}


@pytest.fixture(params=["local", "docker"])
def environment(request: pytest.FixtureRequest) -> str:
    if request.param == "docker":
        from tests.support.docker_images import ensure_test_image

        ensure_test_image(request.getfixturevalue("docker_client"), "python")
    return str(request.param)


@pytest.fixture
async def http(tmp_path: Path, environment: str) -> AsyncIterator[httpx.AsyncClient]:
    tasks = tmp_path / "tasks"
    folder = make_task(tasks, "answer-42")
    with (folder / "task.toml").open("a") as toml:
        toml.write(f"memory_mb = {MEMORY_MB}\n")
    jobs = tmp_path / "jobs"
    engine = Engine(
        EngineSettings(
            jobs_dir=jobs,
            tasks_dir=tasks,
            environment=environment,
            concurrency=2,
            retry=RetryPolicy(max_attempts=3, backoff_base_sec=0.0),
            proof=ProofSettings.from_env(jobs, {}),
        )
    )
    async with (
        serve(create_app(engine, script_dir=tmp_path)) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as client,
    ):
        yield client


async def test_self_harm_is_a_scored_failure(http: httpx.AsyncClient, tmp_path: Path) -> None:
    specs = {name: script(tmp_path, name, body) for name, body in SELF_HARM.items()}
    results = await asyncio.gather(
        *(
            submit_and_follow(http, run_payload(["answer-42"], agent=spec), timeout=300)
            for spec in specs.values()
        )
    )
    for name, (run_id, _, status) in zip(specs, results, strict=True):
        (row,) = status["rows"]
        assert row["score_eligible"] and not row["passed"] and row["reward"] == 0.0, (name, row)
        assert row.get("infra_failure_type") is None, (name, row)
        trial = tmp_path / "jobs" / "runs" / run_id / "trials" / row["trial_id"]
        result = json.loads((trial / "result.json").read_text())
        expected = ("oom",) if name == "fill-memory" else (None, "sandbox_ended_by_agent")
        assert result["failure"] in expected, (name, result)
        assert result["attempt"] == 1, f"{name}: retried"


@pytest.mark.parametrize("environment", ["docker"], indirect=True)
async def test_a_container_removed_from_outside_is_an_infra_failure(
    http: httpx.AsyncClient, tmp_path: Path, docker_client: Any
) -> None:
    agent = script(tmp_path, "sleeper", "sleep 600\n")
    response = await http.post("/runs", json=run_payload(["answer-42"], agent=agent))
    run_id = response.json()["run_id"]
    label = {"label": [f"skillsbench.run={run_id}"]}
    removed = 0
    deadline = time.monotonic() + 240
    while removed < 3 and time.monotonic() < deadline:  # every attempt's container
        for container in docker_client.containers.list(filters=label):
            if container.attrs["State"]["Running"]:
                await asyncio.sleep(1.0)  # the agent is running inside
                container.remove(force=True)
                removed += 1
        await asyncio.sleep(0.2)
    status = (await http.get(f"/runs/{run_id}")).json()
    while status["status"] not in ("completed", "failed", "cancelled"):
        assert time.monotonic() < deadline, status
        await asyncio.sleep(0.5)
        status = (await http.get(f"/runs/{run_id}")).json()
    (row,) = status["rows"]
    assert not row["score_eligible"], row
    trial = tmp_path / "jobs" / "runs" / run_id / "trials" / row["trial_id"]
    result = json.loads((trial / "result.json").read_text())
    assert semantics(FailureKind(result["failure"])).retried, result  # an infra kind
    assert result["attempt"] == 3  # retried, every time removed


def test_one_rule_for_a_sandbox_that_ended() -> None:
    from worker.core.failures import sandbox_ended
    from worker.sandbox.base import SandboxEnd

    for infra in (FailureKind.SANDBOX_LOST, FailureKind.VERIFIER_INFRA, FailureKind.AGENT_LAUNCH):
        by_agent = semantics(sandbox_ended(SandboxEnd.INSIDE, infra))
        assert by_agent.score_eligible and not by_agent.retried and by_agent.category is None
        assert sandbox_ended(SandboxEnd.OUTSIDE, infra) is infra
        assert sandbox_ended(None, infra) is infra
