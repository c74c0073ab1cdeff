"""Every documented way to start a purple agent answers --help; the Dockerfile is build-ready."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.support import REPO_ROOT

ENTRYPOINTS = [
    ["-m", "purple_agent.placeholder"],
    ["-m", "purple_agent.agent_under_test"],
    ["-m", "skillsbench_agentbeats", "purple", "placeholder"],
    ["-m", "skillsbench_agentbeats", "purple", "agent-under-test"],
    ["-m", "skillsbench_agentbeats.placeholder_agent"],  # the published manifests' entrypoints
    ["-m", "skillsbench_agentbeats.agent_under_test"],
]


@pytest.mark.parametrize("argv", ENTRYPOINTS, ids=lambda a: " ".join(a[1:]))
def test_help(argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, *argv, "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    for option in ("--host", "--port", "--card-url"):
        assert option in done.stdout


def test_dockerfile_is_build_ready() -> None:
    text = (REPO_ROOT / "purple_agent" / "Dockerfile").read_text()
    assert re.search(r"^ARG BASE_IMAGE=python:3\.11-slim$", text, re.M)
    assert "FROM --platform=linux/amd64 ${BASE_IMAGE}" in text
    assert "--require-hashes" in text
    users = re.findall(r"^USER (\S+)$", text, re.M)
    assert users and users[-1] not in ("root", "0")
    for src in re.findall(r"^COPY (?!--)(.+) \S+$", text, re.M):
        for path in src.split():
            if "[" not in path:
                assert (REPO_ROOT / path).exists(), f"COPY source {path} is missing"
    assert re.search(
        r'^ENTRYPOINT \["python", "-m", "skillsbench_agentbeats.container_entry"\]$', text, re.M
    )
    assert 'SKILLSBENCH_SERVICE_COMMAND="skillsbench-agentbeats purple"' in text
