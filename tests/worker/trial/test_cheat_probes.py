"""Cheat probes run as ``script:`` agents: none of them may earn a reward.

The probe task keeps its answer secret in ``tests/`` and ``solution/``; its verifier writes a
reward only for the right answer or when a planted file survived hardening, and otherwise
writes nothing, so any reward a probe gets comes from the probe itself.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.worker.support import (
    make_task,
    run_payload,
    script,
    serve_worker,
    submit_and_follow,
)
from tests.worker.trial.support import PROBE_TEST, PROBES, started_sandbox
from worker.sandbox.base import SandboxTampered
from worker.trial.verifier import snapshot_plantables


@pytest.fixture
def tasks_dir(tmp_path: Path) -> Path:
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    make_task(
        tasks,
        "secret-answer",
        instruction="Write the secret number to /root/answer.txt.",
        test_sh=PROBE_TEST,
        solve_sh="#!/bin/sh\necho 1337 > /root/answer.txt\n",
        extra_tests={"expected.txt": "1337\n"},
    )
    return tasks


@pytest.fixture
async def http(tmp_path: Path, tasks_dir: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with serve_worker(tmp_path, tasks_dir, timeout=30) as client:
        yield client


async def test_no_probe_earns_a_reward_and_the_oracle_does(
    http: httpx.AsyncClient, tmp_path: Path, tasks_dir: Path
) -> None:
    host_task = tasks_dir / "secret-answer"
    agents = {
        name: script(tmp_path, name, f'HOST_TASK="{host_task}"\n{body}')
        for name, body in PROBES.items()
    }
    agents["oracle"] = "oracle"
    results = await asyncio.gather(
        *(
            submit_and_follow(http, run_payload(["secret-answer"], agent=spec))
            for spec in agents.values()
        )
    )
    by_probe = dict(zip(agents, results, strict=True))
    _, _, oracle = by_probe.pop("oracle")
    assert oracle["rows"][0]["passed"], (
        "the probe task must be passable, or the probes prove nothing"
    )
    for name, (run_id, _, status) in by_probe.items():
        (row,) = status["rows"]
        assert row["reward"] == 0.0 and not row["passed"], f"probe {name} earned a reward: {row}"
        trial = tmp_path / "jobs" / "runs" / run_id / "trials" / row["trial_id"]
        result = json.loads((trial / "result.json").read_text())
        assert result["agent_result"]["status"] == "completed", (name, result)
        if name == "plant-conftest":
            removed = result["verifier"]["removed_files"]
            assert "/root/conftest.py" in removed and "/root/sitecustomize.py" in removed, removed
        if name == "plant-site-pth" and os.geteuid() == 0:  # else /usr/local is read-only
            assert result["failure"] == "verifier_tampered", result
            assert any(e["path"].endswith("/zz_probe.pth") for e in result["verifier"]["tampering"])


@pytest.mark.parametrize("backend", ["local", "docker"])
async def test_hardening_keeps_what_was_there_and_removes_what_was_planted(
    tmp_path: Path, tasks_dir: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    """Both backends report the same removals (docker replaces /tests in one exec, local
    merges and the hardening script cleans up)."""
    from worker.trial.verifier import harden, snapshot_plantables

    async with started_sandbox(
        backend, tasks_dir / "secret-answer", tmp_path / "sandbox", f"keep-{backend}", request
    ) as sandbox:
        await sandbox.exec("echo keep > /root/keep.pth; echo keep > /root/same.pth")
        snapshot = await snapshot_plantables(sandbox, None)
        assert "/root/keep.pth" in snapshot and "/root/same.pth" in snapshot
        # (tests/ goes in first so that planting into /tests works on every backend)
        await sandbox.upload(tasks_dir / "secret-answer" / "tests", "/tests")
        await sandbox.exec(
            "echo changed > /root/keep.pth; mkdir -p /root/deep/er; "
            "echo x > /root/deep/er/conftest.py; echo x > '/root/with space.pth'; "
            "ln -s /etc/hostname /tmp/link.pth; echo 1 > /logs/verifier/reward.txt; "
            "mkdir -p /tests/sub && echo planted > /tests/conftest.py && "
            "echo planted > /tests/sub/extra.py && ln -s /etc/hostname /tests/sub/data.txt"
        )
        expected = ["expected.txt", "test.sh"]
        removed = await harden(sandbox, snapshot, None, tasks_dir / "secret-answer" / "tests")
        assert sorted(removed) == sorted(
            [
                "/root/keep.pth",
                "/root/deep/er/conftest.py",
                "/root/with space.pth",
                "/tmp/link.pth",
                "/tests/conftest.py",
                "/tests/sub/extra.py",
                "/tests/sub/data.txt",
                "/tests/sub",
            ]
        )
        listing = await sandbox.exec("ls -A /root /logs/verifier /tests")
        assert "same.pth" in listing.stdout and "reward.txt" not in listing.stdout
        assert sorted(listing.stdout.split("/tests:")[1].split()) == expected


async def test_plantable_scan_fails_closed_without_a_checksum_tool(tmp_path: Path) -> None:
    """Without cksum/sha256sum/md5sum every signature would be empty and hardening would
    silently find nothing planted: the scan stops with a clear error instead."""
    from worker.trial.verifier import NO_CHECKSUM, harden_command, snapshot_command

    for argv in (snapshot_command("/root", None), harden_command("/root", None)):
        # Only the shell's builtins are left (and no busybox applets to fall back on).
        done = subprocess.run(
            argv,
            env={"PATH": str(tmp_path)},
            input=b"",
            capture_output=True,
            check=False,
        )
        assert done.returncode == 3 and NO_CHECKSUM in done.stderr.decode(), done


# What the agent did to the sandbox, and a tests/test.sh that always leaves a reward (0 here:
# the agent did no work), so the row is a scored failure unless the verifier cannot run.
WRECKS = {
    "workdir-removed": "cd / && rm -rf /app",
    "workdir-a-file": "cd / && rm -rf /app && echo x > /app",
    "logs-a-file": "rm -rf /logs; echo x > /logs",
    "logs-a-link": "rm -rf /logs; ln -s /nowhere /logs",
    "logs-locked": "chmod 700 /logs; chmod 500 /logs/verifier",
}
SCORED_TEST = "#!/bin/sh\npwd > /logs/verifier/cwd.txt\necho 0 > /logs/verifier/reward.txt\n"


@pytest.mark.parametrize("root_verifier", [True, False], ids=["root", "as-nobody"])
@pytest.mark.parametrize("wreck", list(WRECKS))
@pytest.mark.parametrize("backend", ["local", "docker"])
async def test_an_agent_cannot_make_the_verifier_fail_to_run(
    tmp_path: Path, backend: str, wreck: str, root_verifier: bool, request: pytest.FixtureRequest
) -> None:
    """A verifier that cannot start is an infrastructure failure (retried, then unscored), not
    a failed task: nothing the agent can do to its sandbox may cause one."""
    from worker.sandbox.base import VERIFIER_LOGS_DIR
    from worker.trial.verifier import TEST_COMMAND, harden, harden_and_test, read_reward

    if backend == "local" and not root_verifier:
        pytest.skip("the local sandbox runs everything as root")
    folder = make_task(
        tmp_path / "tasks",
        "wrecked",
        test_sh=SCORED_TEST,
        dockerfile="FROM python:3.11-slim\nWORKDIR /app\n",
    )
    trial_id = f"wreck-{backend}-{wreck}-{root_verifier}"
    async with started_sandbox(backend, folder, tmp_path / "sandbox", trial_id, request) as sandbox:
        assert sandbox.workdir == "/app"
        snapshot = await snapshot_plantables(sandbox, None)
        await sandbox.exec(WRECKS[wreck], cwd="/")
        if root_verifier:
            _, result = await harden_and_test(
                sandbox, snapshot, None, folder / "tests", env={}, timeout_sec=60
            )
        else:
            await harden(sandbox, snapshot, None, folder / "tests")
            result = await sandbox.exec(
                list(TEST_COMMAND), cwd=sandbox.workdir, user="nobody", timeout_sec=60
            )
        assert result.exit_code == 0, result
        await sandbox.download(VERIFIER_LOGS_DIR, tmp_path / "verifier")
        assert read_reward(tmp_path / "verifier").value == 0.0
        assert (tmp_path / "verifier" / "cwd.txt").read_text() == "/app\n"


@pytest.mark.parametrize("backend", ["local", "docker"])
async def test_plantables_with_newlines_or_backslashes_in_their_names_are_removed(
    tmp_path: Path, tasks_dir: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    """A name with a newline splits in the line-based signature list (and sha256sum escapes
    backslashes), yet Python loads such a .pth: hardening removes them outright."""
    from worker.trial.verifier import harden, snapshot_plantables

    site = "/usr/local/lib/python3.11/site-packages"
    async with started_sandbox(
        backend, tasks_dir / "secret-answer", tmp_path / "sandbox", f"odd-{backend}", request
    ) as sandbox:
        if backend == "docker":
            await sandbox.exec(f"mkdir -p {site}")
        snapshot = await snapshot_plantables(sandbox, None)
        planted = ["/root/evil\nname.pth", "/tmp/back\\slash.pth", "/root/deep/x\n/conftest.py"]
        for path in planted:
            made = await sandbox.exec(
                ["sh", "-c", 'mkdir -p "${1%/*}" && echo "import os" > "$1"', "sh", path]
            )
            assert made.exit_code == 0, made
        removed = await harden(sandbox, snapshot, None, tasks_dir / "secret-answer" / "tests")
        left = await sandbox.exec(
            [
                "sh",
                "-c",
                'for f in "$@"; do [ -e "$f" ] && echo "left: $f"; done; true',
                "sh",
                *planted,
            ]
        )
        assert left.stdout == "", (left.stdout, removed)
        assert removed  # reported, though not by their (unprintable) names
        if backend == "docker":
            # In the system folders it is more than a plant: the verifier does not run at all.
            hook = f"{site}/zz\nprobe.pth"
            await sandbox.exec(["sh", "-c", 'echo "import os" > "$1"', "sh", hook])
            with pytest.raises(SandboxTampered) as tampered:
                await harden(sandbox, snapshot, None, tasks_dir / "secret-answer" / "tests")
            assert hook in [e["path"] for e in tampered.value.evidence]
