"""``skillsbench-agentbeats green``.

Imports of a2a-sdk and uvicorn happen inside the command, so ``--help`` stays fast.
"""

from __future__ import annotations

import logging

import click


@click.command(name="green")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=9009, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--card-url",
    default=None,
    help="URL to advertise in the agent card (default: http://HOST:PORT/; bound to 0.0.0.0, "
    "this machine's address on its network).",
)
def green(host: str, port: int, card_url: str | None) -> None:
    """Run the green A2A assessment agent (JSON-RPC at /, A2A 1.0 and 0.3)."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    from green_agent.server import serve

    try:
        serve(host, port, card_url)
    except (ValueError, OSError) as exc:  # a bad setting, or a port we cannot hold
        raise click.ClickException(" ".join(str(exc).split())) from None
