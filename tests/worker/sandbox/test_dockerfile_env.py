"""A Dockerfile's ``ENV``/``ARG`` as both backends apply them (``local`` and ``docker``), and the
local sandbox's refusals naming their real cause."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.worker.sandbox.support import DOCKERFILE, MakeTask, make_spec
from worker.sandbox import Sandbox, SandboxUnsupported, sandbox_class

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
    sb = _local(make_task(DOCKERFILE + f"RUN echo first > /app/first\n{run}\n"), tmp_path / "s")
    with pytest.raises(SandboxUnsupported) as caught:
        await sb.start()
    await sb.stop()
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
