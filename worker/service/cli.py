"""``skillsbench-agentbeats worker``: the HTTP service (also ``python -m worker``).

:func:`concurrency_or_cores` are shared with ``run`` (the same engine
in-process, wired in :mod:`skillsbench_agentbeats.run`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from serving.listen import bind_host, listening_socket
from worker.api import SCRIPT_DIR_VAR
from worker.core.failures import RetryPolicy
from worker.sandbox.base import DEFAULT_BACKEND, backend_names
from worker.sandbox.resources import (
    DEFAULT_PIDS_LIMIT,
    OVERRIDE_CPUS_VAR,
    OVERRIDE_MEMORY_VAR,
    PIDS_LIMIT_VAR,
    ResourceSettings,
)
from worker.sandbox.settings import base_image_map_option

F = TypeVar("F", bound=Callable[..., Any])


def _stopping_server(config: Any, stopping: asyncio.Event) -> Any:
    """A uvicorn server that sets ``stopping`` as soon as a signal asks it to exit, before it
    waits for open connections: the app's event streams end on it, so Ctrl-C with a client
    watching a run is a clean shutdown, not a 5 s wait and a cancelled task's traceback."""
    import uvicorn

    class StoppingServer(uvicorn.Server):
        loop: asyncio.AbstractEventLoop | None = None
        interrupted = False  # a SIGINT asked it to stop

        def handle_exit(self, sig: int, frame: Any) -> None:
            super().handle_exit(sig, frame)
            if sig == signal.SIGINT:
                self.interrupted = True
            if self.loop is not None:
                self.loop.call_soon_threadsafe(stopping.set)

    return StoppingServer(config)


def listen_host(host: str, port: int) -> str:
    """The address to bind (``[::1]`` becomes ``::1``); one this machine cannot listen on is
    refused here, naming it, instead of failing inside the server."""
    host = bind_host(host)
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        raise click.BadParameter(f"cannot listen on {host!r}: {exc}", param_hint="--host") from None
    return host


def environment_option(help: str | None = None) -> Callable[[F], F]:
    """``--environment``: a registered sandbox backend (the same choices for every command)."""
    return click.option(
        "--environment",
        type=click.Choice(backend_names()),
        default=DEFAULT_BACKEND,
        show_default=True,
        help=help,
    )


def task_cache_option() -> Callable[[F], F]:
    """``--task-cache``: where ``task-set fetch`` put published sets' tasks (the same for every
    command that takes ``--task-set``)."""
    return click.option(
        "--task-cache",
        type=click.Path(path_type=Path, file_okay=False),
        default=None,
        help="Where `task-set fetch` put the task set's tasks, used when --tasks-dir is not "
        "given (default: $SKILLSBENCH_TASK_CACHE, else ~/.cache/skillsbench-agentbeats/task-sets).",
    )


def resource_options(func: F) -> F:
    """``--pids-limit``, ``--override-cpus``, ``--override-memory-mb`` (each also an environment
    variable): the same for ``worker`` and ``run``; :func:`resource_settings` reads them."""
    func = click.option(
        "--override-memory-mb",
        type=int,
        default=None,
        envvar=OVERRIDE_MEMORY_VAR,
        help="Give every task this much memory (MB) instead of its memory_mb "
        "(capped to the host; recorded).",
    )(func)
    func = click.option(
        "--override-cpus",
        type=float,
        default=None,
        envvar=OVERRIDE_CPUS_VAR,
        help="Give every task this many CPUs instead of its cpus (capped to the host; recorded).",
    )(func)
    return click.option(
        "--pids-limit",
        type=int,
        default=DEFAULT_PIDS_LIMIT,
        show_default=True,
        envvar=PIDS_LIMIT_VAR,
        help="Processes and threads one trial may hold at once.",
    )(func)


def resource_settings(
    pids_limit: int, override_cpus: float | None, override_memory_mb: int | None
) -> ResourceSettings:
    try:
        return ResourceSettings(pids_limit, override_cpus, override_memory_mb)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def executor_option() -> Callable[[F], F]:
    """``--executor`` and ``--ray-address`` (where trial attempts run; worker/executors)."""

    def decorate(func: F) -> F:
        func = click.option(
            "--ray-address",
            default=None,
            envvar="RAY_ADDRESS",
            help="The Ray cluster of --executor ray (default: $RAY_ADDRESS).",
        )(func)
        return click.option(
            "--executor",
            type=click.Choice(["inprocess", "ray"]),
            default="inprocess",
            show_default=True,
            help="Where trial attempts run: this process, or the nodes of a Ray cluster "
            "(needs skillsbench-agentbeats[ray]; docs/scaling.md).",
        )(func)

    return decorate


def executor_options(executor: str, ray_address: str | None) -> dict[str, str]:
    """The options of ``executor`` from the command line (``RAY_ADDRESS`` alone selects no
    executor: it is read only with ``--executor ray``)."""
    if executor == "ray" and ray_address:
        return {"address": ray_address}
    return {}


def concurrency_or_cores(value: int | None) -> int:
    if value is None:
        return os.cpu_count() or 1
    if value < 1:
        raise click.BadParameter("must be at least 1", param_hint="--concurrency")
    return value


@click.command(help="Run the worker HTTP service.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=9010, show_default=True, type=click.IntRange(1, 65535))
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
@environment_option()
@base_image_map_option()
@click.option(
    "--concurrency",
    type=int,
    default=None,
    help="Trials at once (default: cores; with --executor ray, the trials the cluster runs "
    "at once).",
)
@executor_option()
@click.option(
    "--max-attempts",
    type=int,
    default=3,
    show_default=True,
    help="Tries per trial for retried infrastructure failures.",
)
@click.option(
    "--script-dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=None,
    envvar=SCRIPT_DIR_VAR,
    help="The folder script:<file> agents may come from over the API "
    "(default: none; script agents are refused).",
)
@resource_options
@click.option(
    "--task-image-builds",
    type=click.Choice(["allowed", "never"]),
    default="allowed",
    show_default=True,
    envvar="SKILLSBENCH_WORKER_BUILDS",
    help="never: build no task image (prebuilt images only, as under Amber, whose Docker "
    "gateway refuses builds); a run that would need a build is refused before it starts.",
)
@click.option("--log-level", default="info", show_default=True)
def worker(
    host: str,
    port: int,
    jobs_dir: Path,
    tasks_dir: Path | None,
    environment: str,
    base_image_map: dict[str, str],
    concurrency: int | None,
    executor: str,
    ray_address: str | None,
    max_attempts: int,
    script_dir: Path | None,
    pids_limit: int,
    override_cpus: float | None,
    override_memory_mb: int | None,
    task_image_builds: str,
    log_level: str,
) -> None:
    from dataclasses import replace

    import uvicorn

    from worker.api import is_loopback_host
    from worker.executors.base import ExecutorError
    from worker.runs.catalog import resolve_tasks_dir
    from worker.runs.engine import Engine, EngineSettings
    from worker.runs.meta import ProofSettings
    from worker.sandbox.settings import ParticipantProxies, PrebuiltImages
    from worker.service.app import TOKEN_VAR, create_app

    host = listen_host(host, port)
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
        prebuilt=replace(
            PrebuiltImages.from_env(bases=base_image_map), builds=task_image_builds == "allowed"
        ),
        proxies=ParticipantProxies.from_env(),
        resources=resource_settings(pids_limit, override_cpus, override_memory_mb),
        executor=executor,
        executor_options=executor_options(executor, ray_address),
    )
    sock = listening_socket(host, port)
    engine = Engine(settings)
    stopping = asyncio.Event()
    app = create_app(
        engine, token=token, script_dir=script_dir, engine_started=True, stopping=stopping
    )
    config = uvicorn.Config(
        app, host=host, port=port, log_level=log_level.lower(), timeout_graceful_shutdown=5
    )
    server = _stopping_server(config, stopping)

    async def serve() -> None:
        server.loop = asyncio.get_running_loop()
        # The engine starts here, not in the app's lifespan: an executor that cannot run
        # (no cluster, a node of another version) is one `error:` line and exit code 2, where
        # a failed lifespan would be uvicorn's "startup failed" with a traceback.
        try:
            await engine.start()
        except ExecutorError as exc:
            await engine.close()
            raise click.ClickException(" ".join(str(exc).split())) from None
        await server.serve(sockets=[sock])  # its lifespan closes the engine

    try:
        # uvicorn's own loop choice (uvloop when installed), as Server.run would make it.
        loop_factory = getattr(config, "get_loop_factory", None)
        if loop_factory is None:  # uvicorn before 0.36: it sets the event loop policy instead
            config.setup_event_loop()
        with asyncio.Runner(loop_factory=loop_factory() if loop_factory else None) as runner:
            runner.run(serve())
        if server.interrupted:
            # uvicorn raises the SIGINT again once it has stopped, but asyncio.Runner's own
            # handler turns it into a cancel of a task that may have ended already: then the
            # run returns as if nothing happened, and Ctrl-C would exit 0 instead of 130.
            raise KeyboardInterrupt
    finally:
        sock.close()
