"""Runs end to end over loopback HTTP on the local sandbox: oracle/nop, trial folders, events,
skills, agent timeouts, sandbox failures, cancellation, private proof."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from leaderboard.rows import BASE_ROW_KEYS, PublicRow
from tests.worker.support import (
    make_engine,
    make_task,
    process_cmdlines_containing,
    run_payload,
    script,
    serve,
    submit_and_follow,
)
from worker.api import RunRequest
from worker.core.failures import RetryPolicy
from worker.runs.engine import Engine, EngineSettings
from worker.runs.meta import ProofSettings
from worker.sandbox._bubblewrap import BubblewrapSandbox
from worker.sandbox.base import SandboxError, sandbox_backend, unregister_backend
from worker.service.app import create_app


@pytest.fixture
def tasks_dir(tmp_path: Path) -> Path:
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    make_task(tasks, "answer-42")
    make_task(tasks, "answer-42-b", instruction="FAST: write 42 to /root/answer.txt.")
    make_task(
        tasks,
        "with-skill",
        skills={"answering": "---\nname: answering\n---\nThe answer is 42.\n"},
    )
    make_task(tasks, "slow-agent", agent_timeout=2)
    make_task(tasks, "needs-docker", dockerfile="FROM python:3.11-slim\nRUN apt-get update\n")
    make_task(tasks, "broken-copy", dockerfile="FROM python:3.11-slim\nCOPY missing.txt /root/\n")
    toml = make_task(tasks, "verifier-user") / "task.toml"
    toml.write_text(toml.read_text().replace("[verifier]\n", '[verifier]\nuser = "nobody"\n'))
    return tasks


def _engine(tmp_path: Path, tasks_dir: Path, concurrency: int = 2) -> Engine:
    jobs = tmp_path / "jobs"
    return make_engine(
        jobs,
        tasks_dir,
        "local",
        concurrency=concurrency,
        retry=RetryPolicy(max_attempts=2, backoff_base_sec=0.1),
        env={"SKILLSBENCH_WORKER_REVISION": "rev-1"},
    )


@pytest.fixture
async def http(tmp_path: Path, tasks_dir: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with (
        serve(create_app(_engine(tmp_path, tasks_dir), script_dir=tmp_path)) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        yield client


def _trial_dir(tmp_path: Path, run_id: str, trial_id: str) -> Path:
    return tmp_path / "jobs" / "runs" / run_id / "trials" / trial_id


async def test_oracle_passes_and_leaves_a_complete_trial_folder(
    http: httpx.AsyncClient, tmp_path: Path
) -> None:
    run_id, events, status = await submit_and_follow(
        http, run_payload(["answer-42", "answer-42-b"], agent="oracle")
    )
    names = [name for name, _ in events]
    assert names[0] == "status" and names[-1] == "end"
    assert names.count("row") == 2  # one event per finished trial
    assert status["status"] == "completed"
    assert status["progress"] == {"total": 2, "finished": 2, "running": 0, "passed": 2}
    rows = status["rows"]
    assert [r["task_id"] for r in rows] == ["answer-42", "answer-42-b"]
    for row in rows:
        assert tuple(row) == BASE_ROW_KEYS  # the oracle calls no model: no usage keys
        PublicRow(**row)
        assert row["passed"] and row["reward"] == 1.0 and row["score_eligible"]
        assert row["agent_transport"] == "oracle" and row["time_used"] > 0
        folder = _trial_dir(tmp_path, run_id, row["trial_id"])
        for name in (
            "config.json",
            "result.json",
            "timing.json",
            "trajectory/acp_trajectory.jsonl",
        ):
            assert (folder / name).is_file(), name
        assert (folder / "verifier" / "reward.txt").read_text().strip() == "1"
        assert "[exit 0]" in (folder / "agent" / "oracle.txt").read_text()
        result = json.loads((folder / "result.json").read_text())
        assert result["reward"] == 1.0 and result["failure"] is None
        timing = json.loads((folder / "timing.json").read_text())
        # A pass is graded again on a fresh sandbox: the regrade stops the agent's sandbox and
        # its own (its time is the regrade's, not a teardown's).
        assert {"environment_setup", "agent_execution", "verifier", "regrade"} <= set(timing)
        assert row["time_used"] == pytest.approx(
            timing["agent_execution"] + timing["verifier"], abs=0.01
        )
        events_in_trajectory = [
            json.loads(line)
            for line in (folder / "trajectory/acp_trajectory.jsonl").read_text().splitlines()
        ]
        calls = [e for e in events_in_trajectory if e["type"] == "tool_call"]
        assert len(calls) == 1 and calls[0]["kind"] == "execute" and "solve.sh" in calls[0]["title"]
        assert any(
            e["type"] == "tool_call_update" and e["status"] == "completed"
            for e in events_in_trajectory
        )
    meta = status["worker_meta"]
    assert meta["worker_revision"] == "rev-1" and meta["benchflow_revision"] is None
    assert meta["task_set_digest"] == rows[0]["task_set_digest"]
    # private proof
    manifest_uri = status["_private_proof_manifest"]
    assert manifest_uri == f"local://agentbeats-private-proof/{run_id}/proof.json"
    proof_dir = tmp_path / "jobs" / "private-proof" / run_id
    proof = json.loads((proof_dir / "proof.json").read_text())
    assert proof["schema_version"] == "skillsbench.agentbeats.private_proof.v1"
    assert proof["public_rows"] == rows
    assert {ref["trial_id"] for ref in status["_private_proof_refs"]} == {
        r["trial_id"] for r in rows
    }
    for item in proof["copied_artifacts"]:
        assert (proof_dir / item["relative_path"]).is_file()
    copied = {item["relative_path"].split("/", 2)[2] for item in proof["copied_artifacts"]}
    assert {"trial_result.json", "trajectory/acp_trajectory.jsonl", "verifier/reward.txt"} <= copied
    assert not list(proof_dir.rglob("result.json"))  # no proof copy passes for a trial


async def test_nop_fails_every_task(http: httpx.AsyncClient) -> None:
    _, _, status = await submit_and_follow(http, run_payload(["answer-42", "answer-42-b"]))
    for row in status["rows"]:
        assert row["score_eligible"] and not row["passed"] and row["reward"] == 0.0
        assert row["agent_transport"] == "nop"


async def test_num_instances_gives_one_row_per_instance(http: httpx.AsyncClient) -> None:
    _, _, status = await submit_and_follow(
        http, run_payload(["answer-42"], agent="oracle", num_instances=3)
    )
    assert sorted(status["tasks"]) == ["answer-42#0", "answer-42#1", "answer-42#2"]
    assert len({row["trial_id"] for row in status["rows"]}) == 3


async def test_skills_are_placed_and_announced(http: httpx.AsyncClient, tmp_path: Path) -> None:
    agent = script(
        tmp_path,
        "uses-skill",
        'grep -q "/skills" /instruction.md && [ "$SKILLSBENCH_SKILLS_DIR" = /skills ] '
        "&& grep -q 'answer is 42' /skills/answering/SKILL.md && echo 42 > /root/answer.txt\n",
    )
    _, _, status = await submit_and_follow(http, run_payload(["with-skill"], agent=agent))
    assert status["rows"][0]["passed"], status
    _, _, status = await submit_and_follow(
        http, run_payload(["with-skill"], agent=agent, condition="without_skills")
    )
    row = status["rows"][0]
    assert not row["passed"] and row["has_skills"] is False


async def test_agent_timeout_is_scored_and_not_retried(
    http: httpx.AsyncClient, tmp_path: Path
) -> None:
    agent = script(tmp_path, "sleeper", "echo 42 > /root/answer.txt.partial; sleep 30\n")
    started = time.monotonic()
    run_id, _, status = await submit_and_follow(http, run_payload(["slow-agent"], agent=agent))
    assert time.monotonic() - started < 25
    row = status["rows"][0]
    assert row["score_eligible"] and row["reward"] == 0.0 and row["infra_failure_type"] is None
    result = json.loads((_trial_dir(tmp_path, run_id, row["trial_id"]) / "result.json").read_text())
    assert result["failure"] == "agent_timeout" and result["attempt"] == 1


async def test_unsupported_environment_is_a_sandbox_error(
    http: httpx.AsyncClient, tmp_path: Path
) -> None:
    run_id, _, status = await submit_and_follow(http, run_payload(["needs-docker"], agent="oracle"))
    row = status["rows"][0]
    assert not row["score_eligible"] and row["infra_failure_type"] == "sandbox_error"
    result = json.loads((_trial_dir(tmp_path, run_id, row["trial_id"]) / "result.json").read_text())
    assert "docker" in result["error"]
    assert (tmp_path / "jobs" / "private-proof" / run_id / "needs-docker").is_dir()


async def test_what_the_backend_cannot_do_is_not_retried(
    http: httpx.AsyncClient, tmp_path: Path
) -> None:
    run_id, _, status = await submit_and_follow(
        http, run_payload(["verifier-user"], agent="oracle")
    )
    row = status["rows"][0]
    assert row["infra_failure_type"] == "sandbox_error" and not row["score_eligible"]
    stored = json.loads((tmp_path / "jobs" / "runs" / run_id / "run.json").read_text())
    (attempt,) = stored["trials"]["verifier-user#0"]["attempts"]
    assert attempt["failure"] == "sandbox_unsupported" and "nobody" in attempt["error"]


async def test_a_broken_build_is_not_retried(http: httpx.AsyncClient, tmp_path: Path) -> None:
    run_id, _, status = await submit_and_follow(http, run_payload(["broken-copy"], agent="oracle"))
    row = status["rows"][0]
    assert not row["score_eligible"] and row["infra_failure_type"] == "sandbox_error"
    stored = json.loads((tmp_path / "jobs" / "runs" / run_id / "run.json").read_text())
    (attempt,) = stored["trials"]["broken-copy#0"]["attempts"]
    assert attempt["failure"] == "sandbox_build" and "missing.txt" in attempt["error"]


class _FlakyLocal(BubblewrapSandbox):
    """The local sandbox, except that the first start of each task fails the way an engine that
    answered 503 does (nothing real fails transiently on demand)."""

    failed: ClassVar[set[str]] = set()

    async def start(self) -> None:
        key = f"{self.spec.run_id}/{self.spec.config.task_id}"
        if key not in self.failed:
            self.failed.add(key)
            raise SandboxError("503 Server Error: the engine is busy")
        await super().start()


@pytest.fixture
def flaky_local() -> Iterator[None]:
    """The flaky backend, registered for one test (the registry is left as it was)."""
    sandbox_backend("flaky-local")(_FlakyLocal)
    try:
        yield
    finally:
        unregister_backend("flaky-local")


async def test_transient_failures_are_retried_with_fresh_trial_ids(
    tmp_path: Path, tasks_dir: Path, flaky_local: None
) -> None:
    jobs = tmp_path / "jobs"
    engine = Engine(
        EngineSettings(
            jobs_dir=jobs,
            tasks_dir=tasks_dir,
            environment="flaky-local",
            retry=RetryPolicy(max_attempts=2, backoff_base_sec=0.1),
            proof=ProofSettings.from_env(jobs, {}),
        )
    )
    await engine.start(resume=False)
    try:
        run = await engine.submit(RunRequest.model_validate(run_payload(["answer-42"], "oracle")))
        run = await asyncio.wait_for(engine.wait(run.run_id), 120)
    finally:
        await engine.close()
    trial = run.trials["answer-42#0"]
    assert [a.outcome for a in trial.attempts] == ["retried", "finished"]
    assert trial.attempts[0].failure == "sandbox_start" and "503" in (trial.attempts[0].error or "")
    assert trial.attempts[1].failure is None
    assert len({a.trial_id for a in trial.attempts}) == 2
    assert trial.row is not None and trial.row["passed"]
    assert trial.row["trial_id"] == trial.attempts[-1].trial_id


async def test_cancel_mid_run_keeps_finished_rows_and_leaves_nothing_behind(
    http: httpx.AsyncClient, tmp_path: Path
) -> None:
    marker = f"31{int(time.time() * 1000) % 100000:05d}"
    agent = script(
        tmp_path,
        "slow-unless-fast",
        f"if grep -q FAST /instruction.md; then echo 42 > /root/answer.txt; exit 0; fi\nsleep {marker}\n",
    )
    response = await http.post(
        "/runs", json=run_payload(["answer-42-b", "answer-42", "with-skill"], agent=agent)
    )
    run_id = response.json()["run_id"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = (await http.get(f"/runs/{run_id}")).json()
        if status["progress"]["finished"] >= 1 and process_cmdlines_containing(f"sleep {marker}"):
            break
        await asyncio.sleep(0.1)
    else:
        pytest.fail(f"run never reached a finished + a sleeping trial: {status}")
    started = time.monotonic()
    response = await http.post(f"/runs/{run_id}/cancel")
    assert response.status_code == 200
    assert time.monotonic() - started < 10
    status = response.json()
    assert status["status"] == "cancelled"
    rows = {row["task_id"]: row for row in status["rows"]}
    assert len(status["rows"]) == 3
    assert rows["answer-42-b"]["passed"]  # finished before the cancel: kept
    for task_id in ("answer-42", "with-skill"):
        assert rows[task_id]["infra_failure_type"] == "worker_cancelled"
        assert not rows[task_id]["score_eligible"]
    await asyncio.sleep(0.5)
    assert process_cmdlines_containing(f"sleep {marker}") == []
    again = await http.post(f"/runs/{run_id}/cancel")
    assert again.json()["rows"] == status["rows"]  # idempotent


async def test_events_of_a_finished_run_replay_rows(http: httpx.AsyncClient) -> None:
    run_id, first, _ = await submit_and_follow(http, run_payload(["answer-42"], agent="oracle"))
    async with http.stream("GET", f"/runs/{run_id}/events") as stream:
        body = (await stream.aread()).decode()
    assert body.count("event: row") == 1 and body.rstrip().splitlines()[-2] == "event: end"
    rows = [data for name, data in first if name == "row"]
    assert rows[0]["row"]["task_id"] == "answer-42"


def _row_of(status: dict[str, Any]) -> dict[str, Any]:
    (row,) = status["rows"]
    return dict(row)
