"""The contract every sandbox backend keeps (run against ``local`` and ``docker``)."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.worker.sandbox.support import MakeTask, processes_with
from worker.sandbox import Sandbox, SandboxError


def loop_cmd(marker: str) -> str:
    # `sh -c CMD NAME` puts NAME in the shell's command line, which we look for on the host.
    return f"sh -c 'while :; do sleep 1; done' {marker}"


async def wait_gone(marker: str, timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := processes_with(marker)) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    return left


async def test_exec_runs_shell_strings_and_argv(sandbox: Sandbox) -> None:
    result = await sandbox.exec("echo out; echo err >&2; exit 3")
    assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
    argv = await sandbox.exec(["printf", "%s|", "a b", "$HOME"])
    assert argv.stdout == "a b|$HOME|"
    assert not argv.timed_out and not argv.truncated


async def test_exec_feeds_stdin(sandbox: Sandbox) -> None:
    result = await sandbox.exec("cat | tr a-z A-Z", stdin=b"piped text\n")
    assert result.stdout == "PIPED TEXT\n"


async def test_environment_is_explicit_and_layered(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLSBENCH_HOST_SECRET", "leak")
    result = await sandbox.exec(
        'echo "$TASK_GREETING $TASK_LEVEL $CALL_VAR ${SKILLSBENCH_HOST_SECRET:-unset} $HOME"',
        env={"CALL_VAR": "call", "TASK_LEVEL": "9"},
    )
    assert result.stdout == "hello 9 call unset /root\n"
    path = await sandbox.exec("echo $PATH")
    assert "/usr/bin" in path.stdout and ".venv" not in path.stdout


async def test_spec_env_overrides_image_env(
    open_sandbox: Callable[..., Sandbox], make_task: MakeTask
) -> None:
    async with open_sandbox(make_task(), env={"TASK_GREETING": "spec"}) as sb:
        assert (await sb.exec("echo $TASK_GREETING")).stdout == "spec\n"


async def test_workdir_and_copy_from_dockerfile(sandbox: Sandbox) -> None:
    assert sandbox.workdir == "/app"
    result = await sandbox.exec("pwd; cat data/input.txt")
    assert result.stdout == "/app\ninput data\n"
    elsewhere = await sandbox.exec("pwd", cwd="/logs")
    assert elsewhere.stdout == "/logs\n"


async def test_workspace_persists_between_execs(sandbox: Sandbox) -> None:
    await sandbox.exec("echo kept > /app/note.txt && echo tmp > /tmp/t.txt")
    assert (await sandbox.exec("cat /app/note.txt /tmp/t.txt")).stdout == "kept\ntmp\n"


async def test_logs_folders_are_writable(sandbox: Sandbox) -> None:
    result = await sandbox.exec(
        "for d in agent verifier artifacts; do echo x > /logs/$d/f && echo ok; done"
    )
    assert result.stdout == "ok\nok\nok\n"


async def test_timeout_kills_and_reports(sandbox: Sandbox) -> None:
    started = time.monotonic()
    result = await sandbox.exec("echo before; sleep 30; echo after", timeout_sec=1)
    assert time.monotonic() - started < 10
    assert result.timed_out and result.exit_code == 124
    assert "after" not in result.stdout


async def test_output_is_truncated_per_stream(sandbox: Sandbox) -> None:
    result = await sandbox.exec("yes 0123456789 | head -c 300000", max_output_bytes=1000)
    assert result.truncated and len(result.stdout) == 1000
    full = await sandbox.exec("yes 0123456789 | head -c 300000")
    assert not full.truncated and len(full.stdout) == 300000


async def test_upload_and_download_round_trip(sandbox: Sandbox, tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "nested").mkdir(parents=True)
    (src / "a.txt").write_text("A")
    (src / "nested" / "b.txt").write_text("B")
    single = tmp_path / "single.txt"
    single.write_text("single")
    await sandbox.upload(src, "/app/uploaded")
    await sandbox.upload(single, "/app/deep/er/one.txt")
    listing = await sandbox.exec(
        "cat /app/uploaded/a.txt /app/uploaded/nested/b.txt /app/deep/er/one.txt"
    )
    assert listing.stdout == "ABsingle"
    await sandbox.exec(
        "mkdir -p /logs/verifier/sub && echo 0.5 > /logs/verifier/reward.txt && echo s > /logs/verifier/sub/x"
    )
    out = tmp_path / "out"
    await sandbox.download("/logs/verifier", out)
    assert (out / "reward.txt").read_text() == "0.5\n"
    assert (out / "sub" / "x").read_text() == "s\n"
    await sandbox.download("/logs/verifier/reward.txt", tmp_path / "r.txt")
    assert (tmp_path / "r.txt").read_text() == "0.5\n"
    with pytest.raises(SandboxError, match="does not exist"):
        await sandbox.download("/logs/verifier/missing.txt", tmp_path / "m.txt")


async def test_spec_files_are_in_place_after_start(
    open_sandbox: Callable[..., Sandbox], make_task: MakeTask, tmp_path: Path
) -> None:
    instruction = tmp_path / "instruction.md"
    instruction.write_text("Do the thing.\n")
    solution = tmp_path / "solution"
    (solution / "lib").mkdir(parents=True)
    (solution / "solve.sh").write_text("echo solved\n")
    (solution / "lib" / "helper.txt").write_text("help\n")
    files = {"/instruction.md": instruction, "/solution": solution}
    async with open_sandbox(make_task(), files=files) as sb:
        seen = await sb.exec("cat /instruction.md /solution/solve.sh /solution/lib/helper.txt")
        assert seen.stdout == "Do the thing.\necho solved\nhelp\n"
    sb = open_sandbox(make_task(), files={"/instruction.md": tmp_path / "missing.md"})
    with pytest.raises(SandboxError, match="does not exist"):
        async with sb:
            pass


async def test_download_never_follows_symlinks(sandbox: Sandbox, tmp_path: Path) -> None:
    made = await sandbox.exec(
        "ln -s /etc/passwd /logs/verifier/reward.txt && ln -s /etc /logs/verifier/etc"
        " && echo real > /logs/verifier/real.txt"
    )
    assert made.exit_code == 0, made
    out = tmp_path / "out"
    await sandbox.download("/logs/verifier", out)
    assert sorted(p.name for p in out.iterdir()) == ["real.txt"]
    with pytest.raises(SandboxError, match="symbolic link"):
        await sandbox.download("/logs/verifier/reward.txt", tmp_path / "reward.txt")
    assert not (tmp_path / "reward.txt").exists()


async def test_task_files_appear_only_when_uploaded(sandbox: Sandbox, tmp_path: Path) -> None:
    probe = "for p in /tests /solution /instruction.md; do test -e $p && echo $p; done; true"
    assert (await sandbox.exec(probe)).stdout == ""
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test.sh").write_text("echo graded\n")
    instruction = tmp_path / "instruction.md"
    instruction.write_text("do it\n")
    await sandbox.upload(tests, "/tests")
    await sandbox.upload(instruction, "/instruction.md")
    assert (await sandbox.exec(probe)).stdout == "/tests\n/instruction.md\n"
    assert (
        await sandbox.exec("sh /tests/test.sh; cat /instruction.md")
    ).stdout == "graded\ndo it\n"


async def test_skills_follow_the_condition(
    open_sandbox: Callable[..., Sandbox], make_task: MakeTask
) -> None:
    task = make_task()
    async with open_sandbox(task, with_skills=True) as sb:
        assert (await sb.exec("cat /skills/adder/SKILL.md")).stdout.endswith("Add numbers.\n")
    async with open_sandbox(task, with_skills=False) as sb:
        assert (await sb.exec("test -e /skills || echo absent")).stdout == "absent\n"


async def test_network_is_off_unless_allowed(
    open_sandbox: Callable[..., Sandbox], make_task: MakeTask
) -> None:
    interfaces = "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"
    async with open_sandbox(make_task()) as sb:
        assert (await sb.exec(interfaces)).stdout.split() == ["lo"]
    async with open_sandbox(make_task(internet=True), internet=True) as sb:
        assert set((await sb.exec(interfaces)).stdout.split()) - {"lo"}


async def test_open_process_streams_stdio(sandbox: Sandbox) -> None:
    proc = await sandbox.open_process(
        ["sh", "-c", 'while read line; do echo "echo:$line"; echo "log:$line" >&2; done']
    )
    for word in ("one", "two"):
        proc.stdin.write(f"{word}\n".encode())
        await proc.stdin.drain()
        assert await asyncio.wait_for(proc.stdout.readline(), 10) == f"echo:{word}\n".encode()
        assert await asyncio.wait_for(proc.stderr.readline(), 10) == f"log:{word}\n".encode()
    proc.stdin.close()
    assert await asyncio.wait_for(proc.wait(), 10) == 0
    assert proc.returncode == 0


async def test_open_process_kill(sandbox: Sandbox) -> None:
    marker = f"marker-{uuid.uuid4().hex}"
    proc = await sandbox.open_process(["sh", "-c", f"{loop_cmd(marker)} & {loop_cmd(marker)}"])
    await asyncio.sleep(0.5)
    assert processes_with(marker)
    await proc.kill()
    assert proc.returncode is not None
    assert await wait_gone(marker) == []
    await proc.kill()  # idempotent


async def test_kill_processes_ends_background_work(sandbox: Sandbox) -> None:
    marker = f"marker-{uuid.uuid4().hex}"
    agent = await sandbox.open_process(["sh", "-c", f"({loop_cmd(marker)} &) ; {loop_cmd(marker)}"])
    await asyncio.sleep(0.5)
    assert processes_with(marker)
    await sandbox.kill_processes()
    assert await wait_gone(marker) == []
    await asyncio.wait_for(agent.wait(), 10)
    assert (await sandbox.exec("echo still usable")).stdout == "still usable\n"


async def test_kill_upload_exec_kills_then_places_files_then_runs(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The verifier's first step: nothing left running, the upload in place (a planted link
    cannot redirect it), then the command as root with its stdin."""
    marker = f"marker-{uuid.uuid4().hex}"
    agent = await sandbox.open_process(["sh", "-c", f"({loop_cmd(marker)} &) ; {loop_cmd(marker)}"])
    await sandbox.exec(
        "mkdir -p /tests/sub /app && echo outside > /app/outside.txt && "
        "ln -s /app/outside.txt /tests/test.sh && echo planted > /tests/sub/planted.py && "
        "ln -s /app /tests/linkdir"
    )
    await asyncio.sleep(0.3)
    assert processes_with(marker)
    upload = tmp_path / "tests"
    (upload / "sub").mkdir(parents=True)
    (upload / "test.sh").write_text("real tests\n")
    (upload / "sub" / "data.txt").write_text("data\n")
    result = await sandbox.kill_upload_exec(
        "id -u; cat; cat /tests/test.sh /tests/sub/data.txt /app/outside.txt",
        upload=upload,
        target="/tests",
        stdin=b"from stdin\n",
        timeout_sec=60,
    )
    assert await wait_gone(marker) == []
    await asyncio.wait_for(agent.wait(), 10)
    lines = result.stdout.splitlines()
    assert result.exit_code == 0, result
    output = [line for line in lines if not line.startswith("removed ")]
    assert output == ["0", "from stdin", "real tests", "data", "outside"]
    # A fused upload replaces /tests and reports what it dropped; a merging one leaves it for
    # hardening to remove. Either way the upload itself landed and no link was followed.
    reported = {line[len("removed ") :] for line in lines if line.startswith("removed ")}
    assert reported <= {"/tests/test.sh", "/tests/sub/planted.py", "/tests/linkdir"}
    if reported:
        assert reported == {"/tests/test.sh", "/tests/sub/planted.py", "/tests/linkdir"}
        listing = await sandbox.exec("cd /tests && find . | sort")
        assert listing.stdout.split() == [".", "./sub", "./sub/data.txt", "./test.sh"]
    kind = await sandbox.exec("[ -L /tests/test.sh ] && echo link || echo file")
    assert kind.stdout == "file\n"
    with pytest.raises(SandboxError, match="does not exist"):
        await sandbox.kill_upload_exec(
            "true", upload=tmp_path / "missing", target="/tests", timeout_sec=60
        )


# The forker keeps replacing a child that writes a heartbeat file; the waker keeps waking the
# forker up (SIGCONT). Each stops for at most 20 s. See the test below.
FORKER = """
import os, sys, time
start, child = time.time(), 0
open(sys.argv[1] + ".pid", "w").write(str(os.getpid()))
while time.time() - start < 20:
    new = os.fork()
    if new == 0:
        while time.time() - start < 20:
            open(sys.argv[1], "w").close()
            time.sleep(0.05)
        os._exit(0)
    if child:
        os.kill(child, 9)
        os.waitpid(child, 0)
    child = new
"""
WAKER = """
import os, signal, sys, time
start, pid = time.time(), int(open(sys.argv[1] + ".pid").read())
while time.time() - start < 20:
    try:
        os.kill(pid, signal.SIGCONT)
    except OSError:
        pass
"""


@pytest.mark.parametrize("kill", ["kill_processes", "kill_upload_exec"])
async def test_a_process_woken_up_and_forking_does_not_escape_the_kill(
    sandbox: Sandbox, tmp_path: Path, kill: str
) -> None:
    """Every process stops at once, not one pid at a time. A kill that lists /proc and signals
    in that order stops the forker, then (sleepers later) the waker, which has woken the forker
    up again by then; its kill pass reaches the forker only after the sleepers listed first,
    time in which the forker forks a child that was in no listing."""
    beat = f"/tmp/beat-{uuid.uuid4().hex}"
    for name, text in (("forker.py", FORKER), ("waker.py", WAKER)):
        (tmp_path / name).write_text(text)
        await sandbox.upload(tmp_path / name, f"/tmp/{name}")
    # LC_ALL=C: under a UTF-8 locale each glibc `sleep` maps ~15 locale files, and on a Docker
    # Engine with fuse-overlayfs every one is a descriptor of the container's fuse-overlayfs
    # daemon, whose limit is dockerd's (20,000 on some hosts): 1,400 sleepers would exhaust it.
    sleepers = "for i in $(seq 700); do LC_ALL=C setsid sleep 30 </dev/null >/dev/null 2>&1 & done"
    started = await sandbox.exec(
        # pids from 1000 on: /proc lists them in creation order
        "until [ $(sh -c 'echo $$') -ge 1000 ]; do (:) & done; wait; "
        f"{sleepers}; setsid python3 /tmp/forker.py {beat} </dev/null >/dev/null 2>&1 & "
        f"i=0; until [ -e {beat} ] || [ $i -gt 100 ]; do sleep 0.1; i=$((i+1)); done; "
        f"{sleepers}; setsid python3 /tmp/waker.py {beat} </dev/null >/dev/null 2>&1 & "
        f"sleep 0.5; ls {beat}",
        timeout_sec=60,
    )
    assert started.exit_code == 0, started
    if kill == "kill_processes":
        await sandbox.kill_processes()
    else:
        upload = tmp_path / "tests"
        upload.mkdir()
        (upload / "test.sh").write_text("true\n")
        await sandbox.kill_upload_exec("true", upload=upload, target="/tests", timeout_sec=60)
    await sandbox.exec(f"rm -f {beat}")
    await asyncio.sleep(1)
    assert (await sandbox.exec(f"ls {beat}")).exit_code != 0, "a process survived the kill"


async def test_stop_kills_everything_and_is_idempotent(
    open_sandbox: Callable[..., Sandbox], make_task: MakeTask
) -> None:
    marker = f"marker-{uuid.uuid4().hex}"
    sb = open_sandbox(make_task())
    try:
        await sb.start()
        await sb.open_process(["sh", "-c", f"({loop_cmd(marker)} &) ; {loop_cmd(marker)}"])
        await sb.exec(f"nohup {loop_cmd(marker)} > /dev/null 2>&1 &", timeout_sec=10)
        await asyncio.sleep(0.5)
        assert processes_with(marker)
    finally:
        await sb.stop()
    assert await wait_gone(marker) == []
    await sb.stop()
    with pytest.raises(SandboxError):
        await sb.exec("true")


async def test_stop_without_start_is_safe(
    open_sandbox: Callable[..., Sandbox], make_task: MakeTask
) -> None:
    sb = open_sandbox(make_task())
    await sb.stop()
    await sb.stop()


@pytest.mark.parametrize("delay", [0.0, 0.2, 0.5])
async def test_cancelled_start_leaves_nothing(
    open_sandbox: Callable[..., Sandbox], make_task: MakeTask, delay: float
) -> None:
    sb = open_sandbox(make_task())
    marker = sb.spec.state_dir.name
    starting = asyncio.create_task(sb.start())
    await asyncio.sleep(delay)
    starting.cancel()
    with contextlib.suppress(asyncio.CancelledError, SandboxError):
        await starting
    await sb.stop()
    await asyncio.sleep(0.2)
    assert await wait_gone(str(sb.spec.state_dir)) == []
    if sb.name == "docker":
        from worker.sandbox._docker.client import LABEL_TRIAL, docker_client

        left = docker_client().containers.list(
            all=True, filters={"label": f"{LABEL_TRIAL}={sb.spec.trial_id}"}
        )
        assert left == [], marker


async def test_cancelled_exec_kills_its_command(sandbox: Sandbox) -> None:
    marker = f"marker-{uuid.uuid4().hex}"
    running = asyncio.create_task(sandbox.exec(loop_cmd(marker)))
    deadline = time.monotonic() + 10
    while not processes_with(marker) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert processes_with(marker)
    running.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await running
    assert await wait_gone(marker) == []


async def _run_process(sandbox: Sandbox, marker: str) -> None:
    """What an agent session does with its process: open it, wait, kill it when stopped."""
    process = await sandbox.open_process(["sh", "-c", "while :; do sleep 1; done", marker])
    try:
        await process.wait()
    finally:
        await process.kill()


async def _cancel_after(
    sandbox: Sandbox, marker: str, steps: int, delay: float, *, process: bool = False
) -> None:
    """Start an endless exec (or process), cancel it after ``steps`` event-loop iterations
    (then ``delay`` seconds), and require the cancellation to complete and the command to be
    gone."""
    work = _run_process(sandbox, marker) if process else sandbox.exec(loop_cmd(marker))
    running = asyncio.create_task(work)
    for _ in range(steps):
        await asyncio.sleep(0)
    if delay:
        await asyncio.sleep(delay)
    running.cancel()
    done, _ = await asyncio.wait({running}, timeout=60)
    assert running in done, f"cancel after {steps} loop iterations (+{delay}s) never completed"
    assert await wait_gone(marker, timeout=30) == []


@pytest.mark.timeout(900)
async def test_cancel_completes_at_every_moment_under_load(sandbox: Sandbox) -> None:
    """Cancelling an exec or an agent's process before it started, while starting, running or
    exiting always ends, also with CPU-bound processes competing for the cores."""
    burners = [
        await asyncio.create_subprocess_exec(
            "python3", "-c", "import time\nend = time.time() + 600\nwhile time.time() < end: pass"
        )
        for _ in range(2)
    ]
    try:
        marker = f"marker-{uuid.uuid4().hex}"
        for steps in range(40):
            await _cancel_after(sandbox, f"{marker}-{steps}", steps, 0)
        for delay in (0.01, 0.05, 0.1, 0.2, 0.4, 0.8):
            await _cancel_after(sandbox, f"{marker}-d{delay}", 0, delay)
        for steps in range(20):
            await _cancel_after(sandbox, f"{marker}-p{steps}", steps, 0, process=True)
        for delay in (0.05, 0.2, 0.8):
            await _cancel_after(sandbox, f"{marker}-pd{delay}", 0, delay, process=True)
        # A command whose start went on after the cancel would show up only now.
        assert await wait_gone(marker, timeout=30) == []
    finally:
        for burner in burners:
            burner.kill()
            await burner.wait()
