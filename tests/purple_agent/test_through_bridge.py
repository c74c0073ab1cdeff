"""The agent under test solves an example task through the worker's a2a bridge and a real sandbox."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from pydantic import SecretStr

from purple_agent.agent_under_test import create_app
from purple_agent.config import AgentConfig
from tests.purple_agent.support import FakeModel, serving
from tests.worker import support as harness
from worker.agents import a2a


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
    """A cancelled trial makes the bridge cancel the open A2A task; the harness kills its CLI
    (found by a unique argument: in its own PID namespace, the CLI's pid is not ours)."""
    started = tmp_path / "cli.started"
    marker = f"{os.getpid() % 1000}.{id(started) % 100000}"
    config = AgentConfig(harness="codex", command=f"touch {started}; exec sleep {marker}")
    async with serving(lambda url: create_app(config, url)) as url:
        agent = a2a.A2AAgent(f"a2a:{url}")
        trial = asyncio.create_task(harness.run_trial(agent, tmp_path, timeout_sec=60))
        for _ in range(400):
            if started.exists() and _running(marker):
                break
            await asyncio.sleep(0.05)
        assert _running(marker), "the harness CLI did not start"
        trial.cancel()
        with pytest.raises(asyncio.CancelledError):
            await trial
        for _ in range(100):  # the kill follows the cancel at once; allow for a loaded machine
            if not _running(marker):
                break
            await asyncio.sleep(0.05)
        assert not _running(marker), "the harness CLI outlived the cancelled trial"


def _running(marker: str) -> bool:
    """Whether a ``sleep MARKER`` process is alive on this host."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[:2] == [b"sleep", marker.encode()]:
                return True
    return False
