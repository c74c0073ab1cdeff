"""Helpers for the worker tests: tiny task folders, run requests, one trial driven as the worker
drives it (the ACP/A2A harness), scripted purple agents on loopback, the `run` command."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from task_sets.task import Task, load_task
from tests.support import PASS_TEST, SOLVE, free_port, make_task, serve, wait_for_http
from worker.agents.base import Agent, AgentContext, AgentOutcome
from worker.api import RunRequest, RunTask
from worker.core.failures import RetryPolicy
from worker.runs.engine import Engine, EngineSettings
from worker.runs.meta import ProofSettings
from worker.sandbox.base import Sandbox, sandbox_class
from worker.service.app import create_app

DIGEST = "sha256:" + "0" * 64


def run_payload(task_ids: list[str], agent: str | None = "nop", **config: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "config": {"task_set": "worker-tests", "condition": "with_skills", **config},
        "task_set": "worker-tests",
        "task_set_digest": DIGEST,
        "tasks": [
            {"task_id": t, "category": "testing", "difficulty": "easy", "tags": ["worker-test"]}
            for t in task_ids
        ],
    }
    if agent is not None:
        payload["agent"] = agent
    return payload


def script(tmp_path: Path, name: str, body: str) -> str:
    """A script: agent spec for ``body``."""
    path = tmp_path / f"{name}.sh"
    path.write_text(body)
    return f"script:{path}"


async def read_sse(response: httpx.Response) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """Parse a text/event-stream response into (event, data) pairs."""
    name = "message"
    data: list[str] = []
    async for line in response.aiter_lines():
        if line == "":
            if data:
                yield name, json.loads("\n".join(data))
            name, data = "message", []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())


async def submit_and_follow(
    http: httpx.AsyncClient, payload: dict[str, Any], timeout: float = 120
) -> tuple[str, list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    """POST a run, follow its event stream to the end; returns (run_id, events, final status)."""
    response = await http.post("/runs", json=payload)
    assert response.status_code == 201, response.text
    run_id = response.json()["run_id"]
    events: list[tuple[str, dict[str, Any]]] = []

    async def follow() -> None:
        async with http.stream("GET", f"/runs/{run_id}/events", timeout=timeout) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            async for name, data in read_sse(stream):
                events.append((name, data))
                if name == "end":
                    return

    await asyncio.wait_for(follow(), timeout)
    status = (await http.get(f"/runs/{run_id}")).json()
    return run_id, events, status


def process_cmdlines_containing(marker: str) -> list[str]:
    """Command lines of live processes on this host that mention ``marker``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(f"{proc.name}: {cmdline}")
    return found


__all__ = ["PASS_TEST", "SOLVE", "free_port", "make_task", "serve"]


# Drive one agent through one trial the way the worker does (sandbox up → agent → tests copied in
# → verifier) in the worker's ``local`` sandbox, with hooks the worker's own runner does not offer
# (inspecting the sandbox before teardown). End-to-end runs through the worker are in
# tests/skillsbench_agentbeats/test_run_e2e.py.
TASKS = Path(__file__).parent / "tasks"


@dataclass
class TrialResult:
    outcome: AgentOutcome
    reward: float | None
    trial_dir: Path
    verifier: Any = None  # the verifier's ExecResult and the reward read: why a reward is None

    def trajectory(self, name: str = "acp_trajectory.jsonl") -> list[dict[str, Any]]:
        path = self.trial_dir / "trajectory" / name
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def tool_calls(self) -> list[dict[str, Any]]:
        return [e for e in self.trajectory() if e["type"] == "tool_call"]


def task(name: str = "write-answer") -> Task:
    return load_task(TASKS / name)


async def run_trial(
    agent: Agent,
    tmp: Path,
    *,
    the_task: Task | None = None,
    timeout_sec: float | None = None,
    env: dict[str, str] | None = None,
    participant_url: str | None = None,
    prepare: Any = None,
    inspect: Any = None,
    environment: str = "local",
    skills_dir: str | None = None,
    model: str | None = None,
) -> TrialResult:
    """Run the trial; ``prepare(box)`` runs before the agent, ``inspect(box)`` after the
    verifier and before the sandbox stops."""
    the_task = the_task or task()
    trial_dir = tmp / "trial"
    (trial_dir / "trajectory").mkdir(parents=True, exist_ok=True)
    events = trial_dir / "trajectory" / "acp_trajectory.jsonl"

    def record(event: dict[str, Any]) -> None:  # as the worker's TrajectoryRecorder does
        with events.open("a") as out:
            out.write(json.dumps({"timestamp": time.time(), **event}) + "\n")

    # unique ids: docker removes every container labelled with them when one sandbox stops
    box = make_sandbox(
        the_task,
        environment,
        run_id=f"r-{uuid.uuid4().hex[:8]}",
        trial_id="t",
        state_dir=tmp / "box",
    )
    await box.start()
    try:  # the sandbox goes away however the trial ends, cancellation included
        if prepare is not None:
            await prepare(box)
        ctx = AgentContext(
            sandbox=box,
            task=the_task,
            prompt=the_task.instruction,
            trial_dir=trial_dir,
            timeout_sec=timeout_sec or the_task.config.agent.timeout_sec,
            record=record,
            env=env or {},
            participant_url=participant_url,
            skills_dir=skills_dir,
            model=model,
        )
        record({"type": "user_message", "text": ctx.prompt})  # as the worker's trial does
        outcome = await agent.run(ctx)
        await box.upload(the_task.tests_dir, "/tests")
        verified = await box.exec(["sh", "/tests/test.sh"], timeout_sec=30)
        shown = await box.exec(["cat", "/logs/verifier/reward.txt"])
        reward = float(shown.stdout) if shown.exit_code == 0 else None
        if inspect is not None:
            await inspect(box)
    finally:
        await box.stop()
    return TrialResult(outcome, reward, trial_dir, (verified, shown))


def make_sandbox(
    the_task: Task, environment: str = "local", *, run_id: str, trial_id: str, state_dir: Path
) -> Sandbox:
    return sandbox_class(environment).for_task(
        the_task, run_id=run_id, trial_id=trial_id, state_dir=state_dir
    )


# Start a scripted purple agent as a real subprocess on loopback and wait for its agent card.
PURPLE = Path(__file__).parent / "scripted_purple"


@contextlib.contextmanager
def purple_server(
    mode: str,
    *,
    python: Path | str = sys.executable,
    version: str = "v1",
    log: Path | None = None,
    streaming: bool = True,
    env: dict[str, str] | None = None,
) -> Iterator[str]:
    """A scripted purple agent (purple/server_<version>.py) answering in ``mode``."""
    env = {"PATH": "/usr/bin:/bin", "PURPLE_STREAMING": "1" if streaming else "0", **(env or {})}
    if log is not None:
        env["PURPLE_LOG"] = str(log)
    with served(
        lambda port: [str(python), str(PURPLE / f"server_{version}.py"), str(port), mode], env
    ) as url:
        yield url


@contextlib.contextmanager
def served(argv: Callable[[int], list[str]], env: dict[str, str]) -> Iterator[str]:
    """Run ``argv(port)`` and yield its URL once its agent card answers."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="purple-server-") as scratch:
        log = Path(scratch) / f"purple-{port}.log"
        with open(log, "wb") as sink:
            proc = subprocess.Popen(
                argv(port), cwd=PURPLE, env=env, stdout=sink, stderr=subprocess.STDOUT
            )
        try:
            wait_for_http(f"{url}/.well-known/agent-card.json", proc, what="purple server", log=log)
            yield url
        finally:
            proc.kill()
            proc.wait()


# Manifest agents (tests/agents) inside the local sandbox, and the `run` command in a subprocess.
def agent_python() -> dict[str, str]:
    """A Python with the `acp` SDK, as seen from inside a sandbox: the host's system
    interpreter of this version with this venv's packages (which the worker lends the sandbox);
    the venv's own interpreter and a pyenv one live in folders the sandbox does not show."""
    env = {"PY_ACP_AGENT_PYTHON": sys.executable, "PY_ACP_AGENT_PYTHONPATH": ""}
    system = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if system.exists():
        env["PY_ACP_AGENT_PYTHON"] = str(system)
        site = [p for p in sys.path if p.endswith("site-packages")]
        env["PY_ACP_AGENT_PYTHONPATH"] = os.pathsep.join(site)
    return env


def run_cli(tmp: Path, *args: str, env: dict[str, str] | None = None) -> tuple[Any, list[dict]]:  # type: ignore[type-arg]
    """Run the CLI; returns the process and every trial's result.json."""
    code = "import sys; from skillsbench_agentbeats.cli import main; main(sys.argv[1:])"
    done = subprocess.run(
        [sys.executable, "-c", code, "run", *args, "--jobs-dir", str(tmp / "jobs"),
         "--concurrency", "1"],
        capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})},
    )  # fmt: skip
    results = [
        json.loads(p.read_text())
        for p in sorted((tmp / "jobs").glob("runs/*/trials/*/result.json"))
    ]
    assert results, done.stdout + done.stderr
    return done, results


def trial_file(tmp: Path, name: str) -> Path:
    found = sorted((tmp / "jobs").glob(f"runs/*/trials/*/**/{name}"))
    assert found, f"no {name} under {tmp / 'jobs'}"
    return found[-1]


def make_engine(
    jobs: Path,
    tasks_dir: Path,
    environment: str = "local",
    *,
    concurrency: int = 1,
    retry: RetryPolicy | None = None,
    **settings: Any,
) -> Engine:
    """An engine as the worker tests use it: jobs in ``jobs``, one attempt a trial unless
    ``retry`` says otherwise, proofs as the environment configures them."""
    return Engine(
        EngineSettings(
            jobs_dir=jobs,
            tasks_dir=tasks_dir,
            environment=environment,
            concurrency=concurrency,
            retry=retry or RetryPolicy(max_attempts=1),
            proof=ProofSettings.from_env(jobs, {}),
            **settings,
        )
    )


@contextlib.asynccontextmanager
async def started_engine(
    jobs: Path, tasks_dir: Path, environment: str = "local", **options: Any
) -> AsyncIterator[Engine]:
    """:func:`make_engine`, started (no resume) and closed afterwards."""
    engine = make_engine(jobs, tasks_dir, environment, **options)
    await engine.start(resume=False)
    try:
        yield engine
    finally:
        await engine.close()


@contextlib.asynccontextmanager
async def serve_worker(
    tmp_path: Path,
    tasks_dir: Path,
    environment: str = "local",
    *,
    concurrency: int = 3,
    timeout: float = 120,
    **options: Any,
) -> AsyncIterator[httpx.AsyncClient]:
    """A worker over ``tasks_dir`` (jobs in ``tmp_path/jobs``), served on loopback, and a
    client of it. It tries a trial again after a transient infrastructure failure, as a served
    worker does (a busy host's noise is not what these tests judge; a failure the agent or the
    task causes comes back on every try, and the row still shows it)."""
    options.setdefault("retry", RetryPolicy(max_attempts=3, backoff_base_sec=0.1))
    engine = make_engine(
        tmp_path / "jobs", tasks_dir, environment, concurrency=concurrency, **options
    )
    async with (
        serve(create_app(engine, script_dir=tmp_path)) as url,
        httpx.AsyncClient(base_url=url, timeout=timeout) as client,
    ):
        yield client


async def run_rows(
    engine: Engine,
    jobs: Path,
    task_ids: list[str],
    agent: str,
    task_set: str = "test-tasks",
    config: dict[str, Any] | None = None,
) -> list[tuple[dict[str, Any], dict[str, Any], Path]]:
    """One run of ``agent`` over ``task_ids`` on a started engine, waited for: each trial's
    public row, its ``result.json`` and its folder. ``config``: over the default config."""
    request = RunRequest(
        config={"condition": "with_skills", **(config or {})},
        task_set=task_set,
        task_set_digest="sha256:" + "0" * 64,
        tasks=[RunTask(task_id=t) for t in task_ids],
        agent=agent,
    )
    run = await engine.wait((await engine.submit(request)).run_id)
    done = []
    for row in run.rows():
        folder = jobs / "runs" / run.run_id / "trials" / row["trial_id"]
        done.append((row, json.loads((folder / "result.json").read_text()), folder))
    return done
