"""What only the ``docker`` backend promises: images, limits, labels, users and the reaper."""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.worker.sandbox.support import DOCKERFILE, MakeTask, make_spec
from worker.sandbox import SandboxError, sandbox_class
from worker.sandbox._docker import DockerSandbox
from worker.sandbox._docker.client import LABEL_BUILT, LABEL_MANAGED, LABEL_RUN, LABEL_TRIAL
from worker.sandbox._docker.containers import reap_stale
from worker.sandbox.errors import ImageBuildFailed


@pytest.fixture
def client(docker_client: Any) -> Any:
    from tests.support.docker_images import ensure_test_image

    ensure_test_image(docker_client, "python")
    return docker_client


def docker_sandbox(task: object, state: Path, **kwargs: object) -> DockerSandbox:
    sb = sandbox_class("docker")(make_spec(task, state, "docker", **kwargs))  # type: ignore[arg-type]
    assert isinstance(sb, DockerSandbox)
    return sb


def unique(dockerfile: str = DOCKERFILE) -> str:
    # A fresh build context, so the image is built (and labelled) by this test.
    return dockerfile + f"ENV TEST_NONCE={uuid.uuid4().hex}\n"


async def test_container_has_limits_labels_and_no_network(
    client: Any, make_task: MakeTask, tmp_path: Path
) -> None:
    async with docker_sandbox(make_task(), tmp_path / "s") as sb:
        assert sb._container_id is not None
        attrs = client.api.inspect_container(sb._container_id)
        labels = attrs["Config"]["Labels"]
        assert labels[LABEL_MANAGED] == "true"
        assert labels[LABEL_RUN] == sb.spec.run_id and labels[LABEL_TRIAL] == sb.spec.trial_id
        host = attrs["HostConfig"]
        assert host["NanoCpus"] == 1_000_000_000
        assert host["Memory"] == 512 * 1024 * 1024
        assert host["NetworkMode"] == "none"
        container_id = sb._container_id
    assert not client.api.containers(all=True, filters={"id": container_id})


async def test_skills_conditions_build_distinct_images(
    client: Any, make_task: MakeTask, tmp_path: Path
) -> None:
    task = make_task(DOCKERFILE + "COPY skills /opt/bundled-skills\n")
    probe = "ls /skills /opt/bundled-skills 2>/dev/null | grep -c adder; true"
    async with docker_sandbox(task, tmp_path / "a", with_skills=True) as with_skills:
        assert (await with_skills.exec(probe)).stdout == "2\n"
    async with docker_sandbox(task, tmp_path / "b", with_skills=False) as without:
        assert (await without.exec(probe)).stdout == "0\n"
    assert with_skills.image != without.image


async def test_run_lines_build_and_failures_are_clear(
    client: Any, make_task: MakeTask, tmp_path: Path
) -> None:
    good = make_task(DOCKERFILE + "RUN echo built > /opt/built.txt\n")
    async with docker_sandbox(good, tmp_path / "a") as sb:
        assert (await sb.exec("cat /opt/built.txt")).stdout == "built\n"
        image = client.images.get(sb.image)
        assert image.labels[LABEL_BUILT] == "true" and image.labels[LABEL_RUN] == sb.spec.run_id
    bad = make_task(DOCKERFILE + "RUN exit 7\n")
    sb = docker_sandbox(bad, tmp_path / "b")
    with pytest.raises(SandboxError, match="image build failed"):
        await sb.start()
    await sb.stop()


async def test_exec_as_another_user(client: Any, make_task: MakeTask, tmp_path: Path) -> None:
    async with docker_sandbox(make_task(), tmp_path / "s") as sb:
        assert (await sb.exec("id -u", user="nobody")).stdout == "65534\n"
        assert (await sb.exec("id -u")).stdout == "0\n"


async def test_files_anywhere_in_the_container(
    client: Any, make_task: MakeTask, tmp_path: Path
) -> None:
    src = tmp_path / "f.txt"
    src.write_text("anywhere")
    async with docker_sandbox(make_task(), tmp_path / "s") as sb:
        await sb.upload(src, "/opt/deep/f.txt")
        await sb.download("/opt/deep/f.txt", tmp_path / "back.txt")
    assert (tmp_path / "back.txt").read_text() == "anywhere"


async def test_prebuilt_image_is_used_and_never_reaped(
    client: Any, make_task: MakeTask, tmp_path: Path
) -> None:
    from tests.support.docker_images import ensure_test_image

    prebuilt = ensure_test_image(client, "python")
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    spec = make_spec(make_task(), tmp_path / "s", "docker", image=prebuilt)
    sb = DockerSandbox(dataclasses.replace(spec, run_id=run_id))  # a run of its own
    try:
        await sb.start()
        assert sb.image == prebuilt
        report = await reap_stale(active_run_ids=[], only_runs=[run_id])
        assert report.containers == [sb._container_id]
        client.images.get(prebuilt)  # still there
    finally:
        await sb.stop()  # idempotent after the reaper removed the container


async def test_reaper_removes_what_a_crashed_run_left(
    client: Any, make_task: MakeTask, tmp_path: Path
) -> None:
    crashed, alive = f"run-{uuid.uuid4().hex[:8]}", f"run-{uuid.uuid4().hex[:8]}"

    def spec_for(run_id: str, name: str, dockerfile: str) -> Any:
        return dataclasses.replace(
            make_spec(make_task(dockerfile), tmp_path / name, "docker"), run_id=run_id
        )

    left = DockerSandbox(spec_for(crashed, "a", unique()))
    kept = DockerSandbox(spec_for(alive, "b", DOCKERFILE))
    try:
        await left.start()  # never stopped: the worker "crashed"
        await kept.start()
        report = await reap_stale(active_run_ids=[alive], only_runs=[crashed, alive])
        assert report.containers == [left._container_id]
        # Its image is the task's content-tagged cache, which any later run may use: kept.
        assert left.image is not None and client.images.get(left.image).labels[LABEL_BUILT]
        assert not client.api.containers(all=True, filters={"label": f"{LABEL_RUN}={crashed}"})
        assert (await kept.exec("echo alive")).stdout == "alive\n"
    finally:
        await kept.stop()
        await left.stop()
        await reap_stale(active_run_ids=[], only_runs=[crashed, alive])
        if left.image is not None:
            client.images.remove(left.image)


@pytest.mark.parametrize("tar", [True, False], ids=["one-exec", "no-tar-fallback"])
async def test_kill_upload_exec_with_and_without_tar_in_the_image(
    client: Any, make_task: MakeTask, tmp_path: Path, tar: bool
) -> None:
    """With tar in the image the verifier's start is one exec; without, the three steps."""
    upload = tmp_path / "tests"
    upload.mkdir()
    (upload / "test.sh").write_text("echo graded\n")
    async with docker_sandbox(make_task(), tmp_path / "s") as sb:
        assert sb._has_tar  # the test image's busybox has tar
        sb._has_tar = tar  # as if the image had none
        since = int(time.time())
        result = await sb.kill_upload_exec(
            "sh /tests/test.sh; cat", upload=upload, target="/tests", stdin=b"in", timeout_sec=60
        )
        assert (result.exit_code, result.stdout) == (0, "graded\nin")
        events = client.api.events(
            since=since - 1,
            until=int(time.time()) + 1,
            filters={"container": sb._container_id, "event": "exec_start"},
            decode=True,
        )
        # (the sandbox's own setup exec may fall in the window)
        execs = [e for e in events if "chmod 777" not in e.get("Action", "")]
        assert len(execs) == (1 if tar else 2)  # the fallback adds the kill-all exec (and a put)
        gone = await sb.exec("ls -A / | grep -c skillsbench-stage; true")
        assert gone.stdout == "0\n"


async def test_kill_upload_exec_reports_a_failed_stage(
    client: Any, make_task: MakeTask, tmp_path: Path
) -> None:
    # /proc takes no new entries: the failure names the step instead of a bare exit code.
    upload = tmp_path / "tests"
    upload.mkdir()
    (upload / "test.sh").write_text("true\n")
    async with docker_sandbox(make_task(), tmp_path / "s") as sb:
        with pytest.raises(SandboxError, match="upload to /proc/x failed: cannot move"):
            await sb.kill_upload_exec("true", upload=upload, target="/proc/x", timeout_sec=60)


def test_a_changed_base_image_gets_a_new_build_tag(
    client: Any, make_task: MakeTask, tmp_path: Path
) -> None:
    """The tag of a self-built image covers the local id of its FROM image: a base that was
    re-pulled or rebuilt here is never served from a build of the old one."""
    from tests.support.docker_images import ensure_test_image
    from worker.sandbox._docker.images import local_build_tag

    base = f"skillsbench-test/moving-base:{uuid.uuid4().hex[:12]}"
    repository, tag = base.split(":")
    task = make_task(f"FROM {base}\n")
    skills = task.config.environment.skills_dir
    client.images.get(ensure_test_image(client, "python")).tag(repository, tag)
    try:
        first = local_build_tag(client, task.task_id, task.environment_dir, True, skills)
        assert local_build_tag(client, task.task_id, task.environment_dir, True, skills) == first
        client.images.get(ensure_test_image(client, "busybox")).tag(repository, tag)
        assert local_build_tag(client, task.task_id, task.environment_dir, True, skills) != first
    finally:
        client.images.remove(base)


async def test_a_restart_removes_every_container_of_its_run_and_nothing_else(
    client: Any, make_task: MakeTask, tmp_path: Path
) -> None:
    from worker.sandbox._docker.containers import remove_containers

    resumed, other = f"run-{uuid.uuid4().hex[:8]}", f"run-{uuid.uuid4().hex[:8]}"
    sandboxes = [
        DockerSandbox(
            dataclasses.replace(make_spec(make_task(), tmp_path / name, "docker"), run_id=run)
        )
        for name, run in (("a", resumed), ("b", resumed), ("c", other))
    ]
    try:
        for sb in sandboxes:
            await sb.start()  # never stopped: the worker "crashed"
        assert remove_containers(client, resumed, None, None) == 2
        assert not client.api.containers(all=True, filters={"label": f"{LABEL_RUN}={resumed}"})
        assert (await sandboxes[2].exec("echo alive")).stdout == "alive\n"
    finally:
        for sb in sandboxes:
            await sb.stop()


@pytest.mark.parametrize("tar", [True, False], ids=["one-exec", "no-tar-fallback"])
@pytest.mark.parametrize(
    "passwd",
    [
        "sed -i 's|^root:x:0:0:root:/root:|root:x:1000:1000:root:/tmp/home:|' /etc/passwd",
        "sed -i '/^root:/d' /etc/passwd",
    ],
    ids=["root-renumbered", "root-removed"],
)
async def test_kill_upload_exec_is_root_whatever_the_agent_made_of_etc_passwd(
    client: Any, make_task: MakeTask, tmp_path: Path, passwd: str, tar: bool
) -> None:
    """A root agent can rewrite /etc/passwd, which docker reads to resolve a user *name*: the
    verifier is uid 0 with HOME=/root all the same (not uid 1000 that can kill nothing, nor an
    exec that fails: an unscored row instead of a failed one)."""
    upload = tmp_path / "tests"
    upload.mkdir()
    (upload / "test.sh").write_text("true\n")
    async with docker_sandbox(make_task(), tmp_path / "s") as sb:
        sb._has_tar = tar
        await sb.exec(f"{passwd} && mkdir -p /tmp/home")
        result = await sb.kill_upload_exec(
            "id -u; id -g; echo $HOME", upload=upload, target="/tests", timeout_sec=60
        )
        assert (result.exit_code, result.stdout) == (0, "0\n0\n/root\n"), result


async def test_an_image_with_a_non_root_user_starts_with_its_files(
    client: Any, make_task: MakeTask, tmp_path: Path
) -> None:
    """The setup (folders, spec.files) is root's work whatever USER the image ends with; the
    image's user is still who runs an exec that names none."""
    instruction = tmp_path / "instruction.md"
    instruction.write_text("Do it.\n")
    task = make_task(DOCKERFILE + "USER nobody\n")
    async with docker_sandbox(task, tmp_path / "s", files={"/instruction.md": instruction}) as sb:
        seen = await sb.exec("id -u; cat /instruction.md; touch /logs/verifier/x && echo ok")
        assert seen.stdout == "65534\nDo it.\nok\n", seen


async def test_a_worker_start_reaps_what_it_left_and_nothing_of_other_workers(
    client: Any, make_task: MakeTask, tmp_path: Path
) -> None:
    """The reaper runs at worker start (the backend's ``reap`` hook) and only over what carries
    this worker's owner label: another worker's sandboxes on the same engine live on."""
    from worker.runs.engine import Engine, EngineSettings

    engine = Engine(
        EngineSettings(jobs_dir=tmp_path / "jobs", tasks_dir=tmp_path, environment="docker")
    )
    run = f"run-{uuid.uuid4().hex[:8]}"

    def owned_by(owner: str, name: str) -> DockerSandbox:
        spec = make_spec(make_task(), tmp_path / name, "docker", owner=owner)
        return DockerSandbox(dataclasses.replace(spec, run_id=run))

    mine, theirs = owned_by(engine.owner, "mine"), owned_by(f"other-{uuid.uuid4().hex}", "theirs")
    try:
        await mine.start()  # never stopped: this worker "crashed"
        await theirs.start()
        await engine.start()
        assert not client.containers.list(
            all=True, filters={"label": f"{LABEL_TRIAL}={mine.spec.trial_id}"}
        )
        assert (await theirs.exec("echo alive")).stdout == "alive\n"
    finally:
        await engine.close()
        await theirs.stop()
        await mine.stop()


def building(client: Any, marker: str) -> list[str]:
    """The containers that run a build's ``RUN <marker>`` now (they carry none of our labels:
    a build's containers get its base image's)."""
    return [c["Id"] for c in client.api.containers() if marker in c.get("Command", "")]


async def _wait_until(condition: Any, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition never met"
        await asyncio.sleep(0.1)


def hanging_build(make_task: MakeTask, state: Path, build_timeout: float) -> tuple[Any, str]:
    """The spec of a task whose image build never ends (a run of its own), and its RUN step."""
    marker = f"sleep 86{uuid.uuid4().int % 10000:04d}"
    spec = make_spec(make_task(f"FROM busybox:latest\nRUN {marker}\n"), state, "docker")
    config = dataclasses.replace(spec.config, build_timeout_sec=build_timeout)
    return dataclasses.replace(spec, config=config, run_id=f"run-{uuid.uuid4().hex[:8]}"), marker


async def test_a_build_timeout_stops_the_build(
    client: Any, make_task: MakeTask, tmp_path: Path
) -> None:
    """Past ``build_timeout_sec`` the build's connection is shut: the engine ends the build
    (its RUN container killed and removed) before the trial's start fails."""
    from tests.support.docker_images import ensure_test_image

    ensure_test_image(client, "busybox")
    spec, marker = hanging_build(make_task, tmp_path / "s", 8)
    seen: list[str] = []

    async def watch() -> None:
        while True:
            seen.extend(building(client, marker))
            await asyncio.sleep(0.2)

    watcher = asyncio.create_task(watch())
    try:
        with pytest.raises(ImageBuildFailed, match=r"timed out after 8s \(the build was stopped\)"):
            await DockerSandbox.task_init(spec)
    finally:
        watcher.cancel()
    assert seen, "the build never reached its RUN step"
    await _wait_until(lambda: not building(client, marker), timeout=30)
    # Removed too: the engine removes a stopped build's container a moment later (the api's
    # listing, which does not inspect each container, cannot 404 on one being removed).
    await _wait_until(
        lambda: not client.api.containers(all=True, filters={"id": seen[0]}), timeout=60
    )


async def test_a_cancelled_build_stops(client: Any, make_task: MakeTask, tmp_path: Path) -> None:
    from tests.support.docker_images import ensure_test_image

    ensure_test_image(client, "busybox")
    spec, marker = hanging_build(make_task, tmp_path / "s", 600)
    started = asyncio.create_task(DockerSandbox.task_init(spec))
    await _wait_until(lambda: bool(building(client, marker)))
    started.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(started, 60)
    await _wait_until(lambda: not building(client, marker), timeout=30)
