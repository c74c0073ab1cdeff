"""Shared test fixtures: repository paths, the a2a-sdk 0.3 peer environment, Docker, free ports."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
TASKS_DIR = REPO_ROOT / "tasks"
PUBLISHED_DATA = REPO_ROOT / "tests" / "data" / "published"  # public data, copied verbatim
A2A03_PYTHON = REPO_ROOT / ".venv-a2a03" / "bin" / "python"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def a2a03_python() -> Path:
    """Python of the separate a2a-sdk 0.3.x environment (made by `make sync`)."""
    if not A2A03_PYTHON.exists():
        pytest.fail("the a2a-sdk 0.3 environment is missing: run `make sync`")
    return A2A03_PYTHON


def docker_available() -> str | None:
    """None when a Docker Engine answers, else the reason it does not."""
    try:
        import docker

        client = docker.from_env(timeout=5)
        client.ping()
        client.close()
    except Exception as exc:
        return f"no Docker Engine answers: {exc}"
    return None


@pytest.fixture(scope="session")
def docker_client():  # type: ignore[no-untyped-def]
    reason = docker_available()
    if reason is not None:
        pytest.skip(reason)
    import docker

    client = docker.from_env(timeout=120)
    yield client
    client.close()
