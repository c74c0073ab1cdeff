"""Fixtures of the green agent tests: a green agent on loopback, a worker state folder."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from green_agent.server import build_app
from green_agent.settings import GreenSettings
from skillsbench_agentbeats.in_process import serve_app


@pytest.fixture
async def mock_green() -> AsyncIterator[str]:
    async with serve_app(lambda url: build_app(url, GreenSettings())) as url:
        yield url


@pytest.fixture
def worker_state(tmp_path: Path) -> Path:
    return tmp_path / "worker-state"
