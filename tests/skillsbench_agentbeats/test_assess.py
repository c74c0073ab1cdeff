"""``skillsbench-agentbeats assess``: the gateway's job from the command line, over loopback."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from green_agent.adapters import adapter_from_settings
from green_agent.server import build_app
from green_agent.settings import GreenSettings
from leaderboard.rows import Envelope
from skillsbench_agentbeats.in_process import serve_app
from tests.green_agent.fake_worker import FakeWorker
from tests.green_agent.support import FIVE, purple_app
from tests.support import REPO_ROOT

WORKER_ENV = ("SKILLSBENCH_WORKER_URL", "SKILLSBENCH_WORKER_SLOT_URL", "SKILLSBENCH_WORKER_TOKEN")


async def _cli(*args: str, tmpdir: Path | None = None) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if k not in WORKER_ENV}
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
    config = tmp_path / "config.json"
    config.write_text(json.dumps(FIVE))
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
    assert len(parsed.results) == 5
    assert "started a local green agent" in err  # progress lines
    assert "[completed] Assessment finished" in err


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
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    async with serve_app(purple_app) as purple:
        code, out, err = await _cli(
            "--participant", purple, "--config", json.dumps(FIVE), tmpdir=tmp
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
        "--participant", "http://127.0.0.1:9/", "--config", json.dumps(FIVE),
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
