"""The agent under test solves an example task through the worker's a2a bridge and a real sandbox."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from pydantic import SecretStr
from worker_acp import harness

from purple_agent.agent_under_test import create_app
from purple_agent.config import AgentConfig
from worker.agents import a2a

from .support import FakeModel, serving


@pytest.mark.parametrize("kind", ["minimal", "cli-command", "cli-missing"])
async def test_agent_under_test_through_the_bridge(kind: str, tmp_path: Path) -> None:
    model = FakeModel(
        [{"shell": "ls -la"}, {"shell": "echo 42 > answer.txt"}, {"text": "Wrote 42."}]
    )
    async with serving(lambda _url: model.app()) as model_url:
        config = {
            "minimal": AgentConfig(
                harness="minimal",
                model="openai/fake-model",
                base_url=f"{model_url}/v1",
                api_key=SecretStr("sk-test-bridge-0123456789"),
            ),
            "cli-command": AgentConfig(harness="codex", command="echo 42 > answer.txt"),
            "cli-missing": AgentConfig(harness="codex"),
        }[kind]
        async with serving(lambda url: create_app(config, url)) as url:
            result = await harness.run_trial(a2a.A2AAgent(f"a2a:{url}"), tmp_path)
    if kind == "cli-missing":
        assert result.outcome.failure == "participant_error"
        assert "harness 'codex' is not installed" in (result.outcome.message or "")
        assert result.reward == 0.0
        return
    assert result.outcome.failure is None, result.outcome.message
    assert result.reward == 1.0
    if kind == "minimal":
        calls = [(c["kind"], c["title"]) for c in result.tool_calls()]
        assert calls == [("execute", "ls -la"), ("execute", "echo 42 > answer.txt")]
        assert len(model.requests) == 3
    else:
        assert result.outcome.details["bridge"]["written_files"] == ["/root/answer.txt"]


async def test_cancelled_trial_stops_the_harness_cli(tmp_path: Path) -> None:
    """A cancelled trial makes the bridge cancel the open A2A task; the harness kills its CLI."""
    pid_file = tmp_path / "cli.pid"
    config = AgentConfig(harness="codex", command=f"echo $$ > {pid_file}; exec sleep 120")
    async with serving(lambda url: create_app(config, url)) as url:
        agent = a2a.A2AAgent(f"a2a:{url}")
        trial = asyncio.create_task(harness.run_trial(agent, tmp_path, timeout_sec=60))
        for _ in range(400):
            if pid_file.exists() and pid_file.read_text().strip():
                break
            await asyncio.sleep(0.05)
        pid = int(pid_file.read_text())
        trial.cancel()
        with pytest.raises(asyncio.CancelledError):
            await trial
        for _ in range(100):  # the kill follows the cancel at once; allow for a loaded machine
            if not _alive(pid):
                break
            await asyncio.sleep(0.05)
        assert not _alive(pid), "the harness CLI outlived the cancelled trial"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
