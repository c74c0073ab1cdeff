"""The project's own agent-under-test participant (minimal harness, fake model on loopback)
solving an example task through the bridge, end to end."""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from purple_agent.agent_under_test import create_app, make_agent
from purple_agent.config import AgentConfig
from tests.purple_agent.support import FakeModel, serving
from tests.worker.support import run_trial
from worker.agents.a2a import A2AAgent
from worker.core.failures import FailureKind

KEY = "sk-test-bridge-0123456789abcdef"
pytestmark = pytest.mark.slow  # litellm takes seconds to import


@pytest.fixture(scope="module", autouse=True)
def litellm_imported() -> None:
    """Import litellm before the trial: its import blocks the event loop for many seconds on a
    busy machine, which would eat the participant's time (the agent imports it on first use)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    importlib.import_module("litellm")


async def run_with_model(tmp_path: Path, script: list[dict[str, Any]]) -> Any:
    model = FakeModel(script)
    async with serving(lambda _url: model.app()) as model_url:
        cfg = AgentConfig(
            harness="minimal",
            model="openai/fake-model",
            base_url=f"{model_url}/v1",
            api_key=SecretStr(KEY),
        )
        agent = make_agent(cfg)
        async with serving(lambda url: create_app(cfg, url, agent)) as agent_url:
            return model, await run_trial(A2AAgent(f"a2a:{agent_url}"), tmp_path)


async def test_minimal_participant_solves_the_task(tmp_path: Path) -> None:
    model, result = await run_with_model(
        tmp_path, [{"shell": "ls -la"}, {"shell": "echo 42 > answer.txt"}, {"text": "Wrote 42."}]
    )
    assert result.outcome.failure is None, result.outcome.message
    assert result.reward == 1.0, result.verifier
    assert [c["title"] for c in result.tool_calls()] == ["ls -la", "echo 42 > answer.txt"]
    assert len(model.requests) == 3
    # The model saw the real output of `ls -la` run in the sandbox's workspace.
    assert "exit code: 0" in model.requests[1]["messages"][-1]["content"]
    messages = [e["text"] for e in result.trajectory() if e["type"] == "agent_message"]
    assert messages == ["Wrote 42."]


async def test_model_failure_is_participant_error_without_the_key(tmp_path: Path) -> None:
    _, result = await run_with_model(
        tmp_path, [{"status": 401, "error": f"Incorrect API key provided: {KEY}"}]
    )
    assert result.outcome.failure is FailureKind.PARTICIPANT_ERROR
    assert "model call failed" in (result.outcome.message or "")
    for path in result.trial_dir.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path
    events = [
        json.loads(line)
        for line in (result.trial_dir / "trajectory" / "a2a_trajectory.jsonl")
        .read_text()
        .splitlines()
    ]
    assert events[-1]["type"] == "a2a_error"
