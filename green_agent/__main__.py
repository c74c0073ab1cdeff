"""``python -m green_agent [--host] [--port] [--card-url]``: bad input or a port in use is one
line ``error: …`` on stderr and exit code 2 (the product CLI's style), never a traceback."""

import sys

import click

from green_agent.cli import green


def main(argv: list[str] | None = None) -> int:
    try:
        green.main(args=argv, prog_name="python -m green_agent", standalone_mode=False)
    except click.exceptions.Abort:
        return 130
    except click.ClickException as exc:
        text = " ".join(exc.format_message().split())
        if isinstance(exc, click.UsageError) and exc.ctx is not None:
            text += f" (see '{exc.ctx.command_path} --help')"
        click.echo(f"error: {text}", err=True)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
