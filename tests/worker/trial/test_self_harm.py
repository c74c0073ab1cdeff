"""An agent that harms its own processes fails its trial; it never turns it into "not counted".

``kill -9 -1``, signals to PID 1, its shell exiting or filling memory past the task's
``memory_mb`` (then the row says ``oom``) give a failed, score-eligible row with reward 0 (never
retried) on both sandboxes.
A sandbox removed or killed from outside (the host's fault) is ``sandbox_lost``, retried and never
scored, whatever the agent's command returned: its exit 137 looks like an agent that killed its
own command, which stays the agent's result."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.worker.support import (
    make_task,
    run_payload,
    script,
    serve_worker,
    submit_and_follow,
)
from worker.core.failures import FailureKind, RetryPolicy, semantics

MEMORY_MB = 64
SELF_HARM = {
    "kill-everything": "kill -9 -1\n",
    "kill-init": "kill -9 1; kill -TERM 1; kill -INT 1; kill -HUP 1; kill -STOP 1\n",
    "exit-shell": "echo 42 > /root/not-the-answer.txt\nexit 0\n",
    # The agent's own command killed by the agent: exit 137, as a kill from outside would give.
    "kill-own-command": "kill -9 $PPID; kill -9 $$\n",
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
    retry = RetryPolicy(max_attempts=3, backoff_base_sec=0.0)
    async with serve_worker(
        tmp_path, tasks, environment, concurrency=2, timeout=60, retry=retry
    ) as client:
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
        # Ended from outside is the sandbox's loss, whichever phase noticed it.
        assert sandbox_ended(SandboxEnd.OUTSIDE, infra) is FailureKind.SANDBOX_LOST
        assert sandbox_ended(None, infra) is infra
    lost = semantics(FailureKind.SANDBOX_LOST)
    assert lost.retried and not lost.score_eligible


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process on this host."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                parent = int(stat.read().rsplit(b")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
        found[int(entry)] = (parent, command)
    return found


def _local_target(target: str, run_dir: Path, processes: dict[int, tuple[int, str]]) -> int | None:
    """The host pid of one process of the running trial's local sandbox: its init's outer bwrap
    (``init-bwrap``), the init itself (``init``: its namespace's leader), the init's ``sleep``
    (``init-sleep``) or the outer bwrap of the agent's command (``command-bwrap``); all of them
    the harness's, none visible to anything in the sandbox."""
    marker = "exec sleep infinity" if target.startswith("init") else "skillsbench-agent-script"
    mine = {  # the outer bwrap (the worker's child: the engine runs in this process) and its
        # namespace's leader (a fork of it)
        pid: parent
        for pid, (parent, command) in processes.items()
        if str(run_dir) in command and marker in command
    }
    outer = [pid for pid, parent in mine.items() if parent == os.getpid()]
    if len(outer) != 1:
        return None
    if target in ("init-bwrap", "command-bwrap"):
        return outer[0]
    leader = [pid for pid, parent in mine.items() if parent == outer[0]]
    if len(leader) != 1:
        return None
    if target == "init":
        return leader[0]
    sleeps = [
        pid
        for pid, (parent, command) in processes.items()
        if parent == leader[0] and command.startswith("sleep infinity")
    ]
    return sleeps[0] if len(sleeps) == 1 else None


def _kill_from_outside(
    environment: str, target: str, run_id: str, run_dir: Path, docker_client: Any
) -> bool:
    """Kill ``target`` of the run's running sandbox from outside; False when it is not there."""
    if environment == "docker":
        label = {"label": [f"skillsbench.run={run_id}"]}
        running = docker_client.containers.list(filters=label)
        if len(running) != 1:
            return False
        if target == "docker-kill":
            running[0].kill()  # `docker kill`
        else:  # the container's init, by its host pid
            os.kill(running[0].attrs["State"]["Pid"], signal.SIGKILL)
        return True
    pid = _local_target(target, run_dir, _processes())
    if pid is None:
        return False
    os.kill(pid, signal.SIGKILL)
    return True


# The outer bwrap of the agent's command ("command-bwrap") is covered at the sandbox level
# (tests/worker/sandbox/test_self_harm.py::test_the_bwrap_of_a_command_killed_from_outside): at
# the trial level the kill raced the command's own end on a loaded host (seen once in CI).
OUTSIDE_KILLS = [  # (environment, phase, what the host kills)
    *(("local", "agent", t) for t in ("init", "init-sleep", "init-bwrap")),
    ("docker", "agent", "docker-kill"),
    ("docker", "agent", "init-pid"),
    ("local", "verifier", "init"),
    ("docker", "verifier", "docker-kill"),
    ("local", "regrade", "init"),
    ("docker", "regrade", "docker-kill"),
]


@pytest.mark.parametrize(
    ("environment", "phase", "target"),
    [
        pytest.param(
            e, p, t, id=f"{e}-{p}-{t}", marks=[pytest.mark.docker] if e == "docker" else []
        )
        for e, p, t in OUTSIDE_KILLS
    ],
    indirect=["environment"],
)
async def test_a_sandbox_killed_from_outside_is_lost_and_retried(
    http: httpx.AsyncClient,
    tmp_path: Path,
    environment: str,
    phase: str,
    target: str,
    request: pytest.FixtureRequest,
) -> None:
    """While the agent's command, the verifier or the verifier of the regrade's fresh sandbox
    runs (each waits on a sleep no other test runs), the host kills the sandbox: every attempt
    is ``sandbox_lost`` (retried, not scored), never a run graded 0 ("agent completed (exit
    137)") or a verifier "tampered with" (no verdict)."""
    marker = f"sleep {700000 + uuid.uuid4().int % 99999}"
    test_sh = tmp_path / "tasks" / "answer-42" / "tests" / "test.sh"
    if phase == "agent":
        agent = script(tmp_path, "waits", f"{marker}\necho 42 > /root/answer.txt\n")
    else:
        # A file of the home folder's configuration: left out of the work product, so a pass
        # is graded again on a fresh sandbox, where it is missing.
        agent = script(tmp_path, "answers", "echo 42 > /root/answer.txt\necho x > /root/.note\n")
        wait = marker if phase == "verifier" else f"[ -e /root/.note ] || {marker}"
        test_sh.write_text(f"#!/bin/sh\n{wait}\n{test_sh.read_text().split(chr(10), 1)[1]}")
    client = request.getfixturevalue("docker_client") if environment == "docker" else None
    response = await http.post("/runs", json=run_payload(["answer-42"], agent=agent))
    run_id = response.json()["run_id"]
    run_dir = tmp_path / "jobs" / "runs" / run_id
    killed: set[int] = set()  # the sleeps seen, one per attempt
    deadline = time.monotonic() + 240
    status = (await http.get(f"/runs/{run_id}")).json()
    while status["status"] not in ("completed", "failed", "cancelled"):
        assert time.monotonic() < deadline, status
        waiting = [
            pid
            for pid, (_, command) in _processes().items()
            if command.strip() == marker and pid not in killed
        ]
        if waiting and _kill_from_outside(environment, target, run_id, run_dir, client):
            killed.update(waiting)
        await asyncio.sleep(0.1)
        status = (await http.get(f"/runs/{run_id}")).json()
    (row,) = status["rows"]
    assert not row["score_eligible"] and row["infra_failure_type"] == "sandbox_error", row
    results = [
        json.loads(path.read_text()) for path in sorted(run_dir.glob("trials/*/result.json"))
    ]
    assert [r["attempt"] for r in sorted(results, key=lambda r: r["attempt"])] == [1, 2, 3]
    for result in results:
        assert result["failure"] == "sandbox_lost", result
        assert result["retried"] and not result["score_eligible"], result
        assert "ended from outside" in result["error"], result
        assert ("regrade" in result["verifier"]) is (phase == "regrade"), result
