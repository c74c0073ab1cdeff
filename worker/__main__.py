"""``python -m worker …``: the worker HTTP service (same options as ``skillsbench-agentbeats worker``).

The worker's own entry point: it runs the worker's click command without the product's CLI, with
the same error policy (bad input: one line on stderr and exit code 2, never a traceback).
"""

import sys

import click

from worker.service.cli import worker


def main(argv: list[str] | None = None) -> int:
    try:
        worker.main(args=argv, prog_name="python -m worker", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except click.ClickException as exc:  # the product CLI's style: one line, exit code 2
        text = " ".join(exc.format_message().split())
        if isinstance(exc, click.UsageError) and exc.ctx is not None:
            text += f" (see '{exc.ctx.command_path} --help')"
        click.echo(f"error: {text}", err=True)
        return 2
    except (ValueError, OSError) as exc:
        click.echo(f"error: {' '.join(str(exc).split()) or type(exc).__name__}", err=True)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
