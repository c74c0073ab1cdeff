"""New top-level folders in the local sandbox: made by one command, there for every later one and
for the verifier, the agent's work product; the reserved names (mount points, system folders)
stay the sandbox's (docs/sandboxes.md, "Writable places")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.worker.sandbox.support import MakeTask, make_spec
from worker.sandbox import SandboxError, sandbox_class
from worker.sandbox._bubblewrap import BubblewrapSandbox
from worker.sandbox._bubblewrap.host import worker_site_dirs
from worker.sandbox.tamper import Change


def local(task: object, state: Path) -> BubblewrapSandbox:
    sb = sandbox_class("local")(make_spec(task, state, "local"))  # type: ignore[arg-type]
    assert isinstance(sb, BubblewrapSandbox)
    return sb


def reward_tests(tmp_path: Path, check: str) -> Path:
    """A tests folder whose test.sh writes 1 when ``check`` (a shell condition) holds, else 0."""
    tests = tmp_path / "tests"
    tests.mkdir(exist_ok=True)
    (tests / "test.sh").write_text(
        f"if {check}; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
    )
    return tests


async def test_a_new_top_level_folder_persists_for_later_commands_and_the_verifier(
    make_task: MakeTask, tmp_path: Path
) -> None:
    async with local(make_task(), tmp_path / "s") as sb:
        made = await sb.exec(
            "mkdir -p /output && echo '{\"a\": 1}' > /output/x.json && echo top > /top.txt"
        )
        assert made.exit_code == 0, made
        again = await sb.exec("cat /output/x.json /top.txt")
        assert again.stdout == '{"a": 1}\ntop\n', again
        # A file put there from the host (an upload) and read back (a download) too.
        await sb.download("/output/x.json", tmp_path / "x.json")
        assert (tmp_path / "x.json").read_text() == '{"a": 1}\n'
        tests = reward_tests(tmp_path, "grep -q '\"a\": 1' /output/x.json")
        verified = await sb.kill_upload_exec("sh /tests/test.sh", upload=tests, target="/tests")
        assert verified.exit_code == 0, verified
        await sb.download("/logs/verifier/reward.txt", tmp_path / "reward.txt")
        assert (tmp_path / "reward.txt").read_text() == "1\n"
        # The agent's work product: listed, exported from the host folder, applied on a fresh
        # sandbox (the regrade), where its verifier sees it.
        work = await sb.work_changes()
        assert work is not None
        assert {Change("/output", "added"), Change("/output/x.json", "added")} <= set(work)
        assert Change("/top.txt", "added") in work
        assert not [c for c in work if c.path.startswith(("/usr", "/proc", "/dev", "/run"))]
        archive = tmp_path / "work.tar"
        report = await sb.export_changes(["/output", "/output/x.json"], archive, max_bytes=1 << 20)
        assert not report.skipped, report
    assert not Path("/output/x.json").exists()  # never the host's root
    async with local(make_task(), tmp_path / "fresh") as fresh:
        assert (await fresh.exec("test -e /output || echo none")).stdout == "none\n"
        applied = await fresh.apply_changes(archive, [])
        assert applied.exit_code == 0, applied
        assert (await fresh.exec("cat /output/x.json")).stdout == '{"a": 1}\n'


async def test_new_top_level_folders_are_per_trial(make_task: MakeTask, tmp_path: Path) -> None:
    name = f"skillsbench-top-{tmp_path.name}"
    task = make_task()
    async with local(task, tmp_path / "a") as a, local(task, tmp_path / "b") as b:
        assert (await a.exec(f"mkdir /{name} && echo a > /{name}/f")).exit_code == 0
        assert (await b.exec(f"test -e /{name} || echo unseen")).stdout == "unseen\n"
    assert not Path(f"/{name}").exists()  # never the host's root


async def test_the_dockerfile_may_make_a_new_top_level_folder(
    make_task: MakeTask, tmp_path: Path
) -> None:
    from tests.worker.sandbox.support import DOCKERFILE

    dockerfile = DOCKERFILE + "COPY data /input/data\nRUN mkdir /output && touch /output/.keep\n"
    async with local(make_task(dockerfile), tmp_path / "s") as sb:
        seen = await sb.exec("cat /input/data/input.txt && ls -A /output && echo x > /input/new")
        assert seen.stdout == "input data\n.keep\n", seen
        # The image's own files are no change of the agent's; what it added is.
        assert await sb.tamper_evidence() == []
        assert await sb.work_changes() == [
            Change("/input", "modified"),  # a folder is changed by what is added to it
            Change("/input/new", "added"),
        ]


@pytest.mark.skipif(os.geteuid() != 0, reason="a host write through a planted link needs root")
async def test_reserved_top_level_names_stay_the_sandboxs(
    make_task: MakeTask, tmp_path: Path
) -> None:
    """A hostile agent's attempts on the root: a new folder beside the system folders, links at
    the names the sandbox mounts later (that bwrap would follow to the host), its own /bin,
    writes into the read-only folders. None reaches the host or the verifier."""
    bait = tmp_path / "host-bait"
    bait.mkdir()
    rel_bait = os.path.relpath(bait, "/")
    async with local(make_task(), tmp_path / "s") as sb:
        hostile = await sb.exec(
            "mkdir -p /usr2/bin && cp /bin/true /usr2/bin/python3; "
            f"ln -s ../oldroot/{rel_bait}/tests /tests; "
            f"ln -s ../oldroot/{rel_bait} /solution; "
            f"ln -s ../oldroot/{rel_bait}/created /instruction.md; "
            "ln -s /tmp /tmp2; ln -s /usr2/bin /lib32; mkdir -p /sys/fs; "
            "touch /usr/planted 2>/dev/null || echo usr-ro; "
            "touch /etc/planted 2>/dev/null || echo etc-ro; "
            "rm -rf /tmp 2>/dev/null || echo tmp-busy; "
            "rm /bin && mkdir /bin && printf '#!/bin/true\\n' > /bin/sh; "
            "/usr/bin/test -L /bin || echo bin-replaced"
        )
        assert "usr-ro\netc-ro\ntmp-busy\n" in hostile.stdout, hostile
        assert "bin-replaced" in hostile.stdout, hostile  # in its own command, for now
        # The next command has the sandbox's own /bin, /tests and /lib32 again (absent or as
        # mounted); the agent's new names stay.
        after = await sb.exec(
            "echo sh-works; for p in /tests /solution /lib32 /sys/fs; do "
            "test -e $p -o -L $p && echo still $p; done; ls -d /usr2 /tmp2"
        )
        assert after.stdout.startswith("sh-works\n"), after
        assert "still" not in after.stdout, after
        assert after.stdout.endswith("/tmp2\n/usr2\n"), after
        solution = tmp_path / "solution"
        solution.mkdir()
        (solution / "solve.sh").write_text("echo solved\n")
        await sb.upload(solution, "/solution")
        await sb.upload(solution / "solve.sh", "/instruction.md")
        tests = reward_tests(tmp_path, "command -v python3 | grep -q ^/usr/")
        verified = await sb.kill_upload_exec("sh /tests/test.sh", upload=tests, target="/tests")
        assert verified.exit_code == 0, verified
        await sb.download("/logs/verifier/reward.txt", tmp_path / "reward.txt")
        assert (tmp_path / "reward.txt").read_text() == "1\n"  # the verifier's own python3
        shown = await sb.exec("cat /solution/solve.sh /instruction.md")
        assert shown.stdout == "echo solved\necho solved\n", shown
        work = {c.path for c in await sb.work_changes() or []}
        assert not work & {"/tests", "/solution", "/lib32", "/bin", "/bin/sh", "/sys"}, work
        with pytest.raises(SandboxError, match="outside the local sandbox's writable places"):
            await sb.upload(solution / "solve.sh", "/lib32/evil")
    assert list(bait.iterdir()) == []  # bwrap never followed a planted link to the host
    assert not Path("/usr/planted").exists() and not Path("/usr2").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="a host write through a planted link needs root")
async def test_a_link_planted_above_a_nested_mount_point_is_never_followed(
    make_task: MakeTask, tmp_path: Path
) -> None:
    """A workdir inside HOME is mounted anew for every command: a link the agent puts in place
    of a folder above it would make bwrap create the mount point on the host."""
    from tests.worker.sandbox.support import DOCKERFILE

    task = make_task(DOCKERFILE.replace("WORKDIR /app", "WORKDIR /root/a/b"))
    bait = tmp_path / "host-bait"
    bait.mkdir()
    rel_bait = os.path.relpath(bait, "/")
    async with local(task, tmp_path / "s") as sb:
        assert (await sb.exec("pwd; ls")).stdout == "/root/a/b\ndata\n"
        planted = await sb.exec(
            f"cd / && mv /root/a /root/old && ln -s ../../oldroot/{rel_bait} /root/a"
        )
        assert planted.exit_code == 0, planted
        after = await sb.exec("pwd; ls; test -L /root/a && echo link")
        assert after.stdout == "/root/a/b\ndata\n", after
    assert list(bait.iterdir()) == []


async def test_a_top_level_folder_holding_a_deeper_mount_point_stays_the_agents(
    make_task: MakeTask, tmp_path: Path
) -> None:
    """A workdir /home/u/app is mounted below /home: /home is still the agent's (kept), only
    /home/u, which holds the mount point, is fresh per command (as the worker's own site folder
    makes its first folder below the top fresh)."""
    from tests.worker.sandbox.support import DOCKERFILE

    task = make_task(DOCKERFILE.replace("WORKDIR /app", "WORKDIR /home/u/app"))
    async with local(task, tmp_path / "s") as sb:
        made = await sb.exec(
            "echo kept > /home/notes.txt && echo fresh > /home/u/gone.txt && echo w > result.txt"
        )
        assert made.exit_code == 0, made
        seen = await sb.exec("cat /home/notes.txt /home/u/app/result.txt; ls /home/u")
        assert seen.stdout == "kept\nw\napp\n", seen
        site_tops = {Path(site).parts[1] for site in worker_site_dirs()}
        for name in site_tops - {"root", "tmp", "opt", "srv", "var", "home"}:
            kept = await sb.exec(f"echo k > /{name}/mine && cat /{name}/mine")
            assert kept.stdout == "k\n", kept
            assert (await sb.exec(f"cat /{name}/mine")).stdout == "k\n"
        await sb.tamper_evidence()
        work = {c.path for c in await sb.work_changes() or []}
        assert {"/home/notes.txt", "/home/u/app/result.txt"} <= work, work
        assert "/home/u/gone.txt" not in work, work
        with pytest.raises(SandboxError, match="outside the local sandbox's writable places"):
            await sb.upload(tmp_path / "s", "/home/u/x")
