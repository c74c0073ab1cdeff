"""Manifest agents: a Python ACP agent (tests/agents/py-acp-agent) installed from its manifest
and launched inside the bubblewrap sandbox, driven by the worker's ACP client."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import TEST_AGENTS
from tests.worker.support import agent_python, run_trial
from worker.acp.agent_manifest import AgentManifestError, discover, find, load_agent_manifest
from worker.agents.acp import ManifestAgent
from worker.core.failures import FailureKind
from worker.sandbox.base import Sandbox

AGENTS_DIR = TEST_AGENTS


@pytest.fixture(autouse=True)
def agents_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLSBENCH_AGENTS_DIR", str(AGENTS_DIR))
    monkeypatch.delenv("BENCHFLOW_AGENTS_DIR", raising=False)


def agent_env(mode: str = "run") -> dict[str, str]:
    return {**agent_python(), "PY_ACP_AGENT_MODE": mode}


async def test_manifest_agent_passes_example_task(tmp_path: Path) -> None:
    result = await run_trial(ManifestAgent("acp:py-acp-agent"), tmp_path, env=agent_env())
    assert result.outcome.status == "completed", result.outcome.message
    assert result.outcome.failure is None
    assert result.reward == 1.0, result.verifier
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
    thoughts = [e["text"] for e in result.trajectory() if e["type"] == "agent_thought"]
    assert thoughts == ["2 commands to run"]
    assert result.trajectory()[0]["type"] == "user_message"
    assert result.outcome.n_tool_calls == 2
    install_log = result.trial_dir / "agent" / "install-stdout.txt"
    assert install_log.exists()


async def test_chatty_stderr_is_drained_not_deadlocked(tmp_path: Path) -> None:
    result = await run_trial(ManifestAgent("acp:py-acp-agent"), tmp_path, env=agent_env("chatty"))
    assert result.outcome.status == "completed", result.outcome.message
    assert result.reward == 1.0, result.verifier
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


async def test_error_answer_to_the_prompt_is_a_protocol_failure(tmp_path: Path) -> None:
    result = await run_trial(ManifestAgent("acp:py-acp-agent"), tmp_path, env=agent_env("refuse"))
    assert result.outcome.failure is FailureKind.AGENT_PROTOCOL
    assert "no model configured" in (result.outcome.message or "")
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
    with pytest.raises(
        AgentManifestError, match=r"bad/manifest.toml: .*contract_version.*protocol"
    ):
        find("bad", {"SKILLSBENCH_AGENTS_DIR": str(tmp_path)})
    with pytest.raises(AgentManifestError, match="unknown agent 'nope'"):
        find("nope", {"SKILLSBENCH_AGENTS_DIR": str(AGENTS_DIR)})


def test_bare_manifest_name_resolves_and_other_specs_do_not() -> None:
    from worker.agents.acp import resolve_manifest_name

    agent = resolve_manifest_name("py-acp-agent")
    assert isinstance(agent, ManifestAgent)
    assert agent.entry().manifest.name == "py-acp-agent"
    assert resolve_manifest_name("not-an-agent") is None
    assert resolve_manifest_name("a2a:http://127.0.0.1:1") is None


async def test_idle_watchdog_stops_a_silent_agent(tmp_path: Path) -> None:
    agent = ManifestAgent("acp:py-acp-agent")
    agent.idle_timeout_sec = 1.0
    result = await run_trial(agent, tmp_path, env=agent_env("slow"), timeout_sec=60)
    assert result.outcome.failure is FailureKind.AGENT_TIMEOUT
    assert "reported nothing for 1 s" in (result.outcome.message or "")
    cancels = [e for e in result.trajectory() if e["type"] == "cancel_sent"]
    assert [c["reason"] for c in cancels] == ["idle_timeout"]


async def test_cancelling_the_run_sends_session_cancel_and_stops_the_agent(tmp_path: Path) -> None:
    task = asyncio.create_task(
        run_trial(ManifestAgent("acp:py-acp-agent"), tmp_path, env=agent_env("slow"))
    )
    events = tmp_path / "trial" / "trajectory" / "acp_trajectory.jsonl"
    for _ in range(200):  # until the prompt is under way
        await asyncio.sleep(0.05)
        if events.exists() and "agent_message" in events.read_text():
            break
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    cancels = [
        e for e in map(json.loads, events.read_text().splitlines()) if e["type"] == "cancel_sent"
    ]
    assert [c["reason"] for c in cancels] == ["cancelled"]
    # No process of this trial's sandbox is left (its bwrap command line names tmp_path).
    left = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True)
    assert left.stdout == ""


async def test_secrets_reach_the_agent_env_but_not_the_install_log(tmp_path: Path) -> None:
    folder = tmp_path / "agents" / "secretive"
    folder.mkdir(parents=True)
    (folder / "manifest.toml").write_text(
        'contract_version = "1.0"\nname = "secretive"\n'
        'install_cmd = "echo key=$SECRETIVE_KEY; echo mapped=$NATIVE_KEY"\n'
        'launch_cmd = "exit 1"\nrequires_env = ["SECRETIVE_KEY"]\n'
        '[env_mapping]\nBENCHFLOW_PROVIDER_API_KEY = "NATIVE_KEY"\n'
    )
    entry = find("secretive", {"SKILLSBENCH_AGENTS_DIR": str(tmp_path / "agents")})
    env = {"SECRETIVE_KEY": "sk-live-123456", "BENCHFLOW_PROVIDER_API_KEY": "pk-98765"}
    result = await run_trial(ManifestAgent("secretive", entry), tmp_path, env=env)
    log = (result.trial_dir / "agent" / "install-stdout.txt").read_text()
    assert log == "key=***\nmapped=***\n"
    assert result.outcome.failure is FailureKind.AGENT_LAUNCH  # launch_cmd exits at once


async def test_missing_required_env_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "agents" / "needy"
    folder.mkdir(parents=True)
    (folder / "manifest.toml").write_text(
        'contract_version = "1.0"\nname = "needy"\ninstall_cmd = ""\nlaunch_cmd = "true"\n'
        'requires_env = ["NEEDY_API_KEY"]\n'
    )
    monkeypatch.delenv("NEEDY_API_KEY", raising=False)
    entry = find("needy", {"SKILLSBENCH_AGENTS_DIR": str(tmp_path / "agents")})
    result = await run_trial(ManifestAgent("needy", entry), tmp_path)
    assert result.outcome.failure is FailureKind.AGENT_LAUNCH
    assert result.outcome.message == "agent 'needy' needs NEEDY_API_KEY set"


SECRET = "sk-provision-0123456789abcdef"
PROVISIONED = """
skill_paths = ["$HOME/.agents/skills", "$WORKSPACE/skills"]
home_dirs = [".py-acp"]

[[credential_files]]
path = "{home}/.py-acp/auth.json"
env_source = "PY_ACP_KEY"
template = '{{"key": "{value}"}}'

[[credential_files]]
path = "/etc/py-acp/unset.txt"
env_source = "PY_ACP_UNSET"
"""


async def test_home_dirs_credential_files_and_skill_paths_are_set_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agents = tmp_path / "agents"
    shutil.copytree(AGENTS_DIR / "py-acp-agent", agents / "py-acp-agent")
    manifest = agents / "py-acp-agent" / "manifest.toml"
    text = manifest.read_text().replace(
        'requires_env = ["PY_ACP_AGENT_PYTHON", "PY_ACP_AGENT_PYTHONPATH"]',
        'requires_env = ["PY_ACP_AGENT_PYTHON", "PY_ACP_AGENT_PYTHONPATH", "PY_ACP_KEY"]',
    )
    manifest.write_text(text + PROVISIONED)
    monkeypatch.setenv("SKILLSBENCH_AGENTS_DIR", str(agents))
    seen: dict[str, str] = {}

    async def prepare(box: Sandbox) -> None:
        made = await box.exec(
            "mkdir -p /tmp/sk/counting && echo '# counting' > /tmp/sk/counting/SKILL.md"
        )
        assert made.exit_code == 0, made.stderr

    async def inspect(box: Sandbox) -> None:
        for name, command in {
            "auth": "cat /root/.py-acp/auth.json",
            "mode": "stat -c %a /root/.py-acp/auth.json",
            "home_skill": "cat /root/.agents/skills/counting/SKILL.md",
            "link": "readlink /root/skills",
            "unset": "ls /etc/py-acp 2>&1 || true",
        }.items():
            shown = await box.exec(command)
            seen[name] = shown.stdout.strip() or shown.stderr.strip()

    result = await run_trial(
        ManifestAgent("acp:py-acp-agent"),
        tmp_path,
        env={**agent_env(), "PY_ACP_KEY": SECRET},
        skills_dir="/tmp/sk",
        prepare=prepare,
        inspect=inspect,
    )
    assert result.outcome.failure is None, result.outcome.message
    assert json.loads(seen["auth"]) == {"key": SECRET}
    assert seen["mode"] == "600"
    assert seen["home_skill"] == "# counting"
    assert seen["link"] == "/tmp/sk"
    assert "No such file" in seen["unset"]  # no value, no file
    log = (result.trial_dir / "agent" / "install-stdout.txt").read_text()
    assert "credential file /root/.py-acp/auth.json (from PY_ACP_KEY)" in log
    assert SECRET not in log


@pytest.mark.parametrize(
    "extra",
    [
        'skill_paths = ["/etc/skills"]',
        'skill_paths = ["$HOME/../etc"]',
        'home_dirs = ["/etc"]',
        '[[credential_files]]\npath = "relative/auth.json"\nenv_source = "K"',
        '[[credential_files]]\npath = "{home}/x"\nenv_source = "K"\ntemplate = "{other}"',
        '[[credential_files]]\npath = "{home}/x"\nenv_source = "K"\ntemplate = "{value.x}"',
    ],
)
def test_unsafe_provisioning_keys_are_refused(tmp_path: Path, extra: str) -> None:
    manifest = tmp_path / "manifest.toml"
    manifest.write_text(
        'contract_version = "1.0"\nname = "x"\ninstall_cmd = "true"\nlaunch_cmd = "true"\n'
        + extra
        + "\n"
    )
    with pytest.raises(AgentManifestError):
        load_agent_manifest(manifest)


async def test_an_install_cmd_that_writes_under_opt_works_locally(tmp_path: Path) -> None:
    """BenchFlow's agents install under /opt (/opt/minimal-agent, BenchFlow 0.10's /opt/runtime):
    writable per trial in the local sandbox as in a container (docs/sandboxes.md)."""
    folder = tmp_path / "agents" / "opt-agent"
    folder.mkdir(parents=True)
    shutil.copy(AGENTS_DIR / "py-acp-agent" / "agent.py", folder / "agent.py")
    (folder / "manifest.toml").write_text(
        'contract_version = "1.0"\nname = "opt-agent"\nprotocol = "acp"\n'
        "install_cmd = '''\nset -e\nmkdir -p /opt/minimal-agent /opt/runtime\n"
        "cp \"$SKILLSBENCH_AGENT_SRC/agent.py\" /opt/minimal-agent/agent.py\n'''\n"
        'launch_cmd = \'PYTHONPATH="$PY_ACP_AGENT_PYTHONPATH" exec "$PY_ACP_AGENT_PYTHON" '
        "/opt/minimal-agent/agent.py'\n"
        'requires_env = ["PY_ACP_AGENT_PYTHON", "PY_ACP_AGENT_PYTHONPATH"]\n'
    )
    entry = find("opt-agent", {"SKILLSBENCH_AGENTS_DIR": str(tmp_path / "agents")})
    result = await run_trial(ManifestAgent("opt-agent", entry), tmp_path, env=agent_env())
    assert result.outcome.failure is None, result.outcome.message
    assert result.reward == 1.0, result.verifier
