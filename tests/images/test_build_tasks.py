"""`images build-tasks`: with-skills task images, pinned by digest, pushed, and usable by the sandbox."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.images.support import PushRegistry, write_task
from tests.support import run_cli, serve_in_thread
from worker.sandbox._docker import DockerSandbox
from worker.sandbox.settings import PrebuiltImages


def test_push_needs_a_registry(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    result = run_cli(capsys, "images", "build-tasks", "--task-id", "x", "--push")
    assert result.returncode == 2
    assert "--push needs --registry" in result.stderr


@pytest.fixture
def tasks_dir(docker_client: Any, tmp_path: Path) -> Path:
    from tests.support.docker_images import ensure_test_image

    base = ensure_test_image(docker_client, "busybox")
    root = tmp_path / "tasks"
    write_task(root, "with-skill", base, skills=True)
    write_task(root, "plain", base, skills=False)
    return root


async def _sandbox_sees(task_dir: Path, image: str, tmp_path: Path) -> str:
    from task_sets.task import load_task

    state = tmp_path / f"state-{task_dir.name}"
    state.mkdir()
    task = load_task(task_dir)
    sandbox = DockerSandbox.for_task(
        task,
        run_id="run-build-tasks-test",
        trial_id=f"trial-{task_dir.name}",
        state_dir=state,
        prebuilt=PrebuiltImages({task.task_id: image}),
    )
    await sandbox.start()
    try:
        result = await sandbox.exec("cat /app/marker.txt; ls /skills 2>/dev/null", timeout_sec=30)
    finally:
        await sandbox.stop()
    assert result.exit_code in (0, 1), result.stderr
    return result.stdout


@pytest.mark.docker
async def test_build_tasks_local_and_pushed(
    docker_client: Any, tasks_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    local_map = tmp_path / "local.json"
    result = run_cli(
        capsys,
        "images", "build-tasks", "--tasks-dir", tasks_dir,
        "--task-id", "with-skill", "--task-id", "plain",
        "--platform", "linux/amd64", "--output", local_map,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    local = json.loads(local_map.read_text())
    assert sorted(local) == ["plain", "with-skill"]
    assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", ref) for ref in local.values())
    assert local["plain"] != local["with-skill"]

    registry = PushRegistry()
    with serve_in_thread(registry.app()) as url:
        host = url.removeprefix("http://")
        pushed_map = tmp_path / "prebuilt_images.json"
        result = run_cli(
            capsys,
            "images", "build-tasks", "--tasks-dir", tasks_dir,
            "--task-id", "with-skill", "--task-id", "plain",
            "--output", pushed_map, "--push", "--registry", host,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    # The worker reads the map as SKILLSBENCH_WORKER_PREBUILT_IMAGES.
    prebuilt = PrebuiltImages.from_env(
        {
            "SKILLSBENCH_WORKER_PREBUILT_IMAGES": pushed_map.read_text(),
            "SKILLSBENCH_WORKER_REQUIRE_PREBUILT_IMAGES": "true",
        }
    )
    pushed = prebuilt.images
    repo = "skillsbench-task-env"
    for task_id, ref in pushed.items():
        name, _, digest = ref.partition("@")
        assert name == f"{host}/{repo}", ref
        assert digest in registry.manifest_digests(repo), f"{task_id}: {digest} never pushed"
        # The engine knows the image by this digest: what the sandbox resolves.
        assert docker_client.images.get(ref).id == local[task_id]

    # The docker sandbox runs on the recorded images: with-skills variant, skills in /skills.
    image = prebuilt.image_for("with-skill")
    assert image is not None
    seen = await _sandbox_sees(tasks_dir / "with-skill", image, tmp_path)
    assert seen.split() == ["with-skill", "lookup"]
    seen = await _sandbox_sees(tasks_dir / "plain", local["plain"], tmp_path)
    assert seen.split() == ["plain"]


@pytest.mark.docker
def test_unsupported_platform(
    docker_client: Any, tasks_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_cli(
        capsys,
        "images", "build-tasks", "--tasks-dir", tasks_dir, "--task-id", "plain",
        "--platform", "linux/arm64", "--output", tmp_path / "x.json",
    )  # fmt: skip
    assert result.returncode == 2
    assert "--platform 'linux/arm64' is not supported" in result.stderr
    assert not (tmp_path / "x.json").exists()
