"""What only the ``local`` (bubblewrap) backend promises: host protection and Dockerfile support."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.worker.sandbox.support import DOCKERFILE, MakeTask, make_spec
from worker.sandbox import SandboxError, SandboxUnsupported, sandbox_class
from worker.sandbox._bubblewrap import BubblewrapSandbox


def local(task: object, state: Path, **kwargs: object) -> BubblewrapSandbox:
    sb = sandbox_class("local")(make_spec(task, state, "local", **kwargs))  # type: ignore[arg-type]
    assert isinstance(sb, BubblewrapSandbox)
    return sb


async def test_host_root_is_read_only_and_private_parts_hidden(
    make_task: MakeTask, tmp_path: Path
) -> None:
    task = make_task()
    async with local(task, tmp_path / "s") as sb:
        result = await sb.exec(
            "touch /usr/planted 2>/dev/null || echo usr-ro;"
            "touch /etc/planted 2>/dev/null || echo etc-ro;"
            f"test -e {task.path}/tests/test.sh || echo task-hidden;"
            f"test -e {tmp_path}/s || echo state-hidden;"
            "ls /root"
        )
    assert result.stdout == "usr-ro\netc-ro\ntask-hidden\nstate-hidden\n"
    assert not Path("/usr/planted").exists()


# Every top-level name a sandbox may show: the host's system folders (read-only), its /etc without
# secrets, and what the sandbox makes for itself (docs/sandboxes.md, "What the agent sees").
ALLOWED_TOPS = {
    *("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc"),
    *("proc", "dev", "run", "tmp", "root", "logs", "app", "skills"),
    *("opt", "srv", "var"),  # fresh and empty per trial: never the host's
}
# What the fresh top-level folders hold when an agent starts.
FRESH = {"/opt", "/srv", "/var", *(f"/var/{n}" for n in ("cache", "lib", "log", "spool", "tmp"))}
# Walks every path it can read and prints it: a hostile agent's view of the sandbox.
WALK = r"""
for top in /*; do echo "TOP $top"; done
find / \( -path /proc -o -path /sys -o -path /dev \) -prune -o -print 2>/dev/null
"""


async def test_an_agent_sees_only_the_allowlist(make_task: MakeTask, tmp_path: Path) -> None:
    """A copy of the tasks under a host folder (/srv, /var/tmp, the checkout) stays unseen, and so
    do /etc's secrets, other runs' state and every host folder not on the list."""
    from worker.sandbox._bubblewrap.host import ETC_SECRETS, worker_site_dirs

    task = make_task()
    planted = Path("/var/tmp") / f"skillsbench-allowlist-{tmp_path.name}"
    (planted / "tasks").mkdir(parents=True, exist_ok=True)
    (planted / "tasks" / "solve.sh").write_text("echo the answer\n")
    try:
        async with local(task, tmp_path / "s") as sb:
            result = await sb.exec(["/bin/sh", "-c", WALK], timeout_sec=120)
    finally:
        import shutil

        shutil.rmtree(planted, ignore_errors=True)
    tops = {line[5:] for line in result.stdout.splitlines() if line.startswith("TOP /")}
    lent = {Path(site).parts[1] for site in worker_site_dirs()}
    assert tops - ALLOWED_TOPS - lent == set(), tops
    paths = [line for line in result.stdout.splitlines() if line.startswith("/")]
    assert len(paths) > 100, (result.exit_code, result.timed_out, result.stderr[-2000:])
    sites = worker_site_dirs()
    for path in paths:
        assert "skillsbench-allowlist" not in path and str(tmp_path) not in path, path
        assert not path.startswith(str(task.path)), path
        lent_here = any(site.startswith(path) or path.startswith(site) for site in sites)
        if not lent_here and path not in FRESH:  # lent: the site-packages and the empty
            # folders leading to it only; the fresh folders: empty
            assert not path.startswith(("/srv", "/var", "/opt", "/home", "/work", "/mnt")), path
    shown_etc = {p.removeprefix("/etc/") for p in paths if p.startswith("/etc/")}
    assert "passwd" in shown_etc and "shadow" not in shown_etc and "gshadow" not in shown_etc
    import fnmatch

    for rel in shown_etc:
        assert not any(fnmatch.fnmatchcase(rel, pattern) for pattern in ETC_SECRETS), rel


async def test_run_lines_that_work_locally_are_applied(make_task: MakeTask, tmp_path: Path) -> None:
    dockerfile = DOCKERFILE + "RUN mkdir -p /app/out && echo built > /app/out/b.txt\n"
    async with local(make_task(dockerfile), tmp_path / "s") as sb:
        assert (await sb.exec("cat out/b.txt")).stdout == "built\n"


async def test_run_lines_that_need_docker_fail_clearly(make_task: MakeTask, tmp_path: Path) -> None:
    dockerfile = DOCKERFILE + "RUN echo x > /usr/lib/installed\n"
    sb = local(make_task(dockerfile), tmp_path / "s")
    with pytest.raises(
        SandboxUnsupported, match=r"needs the docker environment: Dockerfile line 6"
    ):
        await sb.start()
    await sb.stop()


async def test_a_run_line_killed_from_outside_is_a_start_failure_not_needs_docker(
    make_task: MakeTask, tmp_path: Path
) -> None:
    """A SIGKILL that was not the step's timeout (the host's, a memory cgroup's) says nothing of
    whether the task runs here: a plain SandboxError, which the trial tries again."""
    dockerfile = DOCKERFILE + "RUN echo started && kill -9 $$\n"
    sb = local(make_task(dockerfile), tmp_path / "s")
    with pytest.raises(SandboxError, match=r"Dockerfile line 6: the local sandbox saw") as caught:
        await sb.start()
    await sb.stop()
    assert not isinstance(caught.value, SandboxUnsupported), caught.value


def test_only_the_sandboxs_own_failures_of_a_run_line_are_retried() -> None:
    from worker.sandbox._bubblewrap.recipe import _not_the_steps_failure
    from worker.sandbox.base import ExecResult

    setup = "bwrap: Creating new namespace failed: Resource temporarily unavailable\n"
    assert "could not run the step: bwrap: Creating new" in str(
        _not_the_steps_failure(ExecResult(1, "", setup))
    )
    assert _not_the_steps_failure(ExecResult(137, "", "")) is not None
    # the step's own failures, and its timeout, stay the step's
    assert _not_the_steps_failure(ExecResult(1, "", "pip: no such package\n")) is None
    assert _not_the_steps_failure(ExecResult(139, "", "Segmentation fault\n")) is None
    assert _not_the_steps_failure(ExecResult(137, "", "", timed_out=True)) is None


async def test_copy_outside_the_workdir_is_read_only_layer(
    make_task: MakeTask, tmp_path: Path
) -> None:
    dockerfile = (
        DOCKERFILE + "COPY data/input.txt /etc/task/input.txt\nCOPY data /opt/newtop/data\n"
    )
    async with local(make_task(dockerfile), tmp_path / "s") as sb:
        result = await sb.exec(
            "cat /etc/task/input.txt /opt/newtop/data/input.txt; test -e /etc/passwd && echo host-etc"
        )
    assert result.stdout == "input data\ninput data\nhost-etc\n"


async def test_multi_stage_builds_need_docker(make_task: MakeTask, tmp_path: Path) -> None:
    # Refused when the trial makes the sandbox's config, before any sandbox exists.
    with pytest.raises(ValueError, match="needs the docker environment: a multi-stage"):
        local(make_task("FROM a AS b\nFROM c\n"), tmp_path / "s")


async def test_uploads_outside_writable_places_are_refused(
    make_task: MakeTask, tmp_path: Path
) -> None:
    src = tmp_path / "f.txt"
    src.write_text("x")
    async with local(make_task(), tmp_path / "s") as sb:
        with pytest.raises(SandboxError, match="outside the local sandbox's writable places"):
            await sb.upload(src, "/usr/bin/evil")
        with pytest.raises(SandboxError, match="must be absolute"):
            await sb.upload(src, "relative/path")


async def test_non_root_users_are_refused(make_task: MakeTask, tmp_path: Path) -> None:
    async with local(make_task(), tmp_path / "s") as sb:
        with pytest.raises(SandboxUnsupported, match="runs everything as root"):
            await sb.exec("id", user="nobody")
        assert (await sb.exec("id -u", user="root")).stdout == "0\n"


async def test_upload_through_a_planted_symlink_is_refused(
    make_task: MakeTask, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    src = tmp_path / "f.txt"
    src.write_text("x")
    async with local(make_task(), tmp_path / "s") as sb:
        await sb.exec(f"rm -rf /logs/verifier && ln -s {outside} /logs/verifier")
        with pytest.raises(SandboxError, match="symbolic link"):
            await sb.upload(src, "/logs/verifier/reward.txt")
    assert list(outside.iterdir()) == []


async def test_state_is_removed_at_stop(make_task: MakeTask, tmp_path: Path) -> None:
    sb = local(make_task(), tmp_path / "s")
    await sb.start()
    await sb.exec("echo x > /app/f")
    assert (tmp_path / "s" / "sandbox").exists()
    await sb.stop()
    assert not (tmp_path / "s" / "sandbox").exists()


async def test_host_without_user_namespaces_gets_one_clear_error(
    make_task: MakeTask, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A bwrap that fails the way it does where user namespaces are disabled.
    fake = tmp_path / "bwrap"
    fake.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("SKILLSBENCH_BWRAP", str(fake))
    sb = local(make_task(), tmp_path / "s")
    with pytest.raises(SandboxUnsupported) as caught:
        await sb.start()
    message = str(caught.value)
    assert "cannot run on this host" in message
    assert "No permissions to create a new namespace" in message
    assert "--environment docker" in message
    await sb.stop()


async def test_layout_the_host_cannot_give_needs_docker(
    make_task: MakeTask, tmp_path: Path
) -> None:
    # overlayfs refuses a host folder that has mounts inside it; skip where there is none.
    mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    nested = sorted(
        {line.split()[4].split("/")[1] for line in mounts if line.split()[4].count("/") >= 2}
    )
    from worker.sandbox._bubblewrap.host import SYSTEM_TOP_LEVEL

    # Only the host's system folders are laid over (the rest of the host is never shown, and a
    # Dockerfile's files elsewhere get folders of their own).
    candidates = [top for top in nested if top in SYSTEM_TOP_LEVEL]
    if not candidates:
        pytest.skip("no host system folder (/usr, /lib, ...) with a mount inside it")
    dockerfile = DOCKERFILE + f"COPY data/input.txt /{candidates[0]}/skillsbench-probe/input.txt\n"
    sb = local(make_task(dockerfile), tmp_path / "s")
    with pytest.raises(SandboxUnsupported, match="needs the docker environment"):
        await sb.start()
    await sb.stop()


# -- writable places, storage cap, tampering (docs/sandboxes.md, "Writable places") ------------

root_only = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="the copy-on-write /usr/local and the storage cap need a worker that may mount (root)",
)


async def test_opt_srv_var_are_fresh_and_writable_per_trial(
    make_task: MakeTask, tmp_path: Path
) -> None:
    """What BenchFlow's install_cmd writes (/opt/minimal-agent, /opt/runtime) works, persists
    across commands, and is neither seen by another trial nor written to the host's folder."""
    task = make_task()
    name = f"skillsbench-fresh-{tmp_path.name}"
    async with local(task, tmp_path / "a") as a, local(task, tmp_path / "b") as b:
        made = await a.exec(
            f"mkdir -p /opt/{name} /opt/runtime && echo 'print(1)' > /opt/{name}/agent.py && "
            "echo s > /srv/s && echo v > /var/tmp/v && echo l > /var/lib/l"
        )
        assert made.exit_code == 0, made
        again = await a.exec(f"cat /opt/{name}/agent.py /srv/s /var/tmp/v /var/lib/l")
        assert again.stdout == "print(1)\ns\nv\nl\n", again
        other = await b.exec("find /opt /srv /var | sort")
        assert other.stdout.split() == sorted(FRESH), other
    assert not Path(f"/opt/{name}").exists()


@root_only
async def test_usr_local_is_copy_on_write_per_trial_and_one_view_for_all_commands(
    make_task: MakeTask, tmp_path: Path
) -> None:
    task = make_task()
    name = f"skillsbench-cow-{tmp_path.name}"
    host_bin = sorted(os.listdir("/usr/local/bin"))
    async with local(task, tmp_path / "a") as a, local(task, tmp_path / "b") as b:
        made = await a.exec(f"echo '#!/bin/sh' > /usr/local/bin/{name} && ls /usr/local/bin")
        assert made.exit_code == 0, made
        assert made.stdout.split() == sorted([*host_bin, name]), made  # the host's, and ours
        assert (await b.exec(f"test -e /usr/local/bin/{name} || echo unseen")).stdout == "unseen\n"
        # A command that is running sees what another command writes (one overlay per trial:
        # two overlays of one upper folder would show it stale, or fail with ESTALE).
        flag = f"/usr/local/lib/{name}.flag"
        waiter = await a.open_process(
            [
                "/bin/sh",
                "-c",
                f"test -e {flag} || echo missing; until [ -e {flag} ]; do sleep 0.02; done; "
                f"cat {flag}",
            ]
        )
        assert waiter.stdout is not None
        assert await waiter.stdout.readline() == b"missing\n"  # it looked before the write
        assert (await a.exec(f"echo seen > {flag}")).exit_code == 0
        assert await asyncio.wait_for(waiter.wait(), 60) == 0
        assert await waiter.stdout.read() == b"seen\n"
    assert not Path(f"/usr/local/bin/{name}").exists()


@root_only
async def test_the_storage_cap_gives_enospc_and_never_grows_the_host_disk(
    make_task: MakeTask, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cap = 32 << 20
    monkeypatch.setenv("SKILLSBENCH_CAP_SANDBOX_BYTES", str(cap))
    async with local(make_task(), tmp_path / "s") as sb:
        tree = tmp_path / "s" / "sandbox"
        assert os.stat(tree).st_dev != os.stat(tmp_path).st_dev  # a file system of its own
        space = os.statvfs(tree)
        assert space.f_blocks * space.f_frsize == cap
        assert space.f_files == 16384  # inodes are capped too (kernel memory, not in size)
        full = await sb.exec(
            "dd if=/dev/zero of=/opt/fill bs=1M count=64 2>&1; echo rc=$?; "
            "truncate -s 1G /logs/agent/sparse && echo sparse-ok"
        )
        assert "No space left on device" in full.stdout and "rc=1" in full.stdout, full
        assert "sparse-ok" in full.stdout, full
        written = await sb.exec("du -k /opt/fill /logs/agent/sparse | cut -f1")
        assert sum(map(int, written.stdout.split())) * 1024 <= cap, written
        assert (await sb.exec("echo more > /app/result.txt")).exit_code != 0  # still full
        # The verifier runs all the same (the agent gone, the tree gets its reserve), and what
        # the agent left is still collected (sparse: never expanded on the host).
        tests = tmp_path / "tests"
        tests.mkdir()
        (tests / "reward.txt").write_text("1\n")
        verified = await sb.kill_upload_exec(
            "cp /tests/reward.txt /logs/verifier/ && echo done > /app/result.txt",
            upload=tests,
            target="/tests",
        )
        assert verified.exit_code == 0, verified
        await sb.download("/logs", tmp_path / "out")
        await sb.download("/app/result.txt", tmp_path / "result.txt")
    assert (tmp_path / "result.txt").read_text() == "done\n"
    assert (tmp_path / "out" / "verifier" / "reward.txt").read_text() == "1\n"
    kept = sum(p.stat().st_blocks * 512 for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert kept <= cap, kept
    assert not tree.exists()  # unmounted and removed


@root_only
async def test_local_tamper_evidence_is_what_changed_since_the_sandbox_was_ready(
    make_task: MakeTask, tmp_path: Path
) -> None:
    """The Dockerfile's own installs and new names are no evidence; changing or removing what
    existed (the host's /usr/local, the task's installs), hooks and shadows are."""
    dockerfile = DOCKERFILE + (
        "RUN printf '#!/bin/sh\\n' > /usr/local/bin/task-tool && chmod 755 /usr/local/bin/task-tool\n"
        "RUN mkdir -p /opt/env/bin && touch /opt/env/pyvenv.cfg && printf x > /opt/env/bin/tool\n"
    )
    host_dirs = [
        d for d in sorted(Path("/usr/local/share").iterdir()) if d.is_dir() and any(d.iterdir())
    ]
    async with local(make_task(dockerfile), tmp_path / "s") as sb:
        assert await sb.tamper_evidence() == []
        legit = await sb.exec(
            "mkdir -p /usr/local/lib/newtool && echo x > /usr/local/lib/newtool/data && "
            "touch /usr/local/lib/tmpfile && rm /usr/local/lib/tmpfile && "
            "printf x > /usr/local/bin/brand-new-tool && mkdir -p /opt/minimal-agent && "
            "echo 1 > /opt/minimal-agent/agent.py && mkdir -p /root/.local/bin && "
            "printf x > /root/.local/bin/my-own-tool"
        )
        assert legit.exit_code == 0, legit
        assert await sb.tamper_evidence() == []
        await sb.exec("printf x >> /usr/local/bin/brand-new-tool")  # the agent's own: still new
        assert await sb.tamper_evidence() == []
        await sb.trust_current_changes()  # as after an install_cmd: what is there now is trusted
        changed = await sb.exec(
            "rm /usr/local/bin/task-tool && printf x >> /opt/minimal-agent/agent.py && "
            "printf y >> /opt/env/bin/tool && "
            "mkdir -p /opt/hooks && echo 'import os' > /opt/hooks/zz.pth && "
            "mkdir /tmp/evil && cp /bin/true /tmp/evil/bash && rm -rf /root/.local/bin && "
            "ln -s /tmp/evil /root/.local/bin"
            + (f" && rm -rf {host_dirs[0]} && mkdir {host_dirs[0]}" if host_dirs else "")
        )
        assert changed.exit_code == 0, changed
        evidence = {(e["path"], e["change"]) for e in await sb.tamper_evidence() or []}
    expected = {
        ("/usr/local/bin/task-tool", "deleted"),
        # Under /opt a program's own files are the agent's (/opt/minimal-agent, a .pth no site
        # folder reads): only a toolchain there (a virtual environment's programs) is evidence.
        ("/opt/env/bin/tool", "modified"),
        ("/root/.local/bin", "modified"),  # a link now: /tmp/evil/bash would shadow bash
    }
    if host_dirs:  # a host folder removed and made anew: what it held is gone
        expected |= {(str(host_dirs[0] / n), "deleted") for n in os.listdir(host_dirs[0])}
    assert evidence == expected, evidence


@root_only
async def test_reap_detaches_what_a_crashed_worker_left_mounted(tmp_path: Path) -> None:
    from worker.sandbox._bubblewrap.writable import mount_capped_root, unmount

    mine, other = tmp_path / "mine" / "sandbox", tmp_path / "other" / "sandbox"
    assert mount_capped_root(mine, 1 << 20, "crashed-owner")
    assert mount_capped_root(other, 1 << 20, "another-owner")
    try:
        assert await BubblewrapSandbox.reap("crashed-owner", []) == 1
        assert os.stat(mine).st_dev == os.stat(tmp_path).st_dev  # detached
        assert os.stat(other).st_dev != os.stat(tmp_path).st_dev  # another worker's: kept
    finally:
        unmount(mine)
        unmount(other)


async def test_the_storage_watchdog_kills_a_sandbox_past_its_cap_and_ignores_sparse_files(
    make_task: MakeTask, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that may not mount the capped tmpfs (forced here): the watchdog measures the
    tree's allocated blocks and kills everything past the cap; a sparse 1 GiB file takes no
    disk and does not trip it."""
    from worker.sandbox._bubblewrap.writable import disk_use
    from worker.sandbox.base import SandboxLimitExceeded

    cap = 16 << 20
    monkeypatch.setenv("SKILLSBENCH_CAP_SANDBOX_BYTES", str(cap))
    monkeypatch.setenv("SKILLSBENCH_SANDBOX_STORAGE", "watchdog")
    async with local(make_task(), tmp_path / "s") as sb:
        tree = tmp_path / "s" / "sandbox"
        assert os.stat(tree).st_dev == os.stat(tmp_path).st_dev  # no tmpfs of its own
        sparse = await sb.exec("truncate -s 1G /logs/agent/sparse && echo sparse-ok")
        assert sparse.stdout == "sparse-ok\n", sparse
        walks = sb._storage_walks
        while sb._storage_walks < walks + 2:  # measured at least once after the file was made
            await asyncio.sleep(0.05)
        assert (await sb.limit_events() or {}).get("storage_hits") == 0
        assert (await sb.exec("echo still-running")).stdout == "still-running\n"
        # Three times the cap, a MiB at a time: stopped on the way.
        writer = await sb.exec(
            "i=0; while [ $i -lt 48 ]; do i=$((i+1)); "
            "head -c 1048576 /dev/zero > /opt/f$i || exit 3; sleep 0.1; done; echo finished",
            timeout_sec=300,
        )
        assert "finished" not in writer.stdout and writer.exit_code != 0, writer
        events = await sb.limit_events()
        assert events is not None and events["storage_hits"] == 1, events
        assert cap < events["storage_used_bytes"] < 3 * cap, events
        assert disk_use(tree) < 3 * cap  # the host's disk grew by less than the agent wanted
        with pytest.raises(SandboxError, match="storage cap"):
            await sb.exec("true")  # nothing starts any more
        tests = tmp_path / "tests"
        tests.mkdir()
        with pytest.raises(SandboxLimitExceeded) as exceeded:  # the verifier does not run
            await sb.kill_upload_exec("true", upload=tests, target="/tests")
        assert exceeded.value.kind == "storage_limit"
        assert "storage cap" in str(exceeded.value)
        # What is collected stays within the download caps (the sparse file is not expanded).
        await sb.download("/logs", tmp_path / "out")
    kept = sum(p.stat().st_blocks * 512 for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert kept <= cap, kept
    assert not tree.exists()


def test_the_storage_mode_setting_is_checked() -> None:
    from worker.core.limits import OutputCaps, storage_mode

    assert storage_mode({"SKILLSBENCH_SANDBOX_STORAGE": "watchdog"}) == "watchdog"
    assert storage_mode({"SKILLSBENCH_SANDBOX_STORAGE": "TMPFS"}) == "tmpfs"
    assert storage_mode({}) == ("tmpfs" if os.geteuid() == 0 else "watchdog")
    with pytest.raises(ValueError, match="SKILLSBENCH_SANDBOX_STORAGE='disk'"):
        storage_mode({"SKILLSBENCH_SANDBOX_STORAGE": "disk"})
    # Named where the worker reads its caps (its start), not in the first trial.
    with pytest.raises(ValueError, match="SKILLSBENCH_SANDBOX_STORAGE='disk'"):
        OutputCaps.from_env({"SKILLSBENCH_SANDBOX_STORAGE": "disk"})


async def test_a_finished_command_is_never_killed_by_a_pid_someone_else_now_has(
    make_task: MakeTask, tmp_path: Path
) -> None:
    """Once bwrap reaped a command its pid is free; on a host forking thousands of processes
    (a fork-bomb trial beside this one) the next process may get it. The sandbox signals
    through pidfds, so killing a finished command never reaches that process."""
    import subprocess

    async with local(make_task(), tmp_path / "s") as sb:
        spawned = await sb._spawn(["true"], None, None, None, asyncio.subprocess.DEVNULL)
        assert await spawned.wait() == 0
        victim = subprocess.Popen(["sleep", "30"])
        try:
            spawned.child_pid = victim.pid  # as if the kernel had given the pid to it
            spawned.kill()
            await asyncio.sleep(0.2)
            assert victim.poll() is None, "a finished command's kill reached another process"
        finally:
            victim.kill()
            victim.wait()
