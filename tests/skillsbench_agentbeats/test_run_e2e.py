"""End to end through the worker's own engine: ``skillsbench-agentbeats run`` with an a2a
participant and with a manifest agent, in the local sandbox, rows and trial files checked."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from tests.support import REPO_ROOT, TEST_AGENTS, free_port
from tests.worker.support import TASKS, agent_python, run_cli, served, trial_file

REPO = REPO_ROOT
EXAMPLE = REPO / "docs" / "examples" / "csv_sales_purple.py"
OUR_TASKS = TASKS  # tests/worker/tasks


def test_a2a_participant_through_the_worker(tmp_path: Path) -> None:
    argv = lambda port: [sys.executable, str(EXAMPLE), str(port)]  # noqa: E731
    with served(argv, {"PATH": "/usr/bin:/bin"}) as url:
        done, rows = run_cli(
            tmp_path, "--tasks-dir", str(REPO / "tasks"), "--task-id", "csv-sales-summary",
            "--agent", f"a2a:{url}", "--expect", "passed",
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [row] = rows
    assert (row["task_name"], row["passed"], row["infra_failure_type"]) == (
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
    # The refused connection was retried before the trial was classified, and result.json says so.
    bridge = row["agent_result"]["details"]["bridge"]
    assert bridge["n_retries"] == 3, bridge
    assert [r["attempt"] for r in bridge["retries"]] == [1, 2, 3]
    # The verifier still graded what the agent left (nothing), without scoring the row.
    assert row["verifier_reward"] == 0.0 and row["reward_source"] is not None
    assert trial_file(tmp_path, "test-stdout.txt").exists()


def test_manifest_agent_through_the_worker(tmp_path: Path) -> None:
    env = {"SKILLSBENCH_AGENTS_DIR": str(TEST_AGENTS), **agent_python()}
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


def test_a_broken_manifest_beside_the_agent_spoils_only_itself(tmp_path: Path) -> None:
    """Issue #32: one broken manifest.toml in the agents dir made every manifest agent fail; and
    an unknown key in the agent's own manifest is warned about by name, not dropped silently."""
    agents = tmp_path / "agents"
    shutil.copytree(TEST_AGENTS / "py-acp-agent", agents / "py-acp-agent")
    manifest = agents / "py-acp-agent" / "manifest.toml"
    manifest.write_text(manifest.read_text() + "instal_timeout = 5\n")
    (agents / "torn").mkdir()
    (agents / "torn" / "manifest.toml").write_text('name = "torn"\nlaunch_cmd = [\n')
    env = {"SKILLSBENCH_AGENTS_DIR": str(agents), **agent_python()}
    done, rows = run_cli(
        tmp_path, "--tasks-dir", str(OUR_TASKS), "--task-id", "write-answer",
        "--agent", "py-acp-agent", "--expect", "passed", env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert [row["passed"] for row in rows] == [True]
    assert "unknown keys ignored: instal_timeout (did you mean install_timeout?)" in done.stderr, (
        done.stderr
    )
