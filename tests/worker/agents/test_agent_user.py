"""``[agent].user``: every agent acts as that user where the sandbox can switch (docker), and the
local sandbox, which runs everything as root, refuses it as ``sandbox_unsupported``."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from task_sets.task import Task, load_task
from tests.support import make_task
from tests.support.docker_images import ensure_test_image
from tests.worker.support import make_sandbox, purple_server, run_trial
from worker.acp.agent_manifest import AgentManifest, CredentialFile
from worker.acp.provision import provision
from worker.agents.a2a import A2AAgent
from worker.agents.builtin import OracleAgent
from worker.sandbox import SandboxUnsupported
from worker.sandbox.base import Sandbox

# The test image has no useradd: the user is written into passwd/group by hand.
DOCKERFILE = """\
FROM python:3.11-slim
RUN echo 'agent:x:1000:1000::/home/agent:/bin/sh' >> /etc/passwd \\
 && echo 'agent:x:1000:' >> /etc/group && mkdir -p /home/agent && chown 1000:1000 /home/agent
WORKDIR /home/agent
"""
# solve.sh and the purple agent both write answer.txt; the test checks who owns it.
SOLVE = "#!/bin/sh\necho 42 > answer.txt\n"
TEST_SH = """\
#!/bin/sh
[ "$(cat /home/agent/answer.txt 2>/dev/null)" = 42 ] && echo 1 > /logs/verifier/reward.txt \\
  || echo 0 > /logs/verifier/reward.txt
"""


def user_task(root: Path, user: str | None = "agent", dockerfile: str = DOCKERFILE) -> Task:
    folder = make_task(root, "as-agent", dockerfile=dockerfile, solve_sh=SOLVE, test_sh=TEST_SH)
    toml = folder / "task.toml"
    if user is not None:
        toml.write_text(toml.read_text().replace("[agent]\n", f'[agent]\nuser = "{user}"\n'))
    return load_task(folder)


async def owner_of_answer(tmp_path: Path, agent: Any, **kw: Any) -> tuple[float | None, str]:
    seen: dict[str, str] = {}

    async def inspect(box: Sandbox) -> None:
        shown = await box.exec(["stat", "-c", "%U", "/home/agent/answer.txt"])
        seen["owner"] = shown.stdout.strip()

    the_task = user_task(tmp_path / "tasks", kw.pop("user", "agent"))

    async def prepare(box: Sandbox) -> None:
        assert the_task.solution_dir is not None
        await box.upload(the_task.solution_dir, "/solution")  # as the trial does for oracle

    result = await run_trial(
        agent,
        tmp_path,
        the_task=the_task,
        environment="docker",
        prepare=prepare,
        inspect=inspect,
        **kw,
    )
    assert result.outcome.failure is None, result.outcome.message
    return result.reward, seen["owner"]


@pytest.mark.docker
@pytest.mark.parametrize("user", ["agent", None])
async def test_oracle_runs_as_the_agent_user(tmp_path: Path, docker_client: Any, user: str) -> None:
    ensure_test_image(docker_client, "python")
    reward, owner = await owner_of_answer(tmp_path, OracleAgent("oracle"), user=user)
    assert reward == 1.0
    assert owner == (user or "root")


@pytest.mark.docker
async def test_bridge_actions_run_as_the_agent_user(tmp_path: Path, docker_client: Any) -> None:
    """The purple agent's exec and finish files both land as the agent user."""
    ensure_test_image(docker_client, "python")
    with purple_server("exec") as url:
        reward, owner = await owner_of_answer(tmp_path, A2AAgent(f"a2a:{url}"))
    assert reward == 1.0
    assert owner == "agent"


async def test_local_sandbox_refuses_an_agent_user(tmp_path: Path) -> None:
    the_task = user_task(tmp_path / "tasks", dockerfile="FROM python:3.11-slim\nWORKDIR /root\n")
    with pytest.raises(SandboxUnsupported, match="runs everything as root"):
        await run_trial(OracleAgent("oracle"), tmp_path, the_task=the_task)
    with (
        purple_server("exec") as url,
        pytest.raises(SandboxUnsupported, match="runs everything as root"),
    ):
        await run_trial(A2AAgent(f"a2a:{url}"), tmp_path / "a2a", the_task=the_task)


@pytest.mark.docker
async def test_manifest_set_up_hands_files_to_the_agent_user(
    tmp_path: Path, docker_client: Any
) -> None:
    """home_dirs are filled from /root and, like credential files and skill links, owned by the
    agent user; the credential file is 0600."""
    ensure_test_image(docker_client, "python")
    manifest = AgentManifest(
        contract_version="1.0",
        name="x",
        install_cmd="true",
        launch_cmd="true",
        home_dirs=[".tool"],
        skill_paths=["$HOME/.agents/skills"],
        credential_files=[CredentialFile(path="{home}/.tool/auth", env_source="KEY")],
    )
    the_task = user_task(tmp_path / "tasks")
    async with make_sandbox(the_task, "docker", run_id=f"r-{uuid.uuid4().hex[:8]}",
                            trial_id="p", state_dir=tmp_path / "box") as box:  # fmt: skip
        await box.exec("mkdir -p /root/.tool /tmp/sk/a && echo cfg > /root/.tool/config")
        await provision(box, manifest, {"KEY": "s3cret"}, user="agent", skills_dir="/tmp/sk")
        # %n and readlink, not %N: busybox and coreutils quote %N differently
        shown = await box.exec(
            "cd /home/agent && stat -c '%U %a %n' .tool .tool/config .tool/auth"
            " && stat -c '%U %n' .agents .agents/skills && readlink .agents/skills"
            " && cat .tool/config .tool/auth"
        )
    assert shown.stdout.split("\n") == [
        "agent 755 .tool",
        "agent 644 .tool/config",
        "agent 600 .tool/auth",
        "agent .agents",
        "agent .agents/skills",
        "/tmp/sk",
        "cfg",
        "s3cret",
    ], shown


@pytest.mark.docker
async def test_credential_file_in_a_new_folder_is_readable_by_the_agent_user(
    tmp_path: Path, docker_client: Any
) -> None:
    """The folders made for a credential file belong to the agent user, who must reach its
    0600 file; outside the home they stay root's but can be traversed."""
    ensure_test_image(docker_client, "python")
    manifest = AgentManifest(
        contract_version="1.0",
        name="x",
        install_cmd="true",
        launch_cmd="true",
        credential_files=[
            CredentialFile(path="{home}/.cli/conf/auth.json", env_source="KEY"),
            CredentialFile(path="/etc/cli-x/token", env_source="KEY"),
        ],
    )
    the_task = user_task(tmp_path / "tasks")
    async with make_sandbox(the_task, "docker", run_id=f"r-{uuid.uuid4().hex[:8]}",
                            trial_id="c", state_dir=tmp_path / "box") as box:  # fmt: skip
        await provision(box, manifest, {"KEY": "s3cret"}, user="agent", skills_dir=None)
        shown = await box.exec(
            "cat /home/agent/.cli/conf/auth.json /etc/cli-x/token && echo"
            " && stat -c '%U %a %n' /home/agent/.cli /home/agent/.cli/conf /etc/cli-x"
            " && touch /home/agent/.cli/conf/state",
            user="agent",
        )
    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout.split("\n")[:5] == [
        "s3crets3cret",
        "agent 755 /home/agent/.cli",
        "agent 755 /home/agent/.cli/conf",
        "root 755 /etc/cli-x",
        "",
    ]
