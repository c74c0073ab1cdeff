"""Nothing the agent does to its own processes ends the sandbox: not ``kill -9 -1``, not a
signal to PID 1, not its shell exiting. Who ended a sandbox that did end is told apart
(``Sandbox.ended``): from inside (the agent's doing) or from outside (the host's)."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.worker.sandbox.support import MakeTask, make_spec
from worker.sandbox import Sandbox, sandbox_class
from worker.sandbox.base import SandboxEnd

SIGNALS = "KILL TERM INT HUP QUIT USR1 USR2 ALRM PIPE STOP TSTP CHLD"
SELF_HARM = {
    "kill-everything": "kill -9 -1; kill -STOP -1; true",
    "signal-init": f"for s in {SIGNALS}; do kill -s $s 1; done; true",
    "exit-shell": "exit 3",
    "kill-own-parents": "kill -9 $PPID 2>/dev/null; kill -9 $$",
}


async def assert_still_running(sandbox: Sandbox) -> None:
    alive = await sandbox.exec("echo alive", timeout_sec=60)
    assert (alive.exit_code, alive.stdout) == (0, "alive\n"), alive
    assert await sandbox.ended() is None


@pytest.mark.parametrize("harm", list(SELF_HARM))
async def test_the_sandbox_outlives_what_the_agent_does_to_its_processes(
    sandbox: Sandbox, harm: str
) -> None:
    background = await sandbox.exec("(sleep 300 &) ; echo started", timeout_sec=60)
    assert background.stdout == "started\n"
    await sandbox.exec(SELF_HARM[harm], timeout_sec=60)
    await assert_still_running(sandbox)
    # The verifier's first step still works after it.
    await sandbox.kill_processes()
    await assert_still_running(sandbox)


@pytest.mark.docker
@pytest.mark.parametrize("harm", list(SELF_HARM))
async def test_a_busybox_container_outlives_it_too(
    docker_client: Any, make_task: MakeTask, tmp_path: Path, harm: str
) -> None:
    """The init is plain /bin/sh: busybox's ash does it as well as Debian's dash."""
    from tests.support.docker_images import ensure_test_image

    ensure_test_image(docker_client, "busybox")
    task = make_task("FROM busybox:latest\nWORKDIR /app\n")
    sandbox = sandbox_class("docker")(make_spec(task, tmp_path / "state", "docker"))
    async with sandbox:
        await sandbox.exec(SELF_HARM[harm], timeout_sec=60)
        await assert_still_running(sandbox)
        await sandbox.kill_processes()
        await assert_still_running(sandbox)


@pytest.mark.docker
async def test_the_docker_init_reaps_orphans(
    docker_client: Any, make_task: MakeTask, tmp_path: Path
) -> None:
    from tests.support.docker_images import ensure_test_image

    ensure_test_image(docker_client, "python")
    sandbox = sandbox_class("docker")(make_spec(make_task(), tmp_path / "state", "docker"))
    async with sandbox:
        # Each exec leaves an orphan that exits at once: reparented to PID 1, which reaps it.
        for _ in range(5):
            await sandbox.exec("sh -c 'true & true & exit 0'", timeout_sec=60)
        zombies = await sandbox.exec(
            "n=0; while [ $n -lt 100 ]; do "
            "z=$(cat /proc/[0-9]*/stat 2>/dev/null | grep -c ') Z '); "
            '[ "$z" = 0 ] && break; sleep 0.1; n=$((n+1)); done; echo "$z"',
            timeout_sec=60,
        )
        assert zombies.stdout == "0\n", zombies


@pytest.mark.docker
async def test_docker_tells_who_ended_a_container(
    docker_client: Any, make_task: MakeTask, tmp_path: Path
) -> None:
    from tests.support.docker_images import ensure_test_image
    from worker.sandbox._docker.containers import container_end

    image = ensure_test_image(docker_client, "busybox")
    sandbox = sandbox_class("docker")(make_spec(make_task(), tmp_path / "state", "docker"))
    async with sandbox:
        container_id = sandbox._container_id  # type: ignore[attr-defined]
        docker_client.api.kill(container_id)  # from outside
        assert await sandbox.ended() is SandboxEnd.OUTSIDE
        docker_client.api.remove_container(container_id, force=True)
        assert await sandbox.ended() is SandboxEnd.OUTSIDE
    # An init that exited by itself, and one the container's memory limit killed.
    for command, end in (
        ("exit 3", SandboxEnd.INSIDE),
        ("x=a; while :; do x=$x$x; done", SandboxEnd.INSIDE),
    ):
        container = docker_client.containers.run(
            image, ["sh", "-c", command], detach=True, mem_limit="16m", memswap_limit="16m"
        )
        try:
            container.wait(timeout=120)
            assert container_end(docker_client, container.id) is end, container.attrs["State"]
        finally:
            container.remove(force=True)


async def test_the_local_init_ended_from_outside(make_task: MakeTask, tmp_path: Path) -> None:
    sandbox = sandbox_class("local")(make_spec(make_task(), tmp_path / "state", "local"))
    async with sandbox:
        assert await sandbox.ended() is None
        init = sandbox._init  # type: ignore[attr-defined]
        os.kill(init.pid, signal.SIGKILL)
        init.process.wait()
        assert await sandbox.ended() is SandboxEnd.OUTSIDE
