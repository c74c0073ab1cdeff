"""The green agent and the worker as services in this process, each on a free loopback port.

In-process wiring of two components belongs to the composition root: the green agent itself
reaches a worker only over HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def loopback_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.setblocking(False)
    return sock


def _server(config: Any) -> Any:
    """A uvicorn server that leaves signals to the process that runs it: uvicorn's own
    handlers would stop the server at the first Ctrl-C (before its owner could cancel what it
    runs) and raise the signal again afterwards."""
    import uvicorn

    class InProcessServer(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return InProcessServer(config)


@contextlib.asynccontextmanager
async def serve_app(make_app: Callable[[str], Any]) -> AsyncIterator[str]:
    """Serve ``make_app(base_url)`` with uvicorn on a free loopback port; yields the base URL."""
    import uvicorn

    sock = loopback_socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    server = _server(
        uvicorn.Config(
            make_app(url), log_level="warning", lifespan="on", timeout_graceful_shutdown=5
        )
    )
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("server stopped during start")
            await asyncio.sleep(0.01)
        yield url
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, timeout=10)
        sock.close()


@contextlib.asynccontextmanager
async def local_worker(
    jobs_dir: Path,
    environment: str = "local",
    *,
    script_dir: Path | None = None,
    tasks_dir: Path | None = None,
) -> AsyncIterator[str]:
    """The real worker service in this process; yields its base URL (no trailing slash).
    ``script_dir``: the folder ``script:`` agents may come from (none: no script agents);
    ``tasks_dir``: its task folders (default: ``default_tasks_dir()``)."""
    from worker.runs.catalog import default_tasks_dir
    from worker.runs.engine import Engine, EngineSettings
    from worker.service.app import create_app

    settings = EngineSettings(
        jobs_dir=jobs_dir, tasks_dir=tasks_dir or default_tasks_dir(), environment=environment
    )
    engine = Engine(settings)
    async with serve_app(lambda url: create_app(engine, token=None, script_dir=script_dir)) as url:
        try:
            yield url.rstrip("/")
        finally:
            await cancel_unfinished(engine)


async def cancel_unfinished(engine: Any) -> None:
    """Cancel every run the worker has not finished. A worker in this process lives as long as
    the command that started it: a run it leaves behind would stay ``running`` in its jobs
    folder, with no one to follow it, until a worker started there resumed it."""
    for run in engine.runs():
        if not run.terminal:
            log.warning("cancelling unfinished worker run %s", run.run_id)
            try:
                await engine.cancel(run.run_id)
            except Exception:
                log.exception("could not cancel worker run %s", run.run_id)


@contextlib.asynccontextmanager
async def local_green(env: Mapping[str, str] | None = None) -> AsyncIterator[str]:
    """A green agent in this process; its worker comes from ``env`` (else the mock worker)."""
    from green_agent.server import build_app
    from green_agent.settings import load_settings

    settings = load_settings({**os.environ, **(env or {})})
    async with serve_app(lambda url: build_app(url, settings)) as url:
        yield url
