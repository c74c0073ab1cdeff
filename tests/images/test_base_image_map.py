"""Base-image substitution for hosts without a registry: ``--base-image-map FROM=LOCAL`` (and
``$SKILLSBENCH_BASE_IMAGE_MAP``) makes a task whose Dockerfile starts ``FROM`` an unreachable
registry build from a local image, in the docker sandbox, in ``run`` and in ``images build-tasks``;
the substitution changes the image's content tag and is recorded in the run's metadata."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.images.support import write_task
from tests.support import run_cli

UNREACHABLE = "registry.example/ubuntu:24.04"


def test_map_items_env_and_files(tmp_path: Path) -> None:
    from worker.sandbox.settings import (
        PrebuiltImages,
        base_image_map_from_env,
        parse_base_image_map,
    )

    mapping = tmp_path / "bases.json"
    mapping.write_text(json.dumps({"b.example/x:1": "local/x:1"}))
    assert parse_base_image_map([f"{UNREACHABLE}=local/u:1", f"@{mapping}"], "flag") == {
        UNREACHABLE: "local/u:1",
        "b.example/x:1": "local/x:1",
    }
    env = {"SKILLSBENCH_BASE_IMAGE_MAP": f"{UNREACHABLE}=a:1, c.example/y=b:2"}
    assert base_image_map_from_env(env) == {UNREACHABLE: "a:1", "c.example/y": "b:2"}
    env = {"SKILLSBENCH_BASE_IMAGE_MAP": json.dumps({UNREACHABLE: "a:1"})}
    assert base_image_map_from_env(env) == {UNREACHABLE: "a:1"}
    # The command line wins over the environment.
    prebuilt = PrebuiltImages.from_env(env, bases={UNREACHABLE: "flag:1"})
    assert prebuilt.bases == {UNREACHABLE: "flag:1"}


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (["nolocal"], "expected FROM=LOCAL or @file.json"),
        (["a=b c"], "local image 'b c' is not an image reference"),
        (["=b"], "FROM reference '' is not an image reference"),
        (["@/nonexistent/bases.json"], "cannot read /nonexistent/bases.json"),
    ],
)
def test_bad_map_items_are_named(items: list[str], message: str) -> None:
    from worker.sandbox.settings import parse_base_image_map

    with pytest.raises(ValueError, match=message):
        parse_base_image_map(items, "--base-image-map")


def test_bad_map_on_the_command_line_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "images", "build-tasks", "--base-image-map", "nolocal")
    assert result.returncode == 2
    assert "--base-image-map: 'nolocal': expected FROM=LOCAL or @file.json" in result.stderr


def test_from_lines_are_rewritten() -> None:
    from worker.sandbox.dockerfile import map_base_images

    text = (
        "ARG REG=registry.example\n"
        "FROM --platform=linux/amd64 ${REG}/ubuntu:24.04 AS build\n"
        "RUN make\n"
        "FROM build\n"
        "FROM \\\n  registry.example/ubuntu:24.04\n"
        "FROM other:1\n"
    )
    out, used = map_base_images(text, {UNREACHABLE: "local/u:1", "build": "never/a-stage"})
    assert used == {UNREACHABLE: "local/u:1"}
    assert out.splitlines() == [
        "ARG REG=registry.example",
        "FROM --platform=linux/amd64 local/u:1 AS build",
        "RUN make",
        "FROM build",
        "FROM local/u:1",
        "",
        "FROM other:1",
    ]


def _write_unreachable_task(root: Path, task_id: str) -> Path:
    write_task(root, task_id, UNREACHABLE, skills=False)
    folder = root / task_id
    (folder / "solution").mkdir()
    (folder / "solution" / "solve.sh").write_text("cp /app/marker.txt /app/answer.txt\n")
    (folder / "tests" / "test.sh").write_text(
        f"grep -qx {task_id} /app/answer.txt && echo 1 > /logs/verifier/reward.txt"
        " || echo 0 > /logs/verifier/reward.txt\n"
    )
    return folder


@pytest.mark.docker
def test_substitution_changes_the_content_tag(docker_client: Any, tmp_path: Path) -> None:
    from tests.support.docker_images import ensure_test_image
    from worker.sandbox._docker.images import local_build_tag

    busybox = ensure_test_image(docker_client, "busybox")
    python = ensure_test_image(docker_client, "python")
    folder = _write_unreachable_task(tmp_path / "tasks", "mapped")
    env = folder / "environment"
    plain = local_build_tag(docker_client, "mapped", env, True, "/skills")
    to_busybox = local_build_tag(
        docker_client, "mapped", env, True, "/skills", {UNREACHABLE: busybox}
    )
    to_python = local_build_tag(
        docker_client, "mapped", env, True, "/skills", {UNREACHABLE: python}
    )
    assert len({plain, to_busybox, to_python}) == 3


@pytest.mark.docker
def test_missing_local_image_is_a_build_failure(docker_client: Any, tmp_path: Path) -> None:
    from worker.sandbox._docker.images import local_build_tag
    from worker.sandbox.errors import ImageBuildFailed

    folder = _write_unreachable_task(tmp_path / "tasks", "mapped")
    with pytest.raises(ImageBuildFailed, match="there is no local image skillsbench-test/absent:0"):
        local_build_tag(
            docker_client,
            "mapped",
            folder / "environment",
            True,
            "/skills",
            {UNREACHABLE: "skillsbench-test/absent:0"},
        )


@pytest.mark.docker
def test_run_and_build_tasks_use_the_map(
    docker_client: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.docker_images import ensure_test_image

    local = ensure_test_image(docker_client, "python")
    tasks = tmp_path / "tasks"
    _write_unreachable_task(tasks, "mapped")
    jobs = tmp_path / "jobs"
    common = ("--tasks-dir", tasks, "--task-id", "mapped")

    # (Without the map the engine would try to pull from the registry: not done in tests.)
    result = run_cli(
        capsys, "run", *common, "--agent", "oracle", "--environment", "docker",
        "--jobs-dir", jobs, "--expect", "passed",
        "--base-image-map", f"{UNREACHABLE}={local}",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    (run_json,) = (jobs / "runs").glob("*/run.json")
    meta = json.loads(run_json.read_text())["worker_meta"]
    assert meta["base_image_map"] == {UNREACHABLE: local}

    # build-tasks with the same map (from the environment here) builds the same content tag.
    output = tmp_path / "prebuilt.json"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SKILLSBENCH_BASE_IMAGE_MAP", json.dumps({UNREACHABLE: local}))
        result = run_cli(capsys, "images", "build-tasks", *common, "--output", output)
    assert result.returncode == 0, result.stderr
    built = json.loads(output.read_text())["mapped"]
    tagged = [
        image
        for image in docker_client.images.list(name="skillsbench-env/mapped")
        if image.id == built
    ]
    assert tagged, "build-tasks built another image than the run's"
