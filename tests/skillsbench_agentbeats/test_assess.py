"""``skillsbench-agentbeats assess``: the gateway's job from the command line, over loopback."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from green_agent.adapters import adapter_from_settings
from green_agent.server import build_app
from green_agent.settings import GreenSettings
from leaderboard.rows import Envelope
from skillsbench_agentbeats.in_process import serve_app
from tests.green_agent.fake_worker import FakeWorker
from tests.green_agent.support import FIVE, purple_app, silent_purple_app
from tests.support import REPO_ROOT, free_port, wait_for_http

WORKER_ENV = ("SKILLSBENCH_WORKER_URL", "SKILLSBENCH_WORKER_SLOT_URL", "SKILLSBENCH_WORKER_TOKEN")
# One real example task (tasks/): the local worker runs it for real.
EXAMPLE = {"task_set": "examples", "task_ids": ["grid-path-count"]}


def _needs_local_sandbox() -> None:
    from worker.sandbox.base import SandboxError, sandbox_class

    try:
        sandbox_class("local")
    except (ValueError, SandboxError) as exc:
        pytest.skip(f"the local sandbox cannot run here: {exc}")


def _env(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k not in WORKER_ENV}, **extra}


async def _cli(
    *args: str, env: dict[str, str] | None = None, tmpdir: Path | None = None
) -> tuple[int, str, str]:
    env = env or _env()
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "skillsbench_agentbeats",
        "assess",
        *args,
        cwd=REPO_ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_assess_starts_a_local_green_agent_and_writes_the_gateway_file(
    tmp_path: Path,
) -> None:
    _needs_local_sandbox()
    config = tmp_path / "config.json"
    config.write_text(json.dumps(EXAMPLE))
    output = tmp_path / "results.json"
    async with serve_app(purple_app) as purple:
        code, _, err = await _cli(
            "--participant",
            purple,
            "--config",
            f"@{config}",
            "--output",
            str(output),
            "--jobs-dir",
            str(tmp_path / "jobs"),
        )
    assert code == 0, err
    data = json.loads(output.read_text())
    assert set(data) == {"status", "results"}
    assert data["status"] == "completed"
    (envelope,) = data["results"]
    parsed = Envelope.model_validate(envelope)
    assert parsed.participants == {"agent": purple}
    assert [row.score_eligible for row in parsed.results] == [True], parsed.results
    assert "started a local green agent" in err  # progress lines
    assert "[completed] Assessment finished" in err
    # The hint names the command as it was started here (serving/invocation.py).
    assert "next: " in err and " leaderboard aggregate " in err.split("next: ", 1)[1]


async def test_assess_against_a_running_green_agent(tmp_path: Path) -> None:
    worker = FakeWorker(tmp_path / "state", trial_sec=0.02)
    settings = GreenSettings()
    async with (
        serve_app(purple_app) as purple,
        serve_app(lambda url: worker.app()) as wurl,
    ):
        settings = GreenSettings(worker_url=wurl)
        async with serve_app(
            lambda url: build_app(url, settings, adapter_from_settings(settings))
        ) as green:
            code, out, err = await _cli(
                "--participant", purple, "--config", json.dumps(FIVE), "--green", green
            )
    assert code == 0, err
    data = json.loads(out)
    (envelope,) = data["results"]
    assert all(row["score_eligible"] for row in envelope["results"])


async def test_assess_bad_config_is_one_line(tmp_path: Path) -> None:
    code, _out, err = await _cli("--participant", "http://127.0.0.1:1/", "--config", "{oops")
    assert code != 0
    assert "--config: not valid JSON" in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


async def test_assess_invalid_config_reports_the_field(tmp_path: Path) -> None:
    """Checked locally before anything starts: one line naming the field, exit code 2."""
    output = tmp_path / "results.json"
    async with serve_app(purple_app) as purple:
        code, _, err = await _cli(
            "--participant",
            purple,
            "--config",
            json.dumps({"task_set": "smoke", "tasks": "all", "num_shards": 0}),
            "--output",
            str(output),
        )
    assert code == 2, err
    assert err.startswith("error: --config: config.num_shards: "), err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "started a local" not in err  # nothing was started
    assert not output.exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--participant", "notaurl"], "error: --participant: must be an absolute http(s) URL"),
        (
            ["--participant", "http://127.0.0.1:9/", "--green", "green.example"],
            "error: --green: must be an absolute http(s) URL",
        ),
        (
            ["--participant", "http://127.0.0.1:9/", "--config", '{"task_set": "no-such-set"}'],
            "error: --config: config.",
        ),
    ],
)
async def test_assess_checks_urls_and_config_before_starting(
    args: list[str], expected: str
) -> None:
    if "--config" not in args:
        args = [*args, "--config", json.dumps(FIVE)]
    code, out, err = await _cli(*args)
    assert code == 2, err
    assert err.startswith(expected), err
    assert len(err.strip().splitlines()) == 1 and out == ""


async def test_assess_removes_its_temporary_jobs_dir(tmp_path: Path) -> None:
    """Issue #32: each in-process assess left a /tmp/skillsbench-assess-* folder behind."""
    _needs_local_sandbox()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    async with serve_app(purple_app) as purple:
        code, out, err = await _cli(
            "--participant", purple, "--config", json.dumps(EXAMPLE), tmpdir=tmp
        )
    assert code == 0, err
    assert json.loads(out)["status"] == "completed"
    assert sorted(p.name for p in tmp.glob("skillsbench-assess-*")) == []
    assert "skillsbench-assess-" in err and "removed at the end" in err  # it was made, and said


async def test_assess_interrupted_removes_its_temporary_jobs_dir(tmp_path: Path) -> None:
    """The same on an interrupt: SIGINT while the worker is up (waiting for a participant that
    never answers), then the folder is gone once the process has exited."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in WORKER_ENV} | {"TMPDIR": str(tmp)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "skillsbench_agentbeats", "assess",
        "--participant", "http://127.0.0.1:9/", "--config", json.dumps(EXAMPLE),
        cwd=REPO_ROOT, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stderr is not None
    seen = b""
    while b"started a local green agent" not in seen:
        line = await asyncio.wait_for(proc.stderr.readline(), timeout=120)
        assert line, seen.decode()
        seen += line
    assert list(tmp.glob("skillsbench-assess-*")), seen.decode()  # made, not yet removed
    proc.send_signal(signal.SIGINT)
    _out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode != 0, err.decode()
    assert sorted(p.name for p in tmp.glob("skillsbench-assess-*")) == [], (seen + err).decode()


class _Assess:
    """``skillsbench-agentbeats assess`` as a real subprocess whose stderr is read as it comes."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, *args: str, env: dict[str, str] | None = None) -> _Assess:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "skillsbench_agentbeats",
            "assess",
            *args,
            cwd=REPO_ROOT,
            env=env or _env(),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        return cls(proc)

    async def _read(self) -> None:
        assert self.proc.stderr is not None
        async for line in self.proc.stderr:
            self.lines.append(line.decode())

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    async def wait_for(self, text: str, guard_sec: float = 120) -> None:
        async with asyncio.timeout(guard_sec):
            while not any(text in line for line in self.lines):
                if self.proc.returncode is not None:
                    raise AssertionError(f"assess exited before {text!r}:\n{self.stderr}")
                await asyncio.sleep(0.05)

    async def exit_code(self, guard_sec: float = 120) -> int:
        code = await asyncio.wait_for(self.proc.wait(), guard_sec)
        await self._reader
        return code

    def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()


def _runs(jobs: Path) -> list[Any]:
    from worker.runs.store import RunStore

    runs, problems = RunStore(jobs).load_all()
    assert problems == []
    return runs


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
async def test_a_signal_cancels_the_in_process_assessment_and_its_worker_run(
    tmp_path: Path, signum: int, code: int
) -> None:
    """Ctrl-C (or SIGTERM) while a trial is under way: the worker run ends cancelled, the
    command exits 128 + the signal with one line and no traceback, and the results file says
    the assessment was interrupted (no network error, nothing to aggregate). Meanwhile its
    progress says what the trial does."""
    _needs_local_sandbox()
    received = asyncio.Event()
    jobs = tmp_path / "jobs"
    output = tmp_path / "results.json"
    async with serve_app(silent_purple_app(received)) as purple:
        run = await _Assess.start(
            "--participant", purple, "--config", json.dumps(EXAMPLE),
            "--jobs-dir", str(jobs), "--output", str(output),
            env=_env(SKILLSBENCH_GREEN_HEARTBEAT_SEC="0.2"),
        )  # fmt: skip
        try:
            await asyncio.wait_for(received.wait(), 120)  # the trial's agent is at work
            await run.wait_for("; now grid-path-count#0 agent running for ")
            (live,) = _runs(jobs)
            assert live.status in ("queued", "running") and not live.cancel_requested
            run.proc.send_signal(signum)
            assert await run.exit_code() == code, run.stderr
        finally:
            run.kill()
    err = run.stderr
    assert "Traceback" not in err, err
    name = signal.Signals(signum).name
    assert f"{name} received: cancelling the assessment" in err
    assert "is canceled (its worker run too)" in err
    assert f"error: assessment canceled: interrupted by {name}" in err
    assert "next:" not in err
    assert json.loads(output.read_text()) == {
        "status": "canceled",
        "results": [],
        "error": f"interrupted by {name}",
    }
    (stored,) = _runs(jobs)
    assert stored.status == "cancelled" and stored.cancel_requested


async def test_sigint_on_assess_green_cancels_the_remote_assessment(tmp_path: Path) -> None:
    """``assess --green``: the green agent (its own process) is told to cancel (A2A CancelTask)
    and cancels the worker run; the command does not just walk away from it."""
    _needs_local_sandbox()
    from tests.green_agent.support import worker_under_test

    async with worker_under_test("real", tmp_path, config=FIVE, only_first_ends=True) as worker:
        port = free_port()
        log = tmp_path / "green.log"
        with open(log, "wb") as sink:
            green = subprocess.Popen(
                [sys.executable, "-m", "green_agent", "--port", str(port)],
                cwd=REPO_ROOT,
                env=_env(SKILLSBENCH_WORKER_URL=worker.url),
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        run: _Assess | None = None
        try:
            green_url = f"http://127.0.0.1:{port}/"
            await asyncio.to_thread(
                wait_for_http, green_url + ".well-known/agent-card.json", green, what="green",
                log=log,
            )  # fmt: skip
            run = await _Assess.start(
                "--participant", worker.purple_url, "--config", json.dumps(FIVE),
                "--green", green_url,
            )  # fmt: skip
            await run.wait_for("Trial 1 of 5 finished")  # the rest never end on their own
            assert worker.cancelled() == [False]
            run.proc.send_signal(signal.SIGINT)
            assert await run.exit_code() == 130, run.stderr
            assert worker.cancelled() == [True]  # before the command exited
            (stored,) = _runs(worker.jobs)
            assert stored.status == "cancelled"
        finally:
            if run is not None:
                run.kill()
            green.terminate()
            green.wait(timeout=30)
    err = run.stderr
    assert "Traceback" not in err, err
    assert "is canceled (its worker run too)" in err
    assert "aborted" not in err


async def test_a_worker_refusing_the_token_fails_the_assessment_exit_1(tmp_path: Path) -> None:
    """A real worker process with a token, and the wrong one: the assessment is failed (exit 1,
    the worker's refusal in one line) and never offered for aggregation."""
    port = free_port()
    log = tmp_path / "worker.log"
    with open(log, "wb") as sink:
        worker = subprocess.Popen(
            [
                sys.executable, "-m", "skillsbench_agentbeats", "worker", "--port", str(port),
                "--jobs-dir", str(tmp_path / "jobs"),
            ],
            cwd=REPO_ROOT,
            env=_env(SKILLSBENCH_WORKER_TOKEN="s3cret"),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    output = tmp_path / "results.json"
    try:
        await asyncio.to_thread(
            wait_for_http, f"http://127.0.0.1:{port}/healthz", worker, what="worker", log=log
        )
        async with serve_app(purple_app) as purple:
            code, _, err = await _cli(
                "--participant", purple, "--config", json.dumps(EXAMPLE),
                "--output", str(output),
                env=_env(
                    SKILLSBENCH_WORKER_URL=f"http://127.0.0.1:{port}",
                    SKILLSBENCH_WORKER_TOKEN="wrong",
                ),
            )  # fmt: skip
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    assert code == 1, err
    assert "Traceback" not in err
    assert "error: assessment failed: worker refused the run: HTTP 401" in err, err
    assert "next:" not in err and "aggregate" not in err
    data = json.loads(output.read_text())
    assert data["status"] == "failed" and data["results"] == []
    assert "no trial was scored (1 worker_error)" in data["error"]


async def test_an_unreachable_worker_fails_the_assessment_and_says_so_while_retrying(
    tmp_path: Path,
) -> None:
    """Nothing listens at SKILLSBENCH_WORKER_URL: while the green agent retries, the command
    says so (no silent minutes); then it fails, exit 1."""
    dead = f"http://127.0.0.1:{free_port()}"
    async with serve_app(purple_app) as purple:
        code, out, err = await _cli(
            "--participant", purple, "--config", json.dumps(EXAMPLE),
            env=_env(
                SKILLSBENCH_WORKER_URL=dead,
                SKILLSBENCH_WORKER_RETRY_SEC="4",
                SKILLSBENCH_GREEN_HEARTBEAT_SEC="1",
            ),
        )  # fmt: skip
    assert code == 1, err
    assert f"[working] The worker at {dead} is not answering (ConnectError" in err, err
    assert "Still running" not in err
    assert f"error: assessment failed: worker at {dead} unreachable for 4s" in err, err
    assert json.loads(out)["status"] == "failed"
