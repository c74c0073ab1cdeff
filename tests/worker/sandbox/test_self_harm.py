"""Nothing the agent does to its own processes ends the sandbox: not ``kill -9 -1``, not a
signal to PID 1, not its shell exiting. Who ended a sandbox that did end is told apart
(``Sandbox.ended``): from inside (the agent's doing) or from outside (the host's), whatever the
command that ran then returned."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.worker.sandbox.support import MakeTask, make_spec
from worker.sandbox import Sandbox, sandbox_class
from worker.sandbox.base import SandboxEnd, SandboxError

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
    ensure_test_image(docker_client, "python")  # make_task()'s FROM
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


@pytest.mark.docker
async def test_docker_init_is_out_of_reach_of_root_and_of_its_own_uid(
    docker_client: Any, make_task: MakeTask, tmp_path: Path
) -> None:
    """Its memory, environment and executable are what ptrace guards: refused to root (no
    CAP_SYS_PTRACE, another uid) and to a process of the init's uid (not dumpable), while the
    agent's own processes stay open to it."""
    from tests.support.docker_images import ensure_test_image
    from worker.sandbox._docker.sandbox import INIT_USER

    ensure_test_image(docker_client, "python")  # make_task()'s FROM
    sandbox = sandbox_class("docker")(make_spec(make_task(), tmp_path / "state", "docker"))
    probe = (
        "for f in /proc/$1/mem /proc/$1/task/$1/mem /proc/$1/environ; do"
        " if (exec 3<$f) 2>/dev/null; then echo open $f; fi; done;"
        " readlink /proc/$1/exe || echo no-exe"
    )
    async with sandbox:
        for user in ("0:0", INIT_USER, None):
            result = await sandbox.exec(["sh", "-c", probe, "sh", "1"], user=user, timeout_sec=60)
            assert result.stdout == "no-exe\n", (user, result)
        own = await sandbox.exec(["sh", "-c", "set -- $$; " + probe], timeout_sec=60)
        assert own.stdout.count("open /proc/") == 3 and "no-exe" not in own.stdout, own
        who = await sandbox.exec("id -u", timeout_sec=60)
        assert who.stdout.strip() == "0", who  # the image's USER (none: root), not the init's


@pytest.mark.docker
async def test_docker_tells_a_killed_container_from_a_killed_command(
    docker_client: Any, make_task: MakeTask, tmp_path: Path
) -> None:
    """Both end the command with 137: ``docker kill`` of the container is OUTSIDE the moment
    the command's exec returns (the engine marks the container stopped a moment later), the
    command killing itself leaves the container running."""
    from tests.support.docker_images import ensure_test_image

    ensure_test_image(docker_client, "busybox")
    task = make_task("FROM busybox:latest\nWORKDIR /app\n")
    sandbox = sandbox_class("docker")(make_spec(task, tmp_path / "state", "docker"))
    async with sandbox:
        result = await sandbox.exec("kill -9 $$", timeout_sec=60)
        assert result.exit_code == 137, result
        await assert_still_running(sandbox)
        running = asyncio.create_task(sandbox.exec("touch /tmp/up; sleep 300", timeout_sec=280))
        await _wait_for(lambda: _exists(docker_client, sandbox, "/tmp/up"))
        docker_client.api.kill(sandbox._container_id)  # type: ignore[attr-defined]
        result = await asyncio.wait_for(running, 60)
        assert result.exit_code == 137, result
        assert await sandbox.ended() is SandboxEnd.OUTSIDE


def _exists(client: Any, sandbox: Sandbox, path: str) -> bool:
    """Whether ``path`` is in the container (a `docker exec` of the test's own)."""
    container = client.containers.get(sandbox._container_id)  # type: ignore[attr-defined]
    return bool(container.exec_run(["test", "-e", path]).exit_code == 0)


async def test_the_local_init_ended_from_outside(make_task: MakeTask, tmp_path: Path) -> None:
    sandbox = sandbox_class("local")(make_spec(make_task(), tmp_path / "state", "local"))
    async with sandbox:
        assert await sandbox.ended() is None
        init = sandbox._init  # type: ignore[attr-defined]
        os.kill(init.pid, signal.SIGKILL)
        init.process.wait()
        assert await sandbox.ended() is SandboxEnd.OUTSIDE


async def test_the_local_init_killed_under_a_command(make_task: MakeTask, tmp_path: Path) -> None:
    """The command ends at once (its namespace dies with the init: exit 137, as if it had been
    killed from inside), and only ``ended()`` tells the two apart; no new init is started over
    the lost one for the verifier."""
    sandbox = sandbox_class("local")(make_spec(make_task(), tmp_path / "state", "local"))
    async with sandbox:
        init = sandbox._init  # type: ignore[attr-defined]
        running = asyncio.create_task(sandbox.exec("touch /tmp/up; sleep 300", timeout_sec=280))
        up = sandbox._root / "tmp" / "up"  # type: ignore[attr-defined]
        await _wait_for(up.exists)
        os.kill(init.pid, signal.SIGKILL)
        result = await asyncio.wait_for(running, 60)  # not the 15 s grace for a bwrap report
        assert result.exit_code == 137 and not result.timed_out, result
        assert await sandbox.ended() is SandboxEnd.OUTSIDE
        with pytest.raises(SandboxError, match="ended from outside"):
            await sandbox.kill_processes()
        assert await sandbox.ended() is SandboxEnd.OUTSIDE


async def test_the_bwrap_of_a_command_killed_from_outside(
    make_task: MakeTask, tmp_path: Path
) -> None:
    """A command's own bwrap is a host process nothing in the sandbox sees: killed, it is the
    sandbox's loss (SandboxError, ``ended()`` OUTSIDE), not the command's exit 137."""
    sandbox = sandbox_class("local")(make_spec(make_task(), tmp_path / "state", "local"))
    async with sandbox:
        running = asyncio.create_task(sandbox.exec("sleep 300", timeout_sec=280))
        procs = sandbox._procs  # type: ignore[attr-defined]
        await _wait_for(lambda: any(s.child_pid for s in procs))
        (spawned,) = procs
        os.kill(spawned.proc.pid, signal.SIGKILL)
        with pytest.raises(SandboxError, match="killed by the host"):
            await asyncio.wait_for(running, 60)
        assert await sandbox.ended() is SandboxEnd.OUTSIDE
    # The command killing itself (exit 137 too) is the command's own result.
    sandbox = sandbox_class("local")(make_spec(make_task(), tmp_path / "state2", "local"))
    async with sandbox:
        result = await sandbox.exec("kill -9 $$", timeout_sec=60)
        assert result.exit_code == 137, result
        await assert_still_running(sandbox)


async def _wait_for(condition: Callable[[], bool], timeout: float = 60) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition never met"
        await asyncio.sleep(0.05)
