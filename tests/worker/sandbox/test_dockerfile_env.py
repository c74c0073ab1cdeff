"""A Dockerfile's ``ENV``/``ARG`` as both backends apply them (``local`` and ``docker``), and the
local sandbox's refusals naming their real cause."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.worker.sandbox.support import DOCKERFILE, MakeTask, make_spec
from worker.sandbox import Sandbox, SandboxUnsupported, sandbox_class
from worker.sandbox._bubblewrap.recipe import script_installer, specialised_base

PATH_DOCKERFILE = (
    DOCKERFILE
    + "COPY data/hello /x/hello\n"
    + 'ENV PATH="/x:${PATH}" ROOTED=${PATH:+yes}\n'
    + "ARG STAMP=built\n"
    + 'RUN echo "$STAMP with $(command -v hello)" > /app/stamp.txt\n'
)


def _with_tool(task_path: Path) -> None:
    tool = task_path / "environment" / "data" / "hello"
    tool.write_text("#!/bin/sh\necho hello from /x\n")
    tool.chmod(0o755)


async def test_env_path_prepends_to_the_base_path(
    open_sandbox: Callable[..., Sandbox], make_task: MakeTask
) -> None:
    task = make_task(PATH_DOCKERFILE)
    _with_tool(task.path)
    async with open_sandbox(task) as sb:
        result = await sb.exec('echo "$PATH"; echo "$ROOTED"; hello; cat /app/stamp.txt')
    assert result.exit_code == 0, result.stderr
    path, rooted, hello, stamp = result.stdout.splitlines()
    assert path.startswith("/x:") and "/usr/bin" in path.split(":"), path
    assert rooted == "yes"
    assert hello == "hello from /x"
    assert stamp == "built with /x/hello"  # RUN sees the ENV and ARG values in force


def _local(task: object, state: Path) -> Sandbox:
    return sandbox_class("local")(make_spec(task, state, "local"))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "run",
    [
        "RUN apt-get update && apt-get install -y --no-install-recommends curl",
        "RUN DEBIAN_FRONTEND=noninteractive apt-get install -y jq",
        "RUN echo x; sudo apk add git",
    ],
)
async def test_system_package_installs_are_refused_naming_the_cause(
    make_task: MakeTask, tmp_path: Path, run: str
) -> None:
    # Refused when the trial makes the sandbox's config, before any sandbox exists.
    task = make_task(DOCKERFILE + f"RUN echo first > /app/first\n{run}\n")
    with pytest.raises(ValueError) as caught:
        _local(task, tmp_path / "s")
    message = str(caught.value)
    assert "needs the docker environment: Dockerfile line 7" in message
    assert "installs system packages" in message
    assert "writable root filesystem" in message
    # Refused before anything ran: no mirror or resolver noise quoted.
    assert "Temporary failure" not in message and "Could not" not in message


async def test_writes_to_the_read_only_root_name_the_cause(
    make_task: MakeTask, tmp_path: Path
) -> None:
    sb = _local(make_task(DOCKERFILE + "RUN mkdir -p /usr/share/task-data\n"), tmp_path / "s")
    with pytest.raises(SandboxUnsupported) as caught:
        await sb.start()
    await sb.stop()
    message = str(caught.value)
    assert "Dockerfile line 6 `RUN mkdir -p /usr/share/task-data`" in message
    assert "a writable root filesystem is needed" in message
    assert "Read-only file system" in message


@pytest.mark.parametrize(
    ("reference", "specialised"),
    [
        ("python:3.11-slim", False),
        ("ubuntu:24.04", False),
        ("docker.io/library/debian:bookworm@sha256:" + "0" * 64, False),
        ("busybox:latest", False),
        ("jasonish/suricata:7.0.11", True),  # real SkillsBench FROM lines
        ("gcr.io/oss-fuzz-base/base-builder-python", True),
        ("bugswarm/cached-images:AgentOps-AI-agentops-24579293289", True),
        ("localhost:5000/python:3.11", True),  # another registry: not the image we know
    ],
)
def test_specialised_bases_are_named(reference: str, specialised: bool) -> None:
    assert (specialised_base(reference) == reference) is specialised


def test_a_test_script_installing_packages_is_found_on_any_line() -> None:
    script = "#!/bin/bash\n# apt-get is mentioned in a comment only\nset -e\n"
    assert script_installer(script) is None
    assert script_installer(script + "apt-get update\napt-get install -y curl\n") == "apt-get"
    assert script_installer(script + "if true; then sudo apk add git; fi\n") == "apk"
    assert script_installer("dpkg --print-architecture\n") is None
