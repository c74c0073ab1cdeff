"""Run one trial of a manifest agent through the worker's engine (local bubblewrap sandbox) with
the model proxy in front of a fake provider on loopback."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testsupport import make_task

from worker.api import RunRequest, RunTask, UsageSettings
from worker.core.failures import RetryPolicy
from worker.runs.engine import Engine, EngineSettings
from worker.runs.meta import ProofSettings

AGENTS_DIR = Path(__file__).resolve().parent / "agents"  # the model-calling test agents
ENVIRONMENT = "local"  # the worker's bubblewrap sandbox
DIGEST = "sha256:" + "0" * 64
REAL_KEY = "sk-real-provider-key-0123456789abcdef"


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
    """A Python with `acp` and `httpx`, as seen from inside a sandbox: the host's system
    interpreter of this version with this venv's packages (lent to the sandbox); the venv's own
    interpreter and a pyenv one live in folders the sandbox does not show."""
    env = {"MODEL_AGENT_PYTHON": sys.executable}
    system = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if system.exists():
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
        # A generous agent time: a busy host (CI beside other suites) must not turn a slow
        # agent start into a failed trial; these tests check what was recorded, not speed.
        make_task(tasks, "answer-42", internet=internet, agent_timeout=300)
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
