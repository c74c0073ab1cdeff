"""CLI harnesses: seeded from the sandbox through exec actions, run locally, changes sent back."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from purple_agent.agent_under_test import create_app
from purple_agent.config import AgentConfig
from purple_agent.gateway import load_litellm
from purple_agent.harnesses import HarnessAgent
from tests.purple_agent.support import BridgeClient, FakeModel, TurnReply, serving
from worker.bridge.protocol import (
    ActionResult,
    ActionResultMessage,
    ExecAction,
    FinishAction,
    ShellContext,
)

KEY = "sk-test-harness-0123456789abcdef"
INSTRUCTION = "Append a line to notes.txt and write the answer to out/answer.txt."

EDIT_SCRIPT = """
import os, pathlib
ws = pathlib.Path.cwd()
assert str(ws) == os.environ["SKILLSBENCH_WORKSPACE"]
(ws / "notes.txt").write_text((ws / "notes.txt").read_text() + "second line\\n")
(ws / "out").mkdir(exist_ok=True)
(ws / "out" / "answer.txt").write_text("42\\n")
(ws / "blob.bin").write_bytes(bytes(range(256)))
skills = os.environ["SKILLSBENCH_SKILLS_DIR"]
(ws / "seen.txt").write_text(
    pathlib.Path(os.environ["SKILLSBENCH_PROMPT_FILE"]).read_text()
    + "\\n--skill--\\n" + (pathlib.Path(skills, "SKILL.md").read_text() if skills else "none")
    + "\\n--key--\\n" + ("set" if os.environ.get("OPENAI_API_KEY") else "unset")
)
"""


def sandbox_exec(action: ExecAction, sandbox: Path) -> dict[str, Any]:
    """What the bridge does with an exec action: run it in the sandbox, return action_result."""
    done = subprocess.run(
        ["bash", "-c", action.command],
        cwd=sandbox,
        capture_output=True,
        text=True,
        timeout=action.timeout_sec,
    )
    return ActionResultMessage(
        action_result=ActionResult(
            exit_code=done.returncode, stdout=done.stdout, stderr=done.stderr
        )
    ).to_data()


async def run_trial(bridge: BridgeClient, sandbox: Path, ctx: ShellContext) -> TurnReply:
    reply = await bridge.send(INSTRUCTION, ctx.to_data())
    while isinstance(reply.action, ExecAction):
        reply = await bridge.send(data=sandbox_exec(reply.action, sandbox))
    return reply


@pytest.fixture(scope="module", autouse=True)
def _litellm_loaded() -> None:
    """The agent imports litellm beside its server at start-up; here, once per module."""
    load_litellm()


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    root = tmp_path / "sandbox"
    (root / "workspace").mkdir(parents=True)
    (root / "workspace" / "notes.txt").write_text("first line\n")
    (root / "workspace" / "unchanged.txt").write_text("keep me\n")
    (root / "skills").mkdir()
    (root / "skills" / "SKILL.md").write_text("# counting skill\n")
    return root


@pytest.fixture
async def harness_agent() -> AsyncIterator[Any]:
    stack: list[Any] = []

    async def start(environ: dict[str, str] | None = None, **config: Any) -> BridgeClient:
        cfg = AgentConfig(**{"harness": "codex", "api_key": SecretStr(KEY), **config})
        agent = HarnessAgent(cfg, environ=environ)
        agents.append(agent)
        cm = serving(lambda url: create_app(cfg, url, agent))
        url = await cm.__aenter__()
        stack.append(cm)
        bridge = BridgeClient(url)
        await bridge.__aenter__()
        stack.append(bridge)
        return bridge

    agents: list[HarnessAgent] = []
    yield start
    for cm in reversed(stack):
        await cm.__aexit__(None, None, None)
    for agent in agents:
        await agent.aclose()


async def test_command_override_edits_files_and_returns_them(
    harness_agent: Any, sandbox: Path, tmp_path: Path
) -> None:
    script = tmp_path / "edit.py"
    script.write_text(EDIT_SCRIPT)
    bridge = await harness_agent(
        harness="openhands", provider="openai", command=f"{sys.executable} {script}"
    )
    ctx = ShellContext(
        task_id="t", workspace=str(sandbox / "workspace"), skills_dir=str(sandbox / "skills")
    )
    reply = await run_trial(bridge, sandbox, ctx)
    assert reply.state == "TASK_STATE_COMPLETED"
    assert isinstance(reply.action, FinishAction)
    files = {f.path: f for f in reply.action.files}
    assert set(files) == {"notes.txt", "out/answer.txt", "blob.bin", "seen.txt"}
    assert files["notes.txt"].content == "first line\nsecond line\n"
    assert files["out/answer.txt"].content == "42\n"
    assert files["blob.bin"].encoding == "base64"
    assert base64.b64decode(files["blob.bin"].content) == bytes(range(256))
    seen = files["seen.txt"].content
    assert seen.startswith(INSTRUCTION)
    assert "Skills that may help are in" in seen and "# counting skill" in seen
    assert seen.endswith("--key--\nset")  # SKILLSBENCH_AGENT_API_KEY became OPENAI_API_KEY
    assert "4 file(s) changed" in reply.action.message
    # the sandbox itself was only read
    assert (sandbox / "workspace" / "notes.txt").read_text() == "first line\n"


async def test_missing_cli_fails_the_task_at_once(harness_agent: Any, tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    bridge = await harness_agent(environ={"PATH": str(empty)}, harness="codex")
    reply = await bridge.send(INSTRUCTION, ShellContext(task_id="t").to_data())
    assert reply.state == "TASK_STATE_FAILED"
    assert "harness 'codex' is not installed" in reply.text
    assert "'codex' not found on PATH" in reply.text and "SKILLSBENCH_AGENT_COMMAND" in reply.text


async def test_slow_harness_is_stopped_and_its_work_returned(
    harness_agent: Any, sandbox: Path
) -> None:
    # the CLI's budget is timeout_sec less the 10 s the harness keeps for its finish (at least
    # 1 s): 16 s leaves it ~6 s to write before it is stopped, enough on a loaded machine
    bridge = await harness_agent(
        harness="pi", timeout_sec=16, command="echo partial > partial.txt; exec sleep 600"
    )
    reply = await run_trial(bridge, sandbox, ShellContext(task_id="t", workspace=str(sandbox)))
    assert isinstance(reply.action, FinishAction)
    assert [f.path for f in reply.action.files] == ["partial.txt"]
    assert "ran out of time" in reply.action.message


async def test_failed_seed_and_exit_code_are_reported(harness_agent: Any, tmp_path: Path) -> None:
    bridge = await harness_agent(harness="claude-code", command="echo x > new.txt; exit 3")
    ctx = ShellContext(task_id="t", workspace=str(tmp_path / "does-not-exist"))
    reply = await run_trial(bridge, tmp_path, ctx)
    assert isinstance(reply.action, FinishAction)
    assert [f.path for f in reply.action.files] == ["new.txt"], reply.action.message
    assert "exited with code 3" in reply.action.message
    assert "copying the workspace folder failed" in reply.action.message.lower()
    # the CLI worked at the task's path (a mount point in a tmpfs), never created on this host
    assert not (tmp_path / "does-not-exist").exists()


HASH_SCRIPT = """
import hashlib, pathlib
data = pathlib.Path("data/random.bin").read_bytes()
pathlib.Path("digest.txt").write_text(hashlib.sha256(data).hexdigest())
pathlib.Path("listing.txt").write_text("\\n".join(sorted(
    str(p) for p in pathlib.Path(".").rglob("*")
    if p.is_file() and p.name not in ("listing.txt", "digest.txt")
)))
"""


async def test_workspace_copy_comes_in_chunks_that_fit_the_output_limit(
    harness_agent: Any, sandbox: Path, tmp_path: Path
) -> None:
    ws = sandbox / "workspace"
    (ws / "data").mkdir()
    payload = os.urandom(20_000)  # incompressible: several 3 KB chunks
    (ws / "data" / "random.bin").write_bytes(payload)
    (ws / ".cache").mkdir()
    (ws / ".cache" / "junk").write_text("never copied")
    script = tmp_path / "hash.py"
    script.write_text(HASH_SCRIPT)
    bridge = await harness_agent(harness="gemini-cli", command=f"{sys.executable} {script}")
    ctx = ShellContext(task_id="t", workspace=str(ws), limits={"max_output_bytes": 4096})
    reply = await bridge.send(INSTRUCTION, ctx.to_data())
    commands = []
    while isinstance(reply.action, ExecAction):
        commands.append(reply.action.command)
        result = sandbox_exec(reply.action, sandbox)
        assert len(result["action_result"]["stdout"]) <= 4096
        reply = await bridge.send(data=result)
    assert isinstance(reply.action, FinishAction)
    assert len(commands) >= 1 + 20_000 // 3069  # pack, then one chunk per turn
    files = {f.path: f.content for f in reply.action.files}
    assert files["digest.txt"] == hashlib.sha256(payload).hexdigest()
    assert files["listing.txt"].split("\n") == ["data/random.bin", "notes.txt", "unchanged.txt"]
    [archive] = set(re.findall(r"/tmp/skillsbench-seed-\w+\.tgz", commands[0]))
    assert commands[-1].endswith(f"; rm -f {archive}")
    assert not Path(archive).exists()  # the sandbox is left clean


async def test_folder_over_the_turn_budget_is_not_copied(harness_agent: Any, sandbox: Path) -> None:
    (sandbox / "workspace" / "big.bin").write_bytes(os.urandom(50_000))
    bridge = await harness_agent(harness="opencode", command="ls > seen.txt")
    ctx = ShellContext(
        task_id="t",
        workspace=str(sandbox / "workspace"),
        limits={"max_output_bytes": 4096, "max_turns": 10},
    )
    reply = await run_trial(bridge, sandbox, ctx)
    assert isinstance(reply.action, FinishAction)
    assert "more than the turn budget" in reply.action.message
    assert {f.path: f.content for f in reply.action.files} == {"seen.txt": "seen.txt\n"}


FAKE_PI = """#!{python}
# stands in for pi: reads its models.json like pi does and makes {calls} model call(s)
import json, os, pathlib, sys, urllib.request
models = json.loads(pathlib.Path(os.environ["PI_CODING_AGENT_DIR"], "models.json").read_text())
provider = models["providers"]["skillsbench"]
key = os.environ[provider["apiKey"]]
pathlib.Path("seen.txt").write_text(os.getcwd() + "\\n" + os.environ["HOME"])
pathlib.Path("prompt.txt").write_text(sys.argv[-1])
for _ in range({calls}):
    request = urllib.request.Request(
        provider["baseUrl"] + "/chat/completions",
        data=json.dumps({{"model": "x", "messages": [{{"role": "user", "content": "hi"}}]}}).encode(),
        headers={{"Authorization": "Bearer " + key, "Content-Type": "application/json"}},
    )
    print(json.load(urllib.request.urlopen(request))["choices"][0]["message"]["content"])
pathlib.Path(os.environ["HOME"], ".pi-state").write_text("session state")
print("pi: last line before exit", file=sys.stderr)
sys.exit({code})
"""


async def _fake_pi(tmp_path: Path, calls: int, code: int) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    cli = bin_dir / "pi"
    cli.write_text(FAKE_PI.format(python=sys.executable, calls=calls, code=code))
    cli.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin", "HOME": str(tmp_path / "agent-home")}


@pytest.mark.parametrize("bwrap", ["found", "missing"])
async def test_cli_calls_go_through_the_gateway_and_are_counted(
    harness_agent: Any, sandbox: Path, tmp_path: Path, bwrap: str
) -> None:
    model = FakeModel([{"text": "hello"}])
    environ = await _fake_pi(tmp_path, calls=2, code=3)
    if bwrap == "missing":
        environ["SKILLSBENCH_BWRAP"] = str(tmp_path / "no-bwrap")
    async with serving(lambda _url: model.app()) as model_url:
        bridge = await harness_agent(
            environ=environ, harness="pi", model="openai/fake-model", base_url=f"{model_url}/v1"
        )
        ws = sandbox / "workspace"
        reply = await run_trial(bridge, sandbox, ShellContext(task_id="t", workspace=str(ws)))
    assert isinstance(reply.action, FinishAction), reply.text
    assert len(model.requests) == 2
    assert all(h == f"Bearer {KEY}" for h in model.auth_headers)  # the real key, from the gateway
    assert [{"usage": u} for u in [d.get("usage") for d in reply.data] if u] == [
        {"usage": {"model": "openai/fake-model", "calls": 2, "input_tokens": 200,
                   "output_tokens": 40, "cost_usd": None}}
    ]  # fmt: skip
    message = reply.action.message
    assert "2 model call(s)" in message
    assert (
        "exited with code 3; its last lines: hello | hello | pi: last line before exit" in message
    )
    files = {f.path: f.content for f in reply.action.files}
    assert set(files) == {"seen.txt", "prompt.txt"}  # the CLI's state stayed in its own home
    cwd, home = files["seen.txt"].split("\n")
    assert not home.startswith(str(ws)) and not Path(home).exists()  # removed with the session
    if bwrap == "found":
        assert cwd == str(ws)  # the task's own path (the copy bound there)
    else:
        assert cwd != str(ws)
        assert "the harness ran in a copy at" in message and "not at " + str(ws) in message
        assert f"where this task names {ws}, use {cwd} instead" in files["prompt.txt"]


async def test_cli_without_a_model_call_fails_with_its_last_lines(
    harness_agent: Any, sandbox: Path, tmp_path: Path
) -> None:
    environ = await _fake_pi(tmp_path, calls=0, code=0)
    bridge = await harness_agent(environ=environ, harness="pi", model="openai/fake-model")
    ws = sandbox / "workspace"
    reply = await run_trial(bridge, sandbox, ShellContext(task_id="t", workspace=str(ws)))
    assert reply.state == "TASK_STATE_FAILED"
    assert reply.text == (
        "pi made no model call (exited with code 0); its last lines: pi: last line before exit"
    )


async def test_provider_the_gateway_cannot_reach_is_refused(
    harness_agent: Any, sandbox: Path, tmp_path: Path
) -> None:
    environ = await _fake_pi(tmp_path, calls=1, code=0)
    bridge = await harness_agent(environ=environ, harness="pi", model="xiaomi/mimo")
    ws = sandbox / "workspace"
    reply = await run_trial(bridge, sandbox, ShellContext(task_id="t", workspace=str(ws)))
    assert reply.state == "TASK_STATE_FAILED"
    assert "provider 'xiaomi' is not one the model gateway (litellm) can reach" in reply.text
    assert "SKILLSBENCH_AGENT_BASE_URL" in reply.text
