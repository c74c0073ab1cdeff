"""The run's model over ACP, as BenchFlow sends it (issue #24 item 2): ``session/set_model`` with
the name shaped per ``acp_model_format`` (or the agent's ``model`` session config option), none
when the manifest says ``supports_acp_set_model = false``; a refusal ends the trial with a clear
reason. Driven against the real test agent (tests/agents/py-acp-agent) in the local sandbox."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support import TEST_AGENTS
from tests.worker.support import agent_python, run_trial
from worker.acp.agent_manifest import find
from worker.agents.acp import ManifestAgent
from worker.core.failures import FailureKind


def _env(model_mode: str) -> dict[str, str]:
    return {**agent_python(), "PY_ACP_AGENT_MODEL_MODE": model_mode}


def _agent(tmp_path: Path, extra: str = "") -> ManifestAgent:
    agents = tmp_path / "agents"
    shutil.copytree(TEST_AGENTS / "py-acp-agent", agents / "py-acp-agent")
    if extra:
        manifest = agents / "py-acp-agent" / "manifest.toml"
        manifest.write_text(manifest.read_text() + extra + "\n")
    entry = find("py-acp-agent", {"SKILLSBENCH_AGENTS_DIR": str(agents)})
    return ManifestAgent("py-acp-agent", entry)


def _messages(result: object) -> list[str]:
    return [e["text"] for e in result.trajectory() if e["type"] == "agent_message"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("fmt", "sent"),
    [
        (None, "gpt-4o-mini"),  # "bare", BenchFlow's default
        ('"provider/model"', "openai/gpt-4o-mini"),
        ('"registered-provider/model"', "openai/gpt-4o-mini"),
    ],
)
async def test_model_is_sent_with_set_model_in_the_manifests_format(
    tmp_path: Path, fmt: str | None, sent: str
) -> None:
    extra = f"acp_model_format = {fmt}" if fmt else ""
    result = await run_trial(
        _agent(tmp_path, extra), tmp_path, env=_env("set_model"), model="openai/gpt-4o-mini"
    )
    assert result.outcome.failure is None, result.outcome.message
    assert result.reward == 1.0, result.verifier
    assert _messages(result)[0] == f"model: {sent} via session/set_model"
    selection = result.outcome.details["model_selection"]
    assert selection == {"method": "session/set_model", "model_id": sent, "accepted": True}
    # What the agent called itself in initialize: result.json's agent_name (BenchFlow's).
    assert result.outcome.details["agent_info"] == {"name": "py-acp-agent", "version": "0.1"}
    [event] = [e for e in result.trajectory() if e["type"] == "set_model"]
    assert event["accepted"] is True and event["model_id"] == sent


async def test_a_model_config_option_is_used_when_the_agent_advertises_one(
    tmp_path: Path,
) -> None:
    result = await run_trial(
        _agent(tmp_path), tmp_path, env=_env("option"), model="anthropic/claude-sonnet-4-5"
    )
    assert result.outcome.failure is None, result.outcome.message
    assert _messages(result)[0] == "model: claude-sonnet-4-5 via session/set_config_option"
    assert result.outcome.details["model_selection"]["method"] == "session/set_config_option"


async def test_a_refused_model_is_a_clear_protocol_failure_not_a_silent_default(
    tmp_path: Path,
) -> None:
    result = await run_trial(
        _agent(tmp_path), tmp_path, env=_env("refuse"), model="openai/gpt-4o-mini"
    )
    assert result.outcome.failure is FailureKind.AGENT_PROTOCOL
    message = result.outcome.message or ""
    assert message.startswith("agent refused model 'gpt-4o-mini' (session/set_model): ")
    assert "unknown model" in message
    assert result.outcome.details["model_selection"]["accepted"] is False
    assert not [e for e in result.trajectory() if e["type"] == "tool_call"]  # never prompted


async def test_an_agent_without_set_model_is_refused_with_the_manifest_hint(
    tmp_path: Path,
) -> None:
    result = await run_trial(
        _agent(tmp_path), tmp_path, env=_env("absent"), model="openai/gpt-4o-mini"
    )
    assert result.outcome.failure is FailureKind.AGENT_PROTOCOL
    assert "supports_acp_set_model = false" in (result.outcome.message or "")


async def test_supports_acp_set_model_false_sends_no_model_and_says_so(tmp_path: Path) -> None:
    agent = _agent(tmp_path, "supports_acp_set_model = false")
    result = await run_trial(agent, tmp_path, env=_env("absent"), model="openai/gpt-4o-mini")
    assert result.outcome.failure is None, result.outcome.message
    assert result.reward == 1.0, result.verifier
    assert _messages(result) == ["ran 2 commands"]  # the agent got no model over ACP
    selection = result.outcome.details["model_selection"]
    assert selection["method"] is None and selection["accepted"] is None
    assert "supports_acp_set_model = false" in selection["note"]
    assert not [e for e in result.trajectory() if e["type"] == "set_model"]


async def test_no_model_given_sends_none(tmp_path: Path) -> None:
    result = await run_trial(_agent(tmp_path), tmp_path, env=_env("refuse"))
    assert result.outcome.failure is None, result.outcome.message
    assert "model_selection" not in result.outcome.details
