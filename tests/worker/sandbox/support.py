"""Fixtures for the sandbox tests: a tiny task folder and a started sandbox of each backend."""

from __future__ import annotations

import os
import textwrap
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from task_sets.task import Task, load_task
from worker.sandbox import Sandbox, SandboxSpec, sandbox_class
from worker.sandbox.settings import PrebuiltImages

DOCKERFILE = """\
FROM python:3.11-slim
ARG GREETING=hello
ENV TASK_GREETING=$GREETING TASK_LEVEL=3
WORKDIR /app
COPY data/ ./data/
"""

MakeTask = Callable[..., Task]


def write_task(
    root: Path,
    dockerfile: str = DOCKERFILE,
    *,
    internet: bool = False,
    skills: bool = True,
    name: str = "tiny-task",
) -> Task:
    folder = root / "tasks" / name
    (folder / "environment" / "data").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "task.toml").write_text(
        textwrap.dedent(
            f"""\
            version = "1.0"
            [agent]
            timeout_sec = 60
            [environment]
            allow_internet = {"true" if internet else "false"}
            cpus = 1
            memory_mb = 512
            """
        )
    )
    (folder / "instruction.md").write_text("Write the answer.\n")
    (folder / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    (folder / "environment" / "Dockerfile").write_text(dockerfile)
    (folder / "environment" / "data" / "input.txt").write_text("input data\n")
    if skills:
        skill = folder / "environment" / "skills" / "adder"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text("---\nname: adder\n---\nAdd numbers.\n")
    return load_task(folder)


@pytest.fixture
def make_task(tmp_path: Path) -> MakeTask:
    counter = iter(range(1000))

    def make(dockerfile: str = DOCKERFILE, **kwargs: object) -> Task:
        return write_task(tmp_path / f"t{next(counter)}", dockerfile, **kwargs)  # type: ignore[arg-type]

    return make


def make_spec(
    task: Task,
    state_dir: Path,
    backend: str,
    *,
    with_skills: bool = True,
    image: str | None = None,
    **kwargs: object,
) -> SandboxSpec:
    """A spec for ``backend`` (its own config type); ``image``: a prebuilt image to run."""
    state_dir.mkdir(parents=True, exist_ok=True)
    prebuilt = PrebuiltImages({task.task_id: image}) if image else None
    config_type = sandbox_class(backend).config_type
    return SandboxSpec(
        config=config_type.from_task(task, with_skills=with_skills, prebuilt=prebuilt),
        run_id="run-test",
        trial_id=f"trial-{uuid.uuid4().hex[:12]}",
        state_dir=state_dir,
        **kwargs,  # type: ignore[arg-type]
    )


BACKENDS = ["local", "docker"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    if name == "docker":
        client = request.getfixturevalue("docker_client")
        from tests.support.docker_images import ensure_test_image

        ensure_test_image(client, "python")
    return name


@pytest.fixture
def open_sandbox(backend: str, tmp_path: Path) -> Callable[..., object]:
    """Factory: ``async with open_sandbox(task, **spec_kwargs) as sb`` (stopped afterwards)."""
    counter = iter(range(1000))

    def factory(task: Task, **kwargs: object) -> Sandbox:
        spec = make_spec(task, tmp_path / f"state{next(counter)}", backend, **kwargs)
        return sandbox_class(backend)(spec)

    return factory


@pytest.fixture
async def sandbox(
    open_sandbox: Callable[..., Sandbox], make_task: MakeTask
) -> AsyncIterator[Sandbox]:
    sb = open_sandbox(make_task())
    try:
        await sb.start()
        yield sb
    finally:
        await sb.stop()


def processes_with(marker: str) -> list[int]:
    """Host pids whose command line contains ``marker`` (containers share this kernel)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(int(entry))
    return found
