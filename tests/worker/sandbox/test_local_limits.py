"""The local sandbox's resource limits (worker/sandbox/_bubblewrap/limits.py): every process of a
sandbox in its trial's cgroup with the task's limits, nothing left after stop() or a worker's
crash (the reaper), and the approximate fallback where the host offers no cgroups."""

from __future__ import annotations

import dataclasses
import subprocess
import time
from pathlib import Path

import pytest

from tests.worker.sandbox.support import MakeTask, make_spec, processes_with
from worker.sandbox import sandbox_class
from worker.sandbox._bubblewrap import limits
from worker.sandbox.resources import HostCapacity, ResourceSettings, fit, unenforced_line

LOCAL = sandbox_class("local")


def _cgroups() -> limits.Host:
    host = limits.host()
    if host.kind == "rlimit":
        pytest.skip("this host offers no writable cgroup (v2 delegated or v1 as root)")
    return host


async def test_every_process_of_the_sandbox_is_in_its_cgroup_with_the_limits(
    tmp_path: Path, make_task: MakeTask
) -> None:
    host = _cgroups()
    spec = make_spec(make_task(), tmp_path / "state", "local", pids_limit=300)
    sandbox = LOCAL(spec)
    await sandbox.start()
    marker = f"limits-{spec.trial_id}"
    try:
        background = await sandbox.open_process(["sh", "-c", f"sleep 60; : {marker}"])
        deadline = time.monotonic() + 30
        while not (pids := processes_with(marker)):
            assert time.monotonic() < deadline, "the sandbox's process never showed"
            time.sleep(0.05)
        folders = sandbox._limits.dirs
        assert folders, "no cgroup made"
        for folder in folders.values():
            assert str(pids[0]) in (folder / "cgroup.procs").read_text().split(), folder
        if host.kind == "cgroup1":
            assert (folders["memory"] / "memory.limit_in_bytes").read_text().strip() == str(
                512 * 1024 * 1024
            )
            assert (folders["cpu"] / "cpu.cfs_quota_us").read_text().strip() == "100000"
            assert (folders["pids"] / "pids.max").read_text().strip() == "300"
        else:
            assert (folders[""] / "pids.max").read_text().strip() == "300"
            assert (folders[""] / "cpu.max").read_text().split()[0] == "100000"
        assert await sandbox.limit_events() == {"oom_kills": 0, "pids_max_hits": 0}
        await background.kill()
    finally:
        await sandbox.stop()
    assert not any(folder.exists() for folder in folders.values()), "cgroups left after stop()"


async def test_sandboxes_with_the_same_ids_keep_apart(tmp_path: Path, make_task: MakeTask) -> None:
    """Two sandboxes whose run and trial ids are the same (tests in two processes of one host,
    a trial id reused) get cgroups of their own: stopping one, which kills all its group holds,
    leaves the other running."""
    _cgroups()
    task = make_task()
    ids = {"run_id": f"run-{tmp_path.name}", "trial_id": "trial-same"}
    first = LOCAL(dataclasses.replace(make_spec(task, tmp_path / "one", "local"), **ids))
    second = LOCAL(dataclasses.replace(make_spec(task, tmp_path / "two", "local"), **ids))
    assert first.spec.trial_id == second.spec.trial_id and first.spec.run_id == second.spec.run_id
    assert set(first._limits.dirs.values()).isdisjoint(second._limits.dirs.values())
    await first.start()
    try:
        await second.start()
        try:
            await first.stop()
            result = await second.exec("echo alive", timeout_sec=60)
            assert (result.exit_code, result.stdout) == (0, "alive\n"), result
        finally:
            await second.stop()
    finally:
        await first.stop()


async def test_the_reaper_removes_what_a_killed_worker_left(tmp_path: Path) -> None:
    _cgroups()
    owner = f"reap-test-{tmp_path.name}"
    made = {}
    sleepers = {}
    for run_id in ("run-stale", "run-active"):
        trial = limits.TrialLimits(
            owner=owner,
            name=limits.group_name(run_id, "trial-1", tmp_path),
            cpus=1,
            memory_mb=128,
            pids_limit=32,
        )
        trial.create()
        sleepers[run_id] = sleeper = subprocess.Popen([*trial.wrapper(), "sleep", "60"])
        made[run_id] = trial
        deadline = time.monotonic() + 30
        while not all(  # the wrapper joins, then becomes sleep
            str(sleeper.pid) in (folder / "cgroup.procs").read_text().split()
            for folder in trial.dirs.values()
        ):
            assert time.monotonic() < deadline, "the sleeper never joined its cgroups"
            time.sleep(0.01)
    try:
        assert await LOCAL.reap(owner, {"run-active"}) == len(made["run-stale"].dirs)
        assert not any(folder.exists() for folder in made["run-stale"].dirs.values())
        assert sleepers["run-stale"].wait(timeout=10) == -9  # killed with its cgroup
        assert all(folder.exists() for folder in made["run-active"].dirs.values())
        assert sleepers["run-active"].poll() is None
        assert await LOCAL.run_cleanup("run-active") == len(made["run-active"].dirs)
        assert sleepers["run-active"].wait(timeout=10) == -9
    finally:
        for trial in made.values():
            trial.remove()
        for base in limits.host().bases.values():
            (base / f"skillsbench-{owner}").rmdir()


async def test_without_cgroups_the_limits_are_approximate_and_said_to_be(
    tmp_path: Path, make_task: MakeTask, monkeypatch: pytest.MonkeyPatch
) -> None:
    fallback = limits.Host("rlimit", {})
    monkeypatch.setattr(limits, "host", lambda: fallback)
    mechanisms = LOCAL.limit_mechanisms()
    assert mechanisms["memory"] is not None and mechanisms["memory"].startswith("approximate")
    line = unenforced_line("local", mechanisms)
    assert line is not None and "approximate" in line
    sandbox = LOCAL(make_spec(make_task(), tmp_path / "state", "local"))
    await sandbox.start()
    try:
        # RLIMIT_AS at the task's 512 MB: a 1 GiB allocation fails in the process itself.
        result = await sandbox.exec(["python3", "-c", "bytearray(1 << 30)"], timeout_sec=60)
        assert result.exit_code != 0 and "MemoryError" in result.stderr, result
        assert await sandbox.limit_events() is None  # cannot be told apart
    finally:
        await sandbox.stop()


def test_requests_are_overridden_then_capped_to_the_host() -> None:
    host = HostCapacity(cpus=2, memory_mb=8000)
    fitted = fit(1, 512, ResourceSettings(), host)
    assert (fitted.cpus, fitted.memory_mb, fitted.changes) == (1, 512, [])
    fitted = fit(4, 16000, ResourceSettings(), host)
    assert (fitted.cpus, fitted.memory_mb) == (2, 8000)
    assert (
        fitted.summary()
        == "cpus 4 -> 2 (host has 2 CPUs); memory_mb 16000 -> 8000 (host has 8000 MB)"
    )
    fitted = fit(1, 512, ResourceSettings(override_cpus=8, override_memory_mb=1024), host)
    assert (fitted.cpus, fitted.memory_mb) == (2, 1024)
    assert [c["why"] for c in fitted.changes] == ["override", "host has 2 CPUs", "override"]
    assert fitted.as_dict()["requested"] == {"cpus": 1, "memory_mb": 512}


def test_a_delegated_cgroup_v2_subtree_gets_the_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cgroup v2 cannot be exercised on this host (its v2 hierarchy has no controllers): the
    files the v2 path writes and reads, on a folder laid out like a delegated subtree."""
    own = tmp_path / "cgroup2" / "worker.scope"
    own.mkdir(parents=True)
    (own / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (own / "cgroup.subtree_control").write_text("")
    mounts = [(str(tmp_path / "cgroup2"), "cgroup2", {"rw"})]
    assert limits._probe_v2(mounts, {"": "/worker.scope"}) == own
    assert (own / "cgroup.subtree_control").read_text() == "+memory +cpu +pids"
    monkeypatch.setattr(limits, "host", lambda: limits.Host("cgroup2", {"": own}))
    trial = limits.TrialLimits(owner="o", name="run-1+t", cpus=1.5, memory_mb=256, pids_limit=99)
    trial.create()
    folder = own / "skillsbench-o" / "run-1+t"
    assert (folder / "memory.max").read_text() == str(256 << 20)
    assert (folder / "cpu.max").read_text() == "150000 100000"
    assert (folder / "pids.max").read_text() == "99"
    assert trial.wrapper()[-2:] == [str(folder / "cgroup.procs"), "--"]
    (folder / "memory.events").write_text("low 0\nhigh 0\nmax 7\noom 2\noom_kill 2\n")
    (folder / "pids.events").write_text("max 5\n")
    assert trial.events() == {"oom_kills": 2, "pids_max_hits": 5}
    assert limits.Host("cgroup2", {"": own}).mechanisms()["pids"] == "cgroup v2 pids.max"


async def test_the_workers_own_memory_limit_caps_what_a_trial_can_get(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = tmp_path / "memory" / "worker"
    own.mkdir(parents=True)
    (own / "memory.limit_in_bytes").write_text(str(3 << 30))
    monkeypatch.setattr(
        limits, "_mounts", lambda: [(str(tmp_path / "memory"), "cgroup", {"memory"})]
    )
    monkeypatch.setattr(limits, "_own_paths", lambda: {"memory": "/worker"})
    assert limits.own_memory_limit_mb() == 3072
    assert (await LOCAL.host_capacity()).memory_mb == 3072
    (own / "memory.limit_in_bytes").write_text("9223372036854771712")  # v1's "no limit"
    assert limits.own_memory_limit_mb() is None


def test_a_listed_pid_now_someone_elses_is_never_killed(tmp_path: Path) -> None:
    """Removing a trial's cgroup signals thousands of listed pids one by one; on a busy host a
    pid that left the group and was reaped meanwhile is soon another process's. Only members
    are signalled: the outsider below stands for such a process, listed as if it were one."""
    _cgroups()
    owner = f"stale-test-{tmp_path.name}"
    trial = limits.TrialLimits(
        owner=owner,
        name=limits.group_name("run-1", "t", tmp_path),
        cpus=1,
        memory_mb=128,
        pids_limit=32,
    )
    trial.create()
    member = subprocess.Popen([*trial.wrapper(), "sleep", "60"])
    outsider = subprocess.Popen(["sleep", "60"])
    try:
        deadline = time.monotonic() + 30
        while not all(
            str(member.pid) in (folder / "cgroup.procs").read_text().split()
            for folder in trial.dirs.values()
        ):
            assert time.monotonic() < deadline, "the member never joined its cgroups"
            time.sleep(0.01)
        for folder in trial.dirs.values():
            limits._kill_members(folder, [str(outsider.pid), str(member.pid), "x"])
        assert member.wait(timeout=10) == -9
        assert outsider.poll() is None, "a process outside the trial's cgroup was killed"
    finally:
        outsider.kill()
        outsider.wait()
        trial.remove()
        for base in limits.host().bases.values():
            (base / f"skillsbench-{owner}").rmdir()
