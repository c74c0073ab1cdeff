"""Shared test fixtures: the a2a-sdk 0.3 peer environment and Docker."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
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
from tests.support.durations import load, longest_first


@pytest.hookimpl(trylast=True)  # after tests/images marks its image groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The recorded slow tests first, longest first (tests/support/durations.py says why): an
    image build or a whole trial no longer starts last, with one worker idle beside it."""
    tests = []
    for item in items:
        group = _group(item)  # pytest-xdist may have put "@group" after the ID already
        node = item.nodeid.removesuffix(f"@{group}") if group is not None else item.nodeid
        tests.append((node, group))
    items[:] = longest_first(items, tests, load())


def _group(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("xdist_group")
    if marker is None:
        return None
    return str(marker.args[0] if marker.args else marker.kwargs.get("name", "default"))


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


@pytest.fixture(autouse=True)
def _no_server_left_holding_signals() -> Iterator[None]:
    """A uvicorn server that captured SIGTERM and stopped out of order with another leaves its
    ``handle_exit`` installed: sse-starlette then finds that stopped server and ends every later
    event stream of this process (in-process servers must not capture signals)."""
    yield
    handler = signal.getsignal(signal.SIGTERM)
    server = getattr(handler, "__self__", None)
    if server is not None and getattr(server, "should_exit", False):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the next tests get a clean process
        pytest.fail(f"a stopped {type(server).__name__} still holds SIGTERM (it captured signals)")
