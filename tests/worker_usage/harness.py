"""Run one trial of a manifest agent through the worker's engine (local bubblewrap sandbox) with
the model proxy in front of a fake provider on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
import textwrap
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn

from worker.api import RunRequest, RunTask, UsageSettings
from worker.engine import Engine, EngineSettings
from worker.failures import RetryPolicy
from worker.meta import ProofSettings

AGENTS_DIR = Path(__file__).resolve().parent / "agents"  # the model-calling test agents
ENVIRONMENT = "local"  # the worker's bubblewrap sandbox
DIGEST = "sha256:" + "0" * 64
REAL_KEY = "sk-real-provider-key-0123456789abcdef"
PASS_TEST = """\
#!/bin/sh
if [ "$(cat /root/answer.txt 2>/dev/null)" = "42" ]; then r=1; else r=0; fi
echo $r > /logs/verifier/reward.txt
"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.asynccontextmanager
async def serve(app: Any) -> AsyncIterator[str]:
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)


def make_task(root: Path, task_id: str = "answer-42", *, internet: bool = False) -> Path:
    folder = root / task_id
    (folder / "environment").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "task.toml").write_text(
        textwrap.dedent(
            f"""\
            version = "1.0"
            [metadata]
            category = "testing"
            difficulty = "easy"
            [agent]
            timeout_sec = 60
            [verifier]
            timeout_sec = 30
            [environment]
            allow_internet = {str(internet).lower()}
            """
        )
    )
    (folder / "instruction.md").write_text("Write 42 to /root/answer.txt.\n")
    (folder / "environment" / "Dockerfile").write_text("FROM python:3.11-slim\nWORKDIR /root\n")
    (folder / "tests" / "test.sh").write_text(PASS_TEST)
    os.chmod(folder / "tests" / "test.sh", 0o755)
    return folder


@dataclass
class Trial:
    dir: Path
    result: dict[str, Any]
    timing: dict[str, Any]
    config: dict[str, Any]
    run_dir: Path

    def calls(self) -> list[dict[str, Any]]:
        path = self.dir / "trajectory" / "llm_trajectory.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    @property
    def usage(self) -> dict[str, Any]:
        return dict(self.result["agent_result"])


def agent_env(**extra: str) -> dict[str, str]:
    """A Python with `acp` and `httpx`, as seen from inside a sandbox that shows the host root."""
    env = {"MODEL_AGENT_PYTHON": sys.executable}
    system = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if os.path.realpath(sys.base_prefix).startswith("/root/") and system.exists():
        # A pyenv interpreter under /root is hidden by the sandbox's /root: use the system
        # interpreter of the same version with this venv's packages.
        env["MODEL_AGENT_PYTHON"] = str(system)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p.endswith("site-packages"))
    return {**env, **extra}


async def run_one(
    tmp: Path,
    agent: str = "model-acp-agent",
    usage: UsageSettings | None = None,
    *,
    internet: bool = False,
    environment: str = ENVIRONMENT,
) -> Trial:
    tasks = tmp / "tasks"
    if not tasks.exists():
        tasks.mkdir(parents=True)
        make_task(tasks, internet=internet)
    jobs = tmp / "jobs"
    engine = Engine(
        EngineSettings(
            jobs_dir=jobs,
            tasks_dir=tasks,
            environment=environment,
            concurrency=1,
            retry=RetryPolicy(max_attempts=1),
            proof=ProofSettings.from_env(jobs, {}),
            env={},
        )
    )
    await engine.start(resume=False)
    request = RunRequest(
        config={"task_set": "usage-tests", "condition": "with_skills"},
        task_set="usage-tests",
        task_set_digest=DIGEST,
        tasks=[RunTask(task_id="answer-42", category="testing", difficulty="easy")],
        agent=agent,
        usage=usage,
    )
    try:
        record = await engine.submit(request)
        await asyncio.wait_for(engine.wait(record.run_id), 120)
    finally:
        await engine.close()
    (trial_dir,) = sorted((jobs / "runs").glob("*/trials/*"))

    def load(name: str) -> dict[str, Any]:
        return dict(json.loads((trial_dir / name).read_text()))

    return Trial(
        trial_dir, load("result.json"), load("timing.json"), load("config.json"), jobs / "runs"
    )
