"""Deployment settings from the environment: prebuilt images and participant proxies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.worker.support import make_engine, make_task, run_payload
from worker.api import RunRequest
from worker.core.failures import RetryPolicy
from worker.sandbox.settings import ParticipantProxies, PrebuiltImages

PINNED = "ghcr.io/org/task-env@sha256:" + "a" * 64


def test_prebuilt_map_as_published() -> None:
    mapping = {"citation-check": PINNED}
    for raw in (json.dumps(mapping), json.dumps(json.dumps(mapping))):
        images = PrebuiltImages.from_env({"SKILLSBENCH_WORKER_PREBUILT_IMAGES": raw})
        assert images.image_for("citation-check") == PINNED
        assert images.image_for("other") is None
    assert PrebuiltImages.from_env({}).images == {}


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("{not json", "not JSON"),
        ('["a"]', "JSON object"),
        ('{"t": "ghcr.io/org/env:latest"}', "'t' must be pinned"),
        ('{"t": 3}', "'t' must be pinned"),
    ],
)
def test_bad_prebuilt_maps_are_refused(raw: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        PrebuiltImages.from_env({"SKILLSBENCH_WORKER_PREBUILT_IMAGES": raw})


def test_required_prebuilt_image_missing() -> None:
    images = PrebuiltImages.from_env(
        {
            "SKILLSBENCH_WORKER_PREBUILT_IMAGES": json.dumps({"a": PINNED}),
            "SKILLSBENCH_WORKER_REQUIRE_PREBUILT_IMAGES": "true",
        }
    )
    assert images.image_for("a") == PINNED
    with pytest.raises(ValueError, match="no prebuilt image for task 'b'"):
        images.image_for("b")


def test_participant_proxies() -> None:
    assert ParticipantProxies.from_env({}).resolve("agent", "http://a/", None) == (
        "http://a/",
        None,
    )
    proxies = ParticipantProxies.from_env(
        {
            "SKILLSBENCH_WORKER_PARTICIPANT_PROXY_URL": "http://proxy:18080/",
            "SKILLSBENCH_WORKER_SANDBOX_PARTICIPANT_PROXY_URL": "http://172.17.0.1:18081",
        }
    )
    assert proxies.resolve("agent", "http://a/", None) == (
        "http://proxy:18080/agent",
        "http://172.17.0.1:18081/agent",
    )


def test_worker_refuses_a_bad_prebuilt_map(tmp_path: Path) -> None:
    env = {**os.environ, "SKILLSBENCH_WORKER_PREBUILT_IMAGES": '{"t": "unpinned:latest"}'}
    done = subprocess.run(
        [sys.executable, "-m", "worker", "--port", "1", "--jobs-dir", str(tmp_path / "j"),
         "--tasks-dir", str(tmp_path), "--environment", "docker"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "must be pinned" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.docker
async def test_required_prebuilt_image_missing_is_a_sandbox_error(
    tmp_path: Path, docker_client: Any
) -> None:
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    make_task(tasks, "answer-42")
    jobs = tmp_path / "jobs"
    engine = make_engine(
        jobs,
        tasks,
        "docker",
        concurrency=1,
        retry=RetryPolicy(max_attempts=3),
        prebuilt=PrebuiltImages(images={}, required=True),
    )
    await engine.start(resume=False)
    request = RunRequest.model_validate(run_payload(["answer-42"], agent="oracle"))
    run = await engine.wait((await engine.submit(request)).run_id)
    (trial,) = run.trials.values()
    assert trial.row is not None and trial.row["infra_failure_type"] == "sandbox_error"
    assert [a.failure for a in trial.attempts] == ["sandbox_unsupported"]  # not retried
    assert "no prebuilt image" in (trial.attempts[0].error or "")


def test_builds_setting() -> None:
    assert PrebuiltImages.from_env({}).builds is True
    assert PrebuiltImages.from_env({"SKILLSBENCH_WORKER_BUILDS": "allowed"}).builds is True
    assert PrebuiltImages.from_env({"SKILLSBENCH_WORKER_BUILDS": "never"}).builds is False
    with pytest.raises(ValueError, match="SKILLSBENCH_WORKER_BUILDS must be one of"):
        PrebuiltImages.from_env({"SKILLSBENCH_WORKER_BUILDS": "sometimes"})


@pytest.mark.docker
async def test_a_run_that_needs_a_build_is_refused_before_it_starts(
    tmp_path: Path, docker_client: Any
) -> None:
    """Builds never: a task without a prebuilt image or an image of its content tag on the engine
    is refused at submit, in one line naming it and the fix; nothing is built, no run exists."""
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    unique = f"FROM python:3.11-slim\nWORKDIR /root\nLABEL test.unique={tmp_path.name}\n"
    make_task(tasks, "never-built-here", dockerfile=unique)
    make_task(tasks, "prebuilt-elsewhere")
    jobs = tmp_path / "jobs"
    engine = make_engine(
        jobs,
        tasks,
        "docker",
        concurrency=1,
        retry=RetryPolicy(max_attempts=1),
        prebuilt=PrebuiltImages(images={"prebuilt-elsewhere": PINNED}, builds=False),
    )
    await engine.start(resume=False)
    try:
        request = RunRequest.model_validate(
            run_payload(["never-built-here", "prebuilt-elsewhere"], agent="oracle")
        )
        with pytest.raises(ValueError) as refused:
            await engine.submit(request)
        message = str(refused.value)
        assert "\n" not in message
        assert message.startswith("task images: never-built-here would need a build")
        assert "prebuilt-elsewhere" not in message
        assert "images build-tasks" in message and "SKILLSBENCH_WORKER_PREBUILT_IMAGES" in message
        assert engine.runs() == []
        # Other tests build images in parallel: look only for what this task's Dockerfile makes.
        unique_label = {"label": [f"test.unique={tmp_path.name}"]}
        assert docker_client.images.list(filters=unique_label) == []
    finally:
        await engine.close()
