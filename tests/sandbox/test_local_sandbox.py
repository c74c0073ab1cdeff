"""What only the ``local`` (bubblewrap) backend promises: host protection and Dockerfile support."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest_sandbox import DOCKERFILE, MakeTask, make_spec

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
    assert len(paths) > 100  # the walk ran
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
    sb = local(make_task("FROM a AS b\nFROM c\n"), tmp_path / "s")
    with pytest.raises(SandboxUnsupported, match="needs the docker environment"):
        await sb.start()


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
