"""End to end through the worker's own engine: ``skillsbench-agentbeats run`` with an a2a
participant and with a manifest agent, in the local sandbox, rows and trial files checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support import REPO_ROOT, free_port
from tests.worker.acp.test_manifest_agent import AGENTS_DIR, agent_python
from tests.worker.support import TASKS, served

REPO = REPO_ROOT
EXAMPLE = REPO / "docs" / "examples" / "csv_sales_purple.py"
OUR_TASKS = TASKS  # tests/worker/tasks


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


def test_a2a_participant_through_the_worker(tmp_path: Path) -> None:
    argv = lambda port: [sys.executable, str(EXAMPLE), str(port)]  # noqa: E731
    with served(argv, {"PATH": "/usr/bin:/bin"}) as url:
        done, rows = run_cli(
            tmp_path, "--tasks-dir", str(REPO / "tasks"), "--task-id", "csv-sales-summary",
            "--agent", f"a2a:{url}", "--expect", "passed",
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [row] = rows
    assert (row["task_id"], row["passed"], row["infra_failure_type"]) == (
        "csv-sales-summary",
        True,
        None,
    )
    events = trial_file(tmp_path, "acp_trajectory.jsonl").read_text().splitlines()
    calls = [e for e in map(json.loads, events) if e["type"] == "tool_call"]
    assert [c["kind"] for c in calls] == ["read", "edit"]
    assert "[agentbeats-a2a]" in trial_file(tmp_path, "agentbeats_a2a.txt").read_text()
    assert trial_file(tmp_path, "a2a_trajectory.jsonl").stat().st_size > 0


def test_unreachable_participant_row(tmp_path: Path) -> None:
    done, rows = run_cli(
        tmp_path, "--tasks-dir", str(REPO / "tasks"), "--task-id", "csv-sales-summary",
        "--agent", f"a2a:http://127.0.0.1:{free_port()}",
    )  # fmt: skip
    [row] = rows
    assert row["infra_failure_type"] == "participant_communication", done.stdout + done.stderr
    assert row["score_eligible"] is False and row["passed"] is False
    # The verifier still graded what the agent left (nothing), without scoring the row.
    assert row["verifier_reward"] == 0.0 and row["reward_source"] is not None
    assert trial_file(tmp_path, "test-stdout.txt").exists()


def test_manifest_agent_through_the_worker(tmp_path: Path) -> None:
    env = {"SKILLSBENCH_AGENTS_DIR": str(AGENTS_DIR), **agent_python()}
    done, rows = run_cli(
        tmp_path, "--tasks-dir", str(OUR_TASKS), "--task-id", "write-answer",
        "--agent", "py-acp-agent", "--expect", "passed", env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [row] = rows
    assert row["passed"] is True and row["infra_failure_type"] is None
    assert row["agent_kind"] == "acp"
    events = trial_file(tmp_path, "acp_trajectory.jsonl").read_text().splitlines()
    titles = [e["title"] for e in map(json.loads, events) if e["type"] == "tool_call"]
    assert titles == ["ls -la", "echo 42 > answer.txt"]
    assert trial_file(tmp_path, "py_acp_agent.txt").exists()  # the agent's stderr log
