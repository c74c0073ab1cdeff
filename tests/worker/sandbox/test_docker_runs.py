"""The same worker on the docker environment: oracle passes, nop fails, no cheat probe earns a
reward, and a cancelled run leaves no container behind. Skipped where no Docker Engine answers."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.docker_images import ensure_test_image
from tests.worker.support import (
    make_engine,
    make_task,
    run_payload,
    script,
    serve,
    submit_and_follow,
)
from tests.worker.trial.support import PROBE_TEST, PROBES
from worker.api import RunRequest
from worker.core.failures import RetryPolicy
from worker.service.app import create_app

pytestmark = pytest.mark.docker


@pytest.fixture
def tasks_dir(tmp_path: Path, docker_client: Any) -> Path:
    ensure_test_image(docker_client, "python")  # also tags python:3.11-slim (no registry here)
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    make_task(tasks, "answer-42")
    make_task(
        tasks,
        "secret-answer",
        test_sh=PROBE_TEST,
        solve_sh="#!/bin/sh\necho 1337 > /root/answer.txt\n",
        extra_tests={"expected.txt": "1337\n"},
    )
    return tasks


@pytest.fixture
async def http(tmp_path: Path, tasks_dir: Path) -> AsyncIterator[httpx.AsyncClient]:
    jobs = tmp_path / "jobs"
    engine = make_engine(
        jobs, tasks_dir, "docker", concurrency=2, retry=RetryPolicy(max_attempts=1)
    )
    async with (
        serve(create_app(engine, script_dir=tmp_path)) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as client,
    ):
        yield client


async def test_oracle_passes_nop_fails_and_no_probe_earns_a_reward(
    http: httpx.AsyncClient, tmp_path: Path
) -> None:
    specs = {"oracle": "oracle", "nop": "nop"}
    specs |= {name: script(tmp_path, name, body) for name, body in PROBES.items()}
    results = await asyncio.gather(
        *(
            submit_and_follow(http, run_payload(["secret-answer"], agent=spec), timeout=300)
            for spec in specs.values()
        )
    )
    rows = {name: result[2]["rows"][0] for name, result in zip(specs, results, strict=True)}
    assert rows.pop("oracle")["passed"]
    assert not rows.pop("nop")["passed"]
    for name, row in rows.items():
        assert row["reward"] == 0.0 and not row["passed"], f"probe {name} earned a reward: {row}"


async def test_cancel_leaves_no_container(
    http: httpx.AsyncClient, tmp_path: Path, docker_client: Any
) -> None:
    agent = script(tmp_path, "sleeper", "sleep 600\n")
    response = await http.post("/runs", json=run_payload(["answer-42"], agent=agent))
    run_id = response.json()["run_id"]
    label = {"label": [f"skillsbench.run={run_id}"]}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if (await http.get(f"/runs/{run_id}")).json()["progress"]["running"] and (
            docker_client.containers.list(filters=label)
        ):
            break
        await asyncio.sleep(0.2)
    else:
        pytest.fail("the trial's container never came up")
    await asyncio.sleep(1.0)  # the agent is running inside
    started = time.monotonic()
    status = (await http.post(f"/runs/{run_id}/cancel")).json()
    assert time.monotonic() - started < 15
    assert status["status"] == "cancelled"
    assert status["rows"][0]["infra_failure_type"] == "worker_cancelled"
    assert docker_client.api.containers(all=True, filters=label) == []


async def test_a_failing_build_is_tried_once_per_run_and_says_why_in_plain_text(
    tmp_path: Path, tasks_dir: Path
) -> None:
    make_task(
        tasks_dir,
        "failing-run",
        dockerfile="FROM python:3.11-slim\nRUN printf '\\033[91mno such package\\033[0m\\n'; exit 3\n",
    )
    jobs = tmp_path / "jobs-build"
    engine = make_engine(
        jobs,
        tasks_dir,
        "docker",
        concurrency=2,
        retry=RetryPolicy(max_attempts=3, backoff_base_sec=0.01),
    )
    await engine.start(resume=False)
    try:
        run = await engine.submit(
            RunRequest.model_validate(run_payload(["failing-run"], "oracle", num_instances=2))
        )
        run = await asyncio.wait_for(engine.wait(run.run_id), 300)
    finally:
        await engine.close()
    errors = []
    for trial in run.trials.values():
        (attempt,) = trial.attempts  # deterministic: one try, no retry
        assert attempt.failure == "sandbox_build"
        assert trial.row is not None and trial.row["infra_failure_type"] == "sandbox_error"
        assert attempt.error is not None and "\x1b" not in attempt.error
        assert "no such package" in attempt.error and "3" in attempt.error
        assert attempt.reason is not None and attempt.reason.startswith("sandbox_build: ")
        errors.append(attempt.error)
    # The second trial did not build again: it carries the first one's failure.
    assert sum("earlier trial of this task" in error for error in errors) == 1


async def test_a_config_the_engine_refuses_is_tried_once(tmp_path: Path, tasks_dir: Path) -> None:
    toml = make_task(tasks_dir, "tiny-memory") / "task.toml"
    # Docker refuses memory limits under 6 MB with a 400: the task's fault, not the engine's.
    toml.write_text(toml.read_text().replace("[environment]\n", "[environment]\nmemory_mb = 1\n"))
    jobs = tmp_path / "jobs-config"
    engine = make_engine(
        jobs,
        tasks_dir,
        "docker",
        concurrency=1,
        retry=RetryPolicy(max_attempts=3, backoff_base_sec=0.01),
    )
    await engine.start(resume=False)
    try:
        run = await engine.submit(RunRequest.model_validate(run_payload(["tiny-memory"], "oracle")))
        run = await asyncio.wait_for(engine.wait(run.run_id), 300)
    finally:
        await engine.close()
    (attempt,) = run.trials["tiny-memory#0"].attempts
    assert attempt.failure == "sandbox_config", attempt.error
    assert attempt.error is not None and "container failed to start" in attempt.error


async def test_builds_that_time_out_stop_and_never_pass_the_concurrency(
    tmp_path: Path, tasks_dir: Path, docker_client: Any
) -> None:
    """Four tasks whose builds never end, two trials at a time: each build is stopped at its
    ``build_timeout_sec`` before the next trial starts, so never more than two run, and none is
    left running once the run has ended."""
    ensure_test_image(docker_client, "busybox")
    markers = {}
    for n in range(4):
        markers[f"hangs-{n}"] = f"sleep 87{uuid.uuid4().int % 10000:04d}"
        toml = (
            make_task(
                tasks_dir,
                f"hangs-{n}",
                dockerfile=f"FROM busybox:latest\nRUN {markers[f'hangs-{n}']}\n",
            )
            / "task.toml"
        )
        toml.write_text(toml.read_text() + "build_timeout_sec = 6\n")

    def building() -> int:  # a build's RUN container carries its base image's labels, not ours
        return sum(
            any(marker in c.get("Command", "") for marker in markers.values())
            for c in docker_client.api.containers()
        )

    jobs = tmp_path / "jobs-hanging"
    engine = make_engine(
        jobs, tasks_dir, "docker", concurrency=2, retry=RetryPolicy(max_attempts=1)
    )
    most = 0
    await engine.start(resume=False)
    try:
        run = await engine.submit(RunRequest.model_validate(run_payload(list(markers), "nop")))
        ended = asyncio.ensure_future(engine.wait(run.run_id))
        deadline = time.monotonic() + 300
        while not ended.done():
            assert time.monotonic() < deadline, "the run never ended"
            most = max(most, await asyncio.to_thread(building))
            await asyncio.sleep(0.2)
        run = ended.result()
    finally:
        await engine.close()
    for trial in run.trials.values():
        (attempt,) = trial.attempts
        assert attempt.failure == "sandbox_build", attempt.error
        assert attempt.error is not None and "the build was stopped" in attempt.error
    assert 1 <= most <= 2, f"{most} builds ran at once"
    deadline = time.monotonic() + 30  # the engine removes a stopped build's container
    while await asyncio.to_thread(building):
        assert time.monotonic() < deadline, "a build outlived its trial"
        await asyncio.sleep(0.2)
