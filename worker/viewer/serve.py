"""``skillsbench-agentbeats view``: serve the web viewer (:mod:`worker.viewer.web`) over job
folders, on loopback unless told otherwise."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from serving.listen import listening_socket
from worker.api import is_loopback_host
from worker.viewer.lookup import DEFAULT_JOBS_DIR

DEFAULT_PORT = 9020


@click.command(
    help="A local web app over job folders: runs, their trials (filter, search, sort), each "
    "trial's actions, outputs, usage and verifier output, two agents or runs compared task by "
    "task; a running run updates live. JOBS: jobs folders (`run --jobs-dir`, the worker's "
    "--jobs-dir) or run folders; default jobs/local."
)
@click.argument("jobs", nargs=-1, type=click.Path(path_type=Path, file_okay=False))
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True,
    help="Port to listen on (0: any free port).",
)  # fmt: skip
@click.option(
    "--poll", type=click.FloatRange(min=0.05), default=1.0, show_default=True,
    help="Seconds between two looks at the folders for live updates.",
)  # fmt: skip
def view(jobs: tuple[Path, ...], host: str, port: int, poll: float) -> None:
    import uvicorn

    from worker.viewer.web import create_app

    roots = list(jobs) or [DEFAULT_JOBS_DIR]
    for root in roots:
        if not root.is_dir():
            raise ValueError(f"{root}: no such folder (give a jobs folder or a run folder)")
    if not is_loopback_host(host):
        click.echo(
            f"warning: serving on {host}: anyone who can reach it reads these trials "
            "(what the agents did and wrote); the default is 127.0.0.1",
            err=True,
        )
    sock = listening_socket(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    app = create_app(roots, poll_seconds=poll)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    click.echo(f"viewer at http://{shown}:{bound}/ over {', '.join(map(str, roots))}", err=True)
    try:
        asyncio.run(server.serve(sockets=[sock]))
    finally:
        sock.close()
