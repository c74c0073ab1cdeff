"""Shared test helpers: repository paths, free ports, Docker availability.

Test modules import these from here, never from ``conftest`` (several conftest files exist, and
pytest would hand back whichever it loaded last).
"""

from __future__ import annotations

import socket
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
TASKS_DIR = REPO_ROOT / "tasks"
PUBLISHED_DATA = REPO_ROOT / "tests" / "data" / "published"  # public data, copied verbatim
A2A03_PYTHON = REPO_ROOT / ".venv-a2a03" / "bin" / "python"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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
