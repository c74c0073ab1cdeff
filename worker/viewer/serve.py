"""Serve the web viewer (:mod:`worker.viewer.web`) over job folders, on loopback unless told
otherwise. The ``view`` command itself is in the composition root
(``skillsbench_agentbeats/view.py``): with ``--results`` it adds the leaderboard, which the worker
may not import."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import click

from serving.listen import listening_socket
from worker.api import is_loopback_host
from worker.viewer.web import Leaderboard

DEFAULT_PORT = 9020


def check_roots(roots: Sequence[Path]) -> None:
    """One-line ValueError for a JOBS argument that is not a folder."""
    for root in roots:
        if not root.is_dir():
            raise ValueError(f"{root}: no such folder (give a jobs folder or a run folder)")


def serve(
    roots: Sequence[Path],
    host: str,
    port: int,
    poll: float,
    leaderboard: Leaderboard | None = None,
    described: str = "",
) -> None:
    """Listen on ``host:port`` (0: any free port), say where on stderr, serve until stopped
    (the caller checked the folders: :func:`check_roots`)."""
    import uvicorn

    from worker.viewer.web import create_app

    loopback = is_loopback_host(host)
    if not loopback:
        click.echo(
            f"warning: serving on {host}: anyone who can reach it reads these trials "
            "(what the agents did and wrote); the default is 127.0.0.1",
            err=True,
        )
    sock = listening_socket(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    app = create_app(roots, poll_seconds=poll, leaderboard=leaderboard, loopback_only=loopback)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    click.echo(
        f"viewer at http://{shown}:{bound}/ over {', '.join(map(str, roots))}{described}",
        err=True,
    )
    try:
        asyncio.run(server.serve(sockets=[sock]))
    finally:
        sock.close()
