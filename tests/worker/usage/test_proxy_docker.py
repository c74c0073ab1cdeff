"""A manifest agent in a Docker container reaches the worker's model proxy on the bridge gateway
(the real provider key stays on the host)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import serve
from tests.worker.usage.support import AGENTS_DIR, REAL_KEY, FakeProvider, Script, run_one
from worker.api import UsageSettings

# What `import acp, httpx` needs, copied next to the agent (the test image has only the stdlib).
PACKAGES = (
    "acp", "annotated_types", "anyio", "certifi", "click", "h11", "httpcore", "httpx", "idna",
    "opentelemetry", "pydantic", "pydantic_core", "pygments", "sniffio", "typing_inspection",
    "typing_extensions.py",
)  # fmt: skip
SRC = "/tmp/skillsbench-agents/model-acp-agent"  # where the worker uploads the agent's folder


@pytest.fixture
async def provider(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> AsyncIterator[FakeProvider]:
    fake = FakeProvider(Script(replies=["$ echo 42 > /root/answer.txt", "done"]))
    agents = tmp_path / "agents"
    folder = agents / "model-acp-agent"
    shutil.copytree(AGENTS_DIR / "model-acp-agent", folder)
    site = next(Path(p) for p in sys.path if p.endswith("site-packages"))
    for name in PACKAGES:
        source = site / name
        if source.is_dir():
            shutil.copytree(
                source, folder / "deps" / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        elif source.exists():
            shutil.copy2(source, folder / "deps" / name)
    async with serve(fake.app) as url:
        monkeypatch.setenv("SKILLSBENCH_AGENTS_DIR", str(agents))
        monkeypatch.delenv("BENCHFLOW_AGENTS_DIR", raising=False)
        monkeypatch.setenv("SKILLSBENCH_MODEL_API_BASE", f"{url}/v1")
        monkeypatch.setenv("SKILLSBENCH_MODEL_API_KEY", REAL_KEY)
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
        yield fake


async def test_docker_agent_calls_the_model_through_the_bridge(
    docker_client: Any, provider: FakeProvider, tmp_path: Path
) -> None:
    from tests.support.docker_images import ensure_test_image

    ensure_test_image(docker_client, "python")
    trial = await run_one(
        tmp_path / "run",
        environment="docker",
        usage=UsageSettings(
            model="openai/skillsbench-unpriced-model",
            agent_env={"MODEL_AGENT_PYTHON": "python3", "PYTHONPATH": f"{SRC}/deps"},
        ),
    )
    assert trial.result["reward"] == 1.0, trial.result
    assert trial.usage["usage_source"] == "provider_response"
    assert trial.usage["total_tokens"] == 240
    calls = trial.calls()
    assert len(calls) == 2
    gateway = calls[0]["request"]["headers"]["host"].split(":")[0]
    assert gateway != "127.0.0.1"  # the container reached the host on the bridge gateway
    assert provider.requests[0]["headers"]["authorization"] == f"Bearer {REAL_KEY}"
