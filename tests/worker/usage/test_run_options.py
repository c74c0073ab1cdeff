"""``run``'s usage options through the real dispatcher: the cost line, and bad input refused with
one line on stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.worker.usage.support import AGENTS_DIR, make_task


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    tasks = tmp_path / "tasks"
    if not tasks.exists():
        tasks.mkdir()
        make_task(tasks, "answer-42")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_AGENTS_DIR")}
    env["SKILLSBENCH_AGENTS_DIR"] = str(AGENTS_DIR)
    return subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", "run", "--tasks-dir", str(tasks),
         "--task-id", "answer-42", "--jobs-dir", str(tmp_path / "jobs"), *args],
        capture_output=True, text=True, timeout=180, env=env,
    )  # fmt: skip


def test_an_agent_without_a_model_says_no_tokens_were_used(tmp_path: Path) -> None:
    done = _run(tmp_path, "--agent", "nop", "--usage-tracking", "required")
    assert done.returncode == 0, done.stderr
    assert "Cost: none: no model tokens were used" in done.stdout


def test_a_model_agent_without_a_model_is_refused_up_front(tmp_path: Path) -> None:
    done = _run(tmp_path, "--agent", "model-acp-agent")
    assert done.returncode != 0
    assert "has no default model; pass --model (-m)" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "jobs" / "runs").exists()


def test_bad_agent_env_and_caps_are_refused(tmp_path: Path) -> None:
    bad_env = _run(tmp_path, "--agent", "nop", "--agent-env", "NO_EQUALS_SIGN")
    assert bad_env.returncode == 2
    assert "NAME=VALUE" in bad_env.stderr
    bad_cap = _run(tmp_path, "--agent", "nop", "--max-tokens", "0")
    assert bad_cap.returncode == 2
    assert "--max-tokens" in bad_cap.stderr
    bad_cost = _run(tmp_path, "--agent", "nop", "--max-cost-usd", "0")
    assert bad_cost.returncode == 2
    bad_tracking = _run(tmp_path, "--agent", "nop", "--usage-tracking", "sometimes")
    assert bad_tracking.returncode == 2
