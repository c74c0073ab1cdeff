"""``skillsbench-agentbeats worker``: the HTTP service (also ``python -m worker``).

:func:`concurrency_or_cores` are shared with ``run`` (the same engine
in-process, wired in :mod:`skillsbench_agentbeats.run`).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import click

from worker.failures import RetryPolicy
from worker.sandbox.base import DEFAULT_BACKEND, backend_names


def concurrency_or_cores(value: int | None) -> int:
    if value is None:
        return os.cpu_count() or 1
    if value < 1:
        raise click.BadParameter("must be at least 1", param_hint="--concurrency")
    return value


@click.command(help="Run the worker HTTP service.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=9010, show_default=True, type=int)
@click.option(
    "--jobs-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("jobs/agentbeats-worker"),
    show_default=True,
    help="Run store and trial folders.",
)
@click.option(
    "--tasks-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Task folders (default: $SKILLSBENCH_TASKS_DIR, else the repository's tasks/).",
)
@click.option(
    "--environment", type=click.Choice(backend_names()), default=DEFAULT_BACKEND, show_default=True
)
@click.option("--concurrency", type=int, default=None, help="Trials at once (default: cores).")
@click.option(
    "--max-attempts",
    type=int,
    default=3,
    show_default=True,
    help="Tries per trial for retried infrastructure failures.",
)
@click.option("--log-level", default="info", show_default=True)
def worker(
    host: str,
    port: int,
    jobs_dir: Path,
    tasks_dir: Path | None,
    environment: str,
    concurrency: int | None,
    max_attempts: int,
    log_level: str,
) -> None:
    import uvicorn

    from worker.api import is_loopback_host
    from worker.app import TOKEN_VAR, create_app
    from worker.catalog import resolve_tasks_dir
    from worker.engine import Engine, EngineSettings
    from worker.environment import ParticipantProxies, PrebuiltImages
    from worker.meta import ProofSettings

    token = os.environ.get(TOKEN_VAR) or None
    if not is_loopback_host(host) and token is None:
        raise ValueError(
            f"refusing to listen on non-loopback address {host} without {TOKEN_VAR} set"
        )
    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    settings = EngineSettings(
        jobs_dir=jobs_dir,
        tasks_dir=resolve_tasks_dir(tasks_dir),
        environment=environment,
        concurrency=concurrency_or_cores(concurrency),
        retry=RetryPolicy(max_attempts=max(1, max_attempts)),
        proof=ProofSettings.from_env(jobs_dir),
        prebuilt=PrebuiltImages.from_env(),
        proxies=ParticipantProxies.from_env(),
    )
    app = create_app(Engine(settings), token=token)
    uvicorn.run(app, host=host, port=port, log_level=log_level.lower(), timeout_graceful_shutdown=5)
