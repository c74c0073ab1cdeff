"""Shared test fixtures: the a2a-sdk 0.3 peer environment and Docker."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Ray reads these when first imported, and any test module may import it first (in an xdist
# worker, before tests/worker/executors/support.py): keep every node and client on loopback, no
# usage stats.
os.environ.update(
    {
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",  # see worker/executors/_ray.py
    }
)
from tests.support import A2A03_PYTHON, docker_available


@pytest.fixture
def a2a03_python() -> Path:
    """Python of the separate a2a-sdk 0.3.x environment (made by `make sync`)."""
    if not A2A03_PYTHON.exists():
        pytest.fail("the a2a-sdk 0.3 environment is missing: run `make sync`")
    return A2A03_PYTHON


@pytest.fixture(scope="session")
def docker_client():  # type: ignore[no-untyped-def]
    reason = docker_available()
    if reason is not None:
        pytest.skip(reason)
    import docker

    client = docker.from_env(timeout=120)
    yield client
    client.close()
