"""Manifest agents: a Python ACP agent (tests/agents/py-acp-agent) installed from its manifest
and launched inside the bubblewrap sandbox, driven by the worker's ACP client."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from worker.acp.manifest import ManifestError, discover, find
from worker.agents.acp import ManifestAgent
from worker.failures import FailureKind
from worker_acp.harness import run_trial

AGENTS_DIR = Path(__file__).resolve().parent.parent / "agents"


@pytest.fixture(autouse=True)
def agents_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLSBENCH_AGENTS_DIR", str(AGENTS_DIR))
    monkeypatch.delenv("BENCHFLOW_AGENTS_DIR", raising=False)


def agent_env(mode: str = "run") -> dict[str, str]:
    return {"PY_ACP_AGENT_PYTHON": sys.executable, "PY_ACP_AGENT_MODE": mode}


async def test_manifest_agent_passes_example_task(tmp_path: Path) -> None:
    result = await run_trial(ManifestAgent("acp:py-acp-agent"), tmp_path, env=agent_env())
    assert result.outcome.status == "completed", result.outcome.message
    assert result.outcome.failure is None
    assert result.reward == 1.0
    calls = result.tool_calls()
    assert [c["title"] for c in calls] == ["ls -la", "echo 42 > answer.txt"]
    assert all(c["kind"] == "execute" for c in calls)
    updates = [e for e in result.trajectory() if e["type"] == "tool_call_update"]
    assert [u["status"] for u in updates] == ["completed", "completed"]
    assert (
        "answer.txt" not in updates[0]["content"][0]["content"]["text"]
    )  # ls ran before the write
    messages = [e["text"] for e in result.trajectory() if e["type"] == "agent_message"]
    assert messages == ["ran 2 commands"]
    assert result.trajectory()[0]["type"] == "user_message"
    assert result.outcome.n_tool_calls == 2
    install_log = result.trial_dir / "agent" / "install-stdout.txt"
    assert install_log.exists()


async def test_chatty_stderr_is_drained_not_deadlocked(tmp_path: Path) -> None:
    result = await run_trial(ManifestAgent("acp:py-acp-agent"), tmp_path, env=agent_env("chatty"))
    assert result.outcome.status == "completed", result.outcome.message
    assert result.reward == 1.0
    log = result.trial_dir / "agent" / "py_acp_agent.txt"
    assert log.stat().st_size == 2 << 20


async def test_unknown_client_method_answers_method_not_found(tmp_path: Path) -> None:
    result = await run_trial(ManifestAgent("acp:py-acp-agent"), tmp_path, env=agent_env("probe"))
    messages = [e["text"] for e in result.trajectory() if e["type"] == "agent_message"]
    assert messages == ["probe: error -32601"]


async def test_wall_clock_timeout_sends_cancel_and_agent_stops(tmp_path: Path) -> None:
    result = await run_trial(
        ManifestAgent("acp:py-acp-agent"), tmp_path, env=agent_env("slow"), timeout_sec=1.5
    )
    assert result.outcome.status == "timeout"
    assert result.outcome.failure is FailureKind.AGENT_TIMEOUT
    kinds = [e["type"] for e in result.trajectory()]
    assert "cancel_sent" in kinds
    assert result.reward == 0.0  # the verifier still ran


async def test_agent_ignoring_cancel_is_killed_after_grace(tmp_path: Path) -> None:
    result = await run_trial(
        ManifestAgent("acp:py-acp-agent"), tmp_path, env=agent_env("ignore-cancel"), timeout_sec=1
    )
    assert result.outcome.failure is FailureKind.AGENT_TIMEOUT
    assert result.reward == 0.0


async def test_agent_crash_is_a_launch_failure(tmp_path: Path) -> None:
    result = await run_trial(ManifestAgent("acp:py-acp-agent"), tmp_path, env=agent_env("crash"))
    assert result.outcome.status == "failed"
    assert result.outcome.failure is FailureKind.AGENT_LAUNCH
    assert result.reward == 0.0


def test_manifest_discovery_reports_unknown_keys(tmp_path: Path) -> None:
    folder = tmp_path / "agents" / "typo-agent"
    folder.mkdir(parents=True)
    (folder / "manifest.toml").write_text(
        'contract_version = "1.0"\nname = "typo-agent"\ninstall_cmd = ""\n'
        'launch_cmd = "true"\ninstal_timeout = 5\naliases = ["typo"]\n'
    )
    env = {
        "SKILLSBENCH_AGENTS_DIR": str(tmp_path / "agents"),
        "BENCHFLOW_AGENTS_DIR": str(AGENTS_DIR),
    }
    agents = discover(env)
    assert {"typo-agent", "typo", "py-acp-agent"} <= set(agents)
    assert agents["typo"].manifest.unknown_keys == ["instal_timeout"]
    assert find("py-acp-agent", env).manifest.unknown_keys == []


def test_invalid_manifest_names_file_and_key(tmp_path: Path) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "manifest.toml").write_text('name = "bad"\nprotocol = "cli"\n')
    with pytest.raises(ManifestError, match=r"bad/manifest.toml: .*contract_version.*protocol"):
        discover({"SKILLSBENCH_AGENTS_DIR": str(tmp_path)})
    with pytest.raises(ManifestError, match="unknown agent 'nope'"):
        find("nope", {"SKILLSBENCH_AGENTS_DIR": str(AGENTS_DIR)})


def test_bare_manifest_name_resolves_and_other_specs_do_not() -> None:
    from worker.agents.acp import resolve_manifest_name

    agent = resolve_manifest_name("py-acp-agent")
    assert isinstance(agent, ManifestAgent)
    assert agent.entry().manifest.name == "py-acp-agent"
    assert resolve_manifest_name("not-an-agent") is None
    assert resolve_manifest_name("a2a:http://127.0.0.1:1") is None
