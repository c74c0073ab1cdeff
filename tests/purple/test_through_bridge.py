"""The agent under test solves an example task through the worker's a2a bridge and a real sandbox.

Skipped until the bridge (``worker.agents.a2a``) and its trial test harness are in the tree.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from purple_agent.agent_under_test import create_app
from purple_agent.config import AgentConfig

from .support import FakeModel, serving

a2a = pytest.importorskip("worker.agents.a2a", reason="the a2a bridge is not in this tree yet")
harness = pytest.importorskip("worker_acp.harness", reason="the bridge's trial harness is absent")


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
