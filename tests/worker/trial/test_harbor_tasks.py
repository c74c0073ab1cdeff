"""Harbor's task features in Docker (issue #33 item 3): a task made by Harbor's own ``harbor
init`` (PyPI ``harbor`` 0.25, its default separate verifier: ``tests/Dockerfile``, declared
``artifacts``, a ``[[verifier.collect]]`` command) and Terminal-Bench-2-shaped tasks with a
prebuilt ``[environment].docker_image`` (with and without environment/Dockerfile) give oracle 1
and nop 0. No registry is reachable: the template's bases are swapped for the local test image,
and the prebuilt image is built here and tagged with the task's name."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support import PASS_TEST, make_task
from tests.support.docker_images import ensure_test_image
from tests.worker.support import run_rows, started_engine
from worker.sandbox.base import sandbox_class

HARBOR_ENV = Path(__file__).parents[1] / "trial_record" / "harbor-env.sh"
PREBUILT = "skillsbench-test/tb2-shaped:20251031"  # a TB2 task's docker_image, built locally

# The template's test.sh with python3 in place of pytest (no package index here): the reward
# is 1 only where the verifier's own image (tests/Dockerfile's marker) sees the artifacts.
SEPARATE_TEST = """\
#!/bin/bash
if python3 /tests/test_outputs.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""
SEPARATE_OUTPUTS = """\
import os
assert os.path.exists("/verifier-image"), "not the verifier's own image"
assert open("/app/answer.txt").read().strip() == "42", "the declared artifact"
assert open("/logs/artifacts/collected.txt").read().strip() == "42", "the collect hook's file"
assert not os.path.exists("/app/stray.txt"), "only artifacts reach the verifier"
"""
SEPARATE_SOLVE = "#!/bin/bash\necho 42 > /app/answer.txt\necho left > /app/stray.txt\n"

TB2_TOML = """\
version = "1.0"

[metadata]
author_name = "Terminal-Bench"
difficulty = "easy"
category = "file-operations"
tags = ["tb2-shaped"]

[verifier]
timeout_sec = 60.0

[agent]
timeout_sec = 60.0

[environment]
build_timeout_sec = 600.0
docker_image = "{image}"
cpus = 1
memory = "2G"
storage = "10G"
"""
TB2_TEST = """\
#!/bin/bash
if [ "$(cat /app/answer.txt 2>/dev/null)" = "$(cat /app/input.txt)" ]; then r=1; else r=0; fi
echo $r > /logs/verifier/reward.txt
"""
TB2_SOLVE = "#!/bin/bash\ncp /app/input.txt /app/answer.txt\n"


def harbor_cli() -> Path:
    """Harbor's CLI from its published package (the cached environment the reader tests use)."""
    made = subprocess.run(
        ["sh", str(HARBOR_ENV)], capture_output=True, text=True, timeout=900, check=False
    )
    if made.returncode != 0:
        pytest.skip(f"Harbor cannot be installed here: {made.stderr.strip()[-300:]}")
    return Path(made.stdout.strip().splitlines()[-1]) / "bin" / "harbor"


def harbor_init(tasks: Path, name: str, *flags: str) -> Path:
    subprocess.run(
        [str(harbor_cli()), "init", "--task", f"acme/{name}", "-o", str(tasks), *flags],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return tasks / name


def separate_task(tasks: Path, python_image: str) -> None:
    """``harbor init --verifier-mode separate`` (Harbor's default), filled in: an answer
    declared as an artifact, a collect hook, a verifier image of its own."""
    folder = harbor_init(tasks, "separate-task", "--verifier-mode", "separate")
    toml = (folder / "task.toml").read_text()
    assert 'environment_mode = "separate"' in toml
    assert (folder / "tests" / "Dockerfile").is_file()
    toml = toml.replace("artifacts = []", 'artifacts = ["/app/answer.txt"]', 1)
    hook = '[{command = "cp /app/answer.txt /logs/artifacts/collected.txt"}]'
    toml = re.sub(r"(\[verifier\][^\[]*?)collect = \[\]", rf"\1collect = {hook}", toml, count=1)
    assert hook in toml
    (folder / "task.toml").write_text(toml)
    (folder / "instruction.md").write_text("Write 42 to /app/answer.txt.\n")
    env_dockerfile = (folder / "environment" / "Dockerfile").read_text()
    # No registry: the template's bases are the local test image.
    (folder / "environment" / "Dockerfile").write_text(
        env_dockerfile.replace("FROM ubuntu:24.04", f"FROM {python_image}")
    )
    (folder / "tests" / "Dockerfile").write_text(
        f"FROM {python_image}\nRUN touch /verifier-image\nWORKDIR /app\nCOPY . /tests/\n"
    )
    (folder / "tests" / "test.sh").write_text(SEPARATE_TEST)
    (folder / "tests" / "test_outputs.py").write_text(SEPARATE_OUTPUTS)
    (folder / "solution" / "solve.sh").write_text(SEPARATE_SOLVE)


def tb2_task(tasks: Path, name: str, *, dockerfile: bool) -> None:
    """A Terminal-Bench-2-shaped task: its prebuilt image holds the input. Its Dockerfile (TB2
    ships one beside the image) would fail to build: the image is run, never built."""
    folder = tasks / name
    (folder / "environment").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "solution").mkdir()
    (folder / "task.toml").write_text(TB2_TOML.format(image=PREBUILT))
    (folder / "instruction.md").write_text("Copy /app/input.txt to /app/answer.txt.\n")
    if dockerfile:
        (folder / "environment" / "Dockerfile").write_text("FROM scratch\nRUN exit 1\n")
    for path, text in (("tests/test.sh", TB2_TEST), ("solution/solve.sh", TB2_SOLVE)):
        (folder / path).write_text(text)
        os.chmod(folder / path, 0o755)


def build_prebuilt(client: Any, python_image: str, context: Path) -> None:
    context.mkdir()
    (context / "Dockerfile").write_text(
        f"FROM {python_image}\nWORKDIR /app\nRUN echo tb2-input > /app/input.txt\n"
    )
    client.images.build(path=str(context), tag=PREBUILT, rm=True, labels={"skillsbench.test": "1"})


async def test_harbor_tasks_in_docker(
    tmp_path: Path, docker_client: Any, request: pytest.FixtureRequest
) -> None:
    python_image = ensure_test_image(docker_client, "python")
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    separate_task(tasks, python_image)
    tb2_task(tasks, "tb2-shaped", dockerfile=True)
    tb2_task(tasks, "tb2-image-only", dockerfile=False)
    build_prebuilt(docker_client, python_image, tmp_path / "prebuilt")
    jobs = tmp_path / "jobs"
    task_ids = ["separate-task", "tb2-shaped", "tb2-image-only"]
    async with started_engine(jobs, tasks, "docker", concurrency=2) as engine:
        oracle, nop = await asyncio.gather(
            run_rows(engine, jobs, task_ids, "oracle"), run_rows(engine, jobs, task_ids, "nop")
        )
    for agent, trials in (("oracle", oracle), ("nop", nop)):
        by_task = {row["task_id"]: (row, result, folder) for row, result, folder in trials}
        assert sorted(by_task) == sorted(task_ids), trials
        for task_id, (row, result, _) in by_task.items():
            expected = 1.0 if agent == "oracle" else 0.0
            assert row["score_eligible"], (agent, task_id, result)
            assert row["reward"] == expected, (agent, task_id, result.get("reason"), result)
        _, result, folder = by_task["separate-task"]
        separate = result["verifier"]["separate"]
        assert separate["collect"][0]["exit_code"] == (0 if agent == "oracle" else 1), separate
        assert "regrade" not in result["verifier"], result["verifier"]  # fresh already
        if agent == "oracle":
            assert separate["artifacts"] == ["/logs/artifacts", "/app/answer.txt"], separate
            assert (folder / "artifacts" / "app" / "answer.txt").read_text() == "42\n"
            assert (folder / "artifacts" / "logs" / "artifacts" / "collected.txt").is_file()


def test_steps_and_separate_models_as_harbor_writes_them(tmp_path: Path) -> None:
    """``harbor init --steps 2`` is refused by name; the separate template resolves as
    Harbor's ``resolve_verifier_environment_definition`` does (tests/Dockerfile)."""
    from task_sets.task import TaskError, load_task

    steps = harbor_init(tmp_path, "steps-task", "--steps", "2")
    with pytest.raises(TaskError, match=r"multi-step task \(\[\[steps\]\]: step-1, step-2\)"):
        load_task(steps)
    folder = harbor_init(tmp_path, "sep", "--verifier-mode", "separate")
    (folder / "instruction.md").write_text("Do it.\n")
    task = load_task(folder)
    verifier = task.separate_verifier()
    assert verifier is not None and verifier.environment_dir == folder / "tests"
    assert [a.source for a in task.config.artifact_entries] == ["/logs/artifacts"]
    shared = harbor_init(tmp_path, "shared", "--verifier-mode", "shared")
    (shared / "instruction.md").write_text("Do it.\n")
    assert load_task(shared).separate_verifier() is None
    # A separate verifier's own docker_image, like the task's, needs docker: refused up front.
    local = sandbox_class("local").config_type
    tb2_task(tmp_path, "tb2", dockerfile=False)
    with pytest.raises(ValueError, match="needs the docker environment: it runs the prebuilt"):
        local.from_task(load_task(tmp_path / "tb2"))
    toml = (folder / "task.toml").read_text()
    (folder / "task.toml").write_text(
        toml + f'\n[verifier.environment]\ndocker_image = "{PREBUILT}"\n'
    )
    with pytest.raises(ValueError, match=r"separate verifier.s sandbox .* needs the docker"):
        local.from_task(load_task(folder))


def separate_fresh_task(tasks: Path) -> None:
    """A separate verifier with no tests/Dockerfile: Harbor grades in a fresh copy of the task's
    own environment, given only the declared artifact."""
    folder = make_task(
        tasks,
        "separate-fresh",
        verifier_toml='environment_mode = "separate"',
        solve_sh="#!/bin/sh\necho 42 > /root/answer.txt\necho 42 > /root/stray.txt\n",
        test_sh="#!/bin/sh\n[ -e /root/stray.txt ] && exit 1\n" + PASS_TEST.split("\n", 1)[1],
    )
    toml = folder / "task.toml"
    toml.write_text('artifacts = ["/root/answer.txt"]\n' + toml.read_text())


@pytest.mark.parametrize("environment", ["local", "docker"])
async def test_separate_verifier_on_a_fresh_copy_of_the_environment(
    tmp_path: Path, environment: str, request: pytest.FixtureRequest
) -> None:
    if environment == "docker":  # also tags python:3.11-slim (no registry here)
        ensure_test_image(request.getfixturevalue("docker_client"), "python")
    elif os.geteuid() != 0:
        pytest.skip("local: the trial tests' sandbox needs the root worker here")
    tasks = tmp_path / "tasks"
    separate_fresh_task(tasks)
    jobs = tmp_path / "jobs"
    async with started_engine(jobs, tasks, environment, concurrency=2) as engine:
        [(oracle, oracle_result, _)], [(nop, nop_result, _)] = await asyncio.gather(
            run_rows(engine, jobs, ["separate-fresh"], "oracle"),
            run_rows(engine, jobs, ["separate-fresh"], "nop"),
        )
    assert oracle["reward"] == 1.0 and oracle["score_eligible"], oracle_result
    assert nop["reward"] == 0.0 and nop["score_eligible"], nop_result
    assert oracle_result["verifier"]["separate"]["artifacts"][-1] == "/root/answer.txt"
