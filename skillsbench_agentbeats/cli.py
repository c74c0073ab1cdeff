"""The ``skillsbench-agentbeats`` command.

Sub-commands are imported lazily so that ``--help`` and light commands (``task-set digest``) do not
pay for a2a-sdk, docker or litellm imports. Each component owns its commands in its own ``cli``
module (commands made of several components' parts are grouped in
:mod:`skillsbench_agentbeats.commands`); this table is the only place that names them. A module
that fails to import fails the command loudly.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Final

import click

# name -> ("module", "attribute", "one-line help")
COMMANDS: dict[str, tuple[str, str, str]] = {
    "task-set": (
        # task_sets' group, with `check` (which needs the worker) added by the composition root
        "skillsbench_agentbeats.task_set_check",
        "task_set",
        "Build, digest, verify, shard and check task-set manifests.",
    ),
    "config": ("task_sets.cli", "config", "Validate an assessment config."),
    "worker": ("worker.service.cli", "worker", "Run the worker HTTP service."),
    "run": (
        "skillsbench_agentbeats.run",
        "run",
        "Run a task set locally through the worker engine.",
    ),
    "agents": ("worker.acp.cli", "agents", "List manifest agents, or show one."),
    "trials": ("worker.viewer.cli", "trials", "Inspect trials of a jobs directory."),
    "view": (
        "skillsbench_agentbeats.view",
        "view",
        "Browse runs and trials in a local web app (live).",
    ),
    "green": ("green_agent.cli", "green", "Run the green A2A assessment agent."),
    "assess": (
        "skillsbench_agentbeats.assess",
        "assess",
        "Run an assessment the way the AgentBeats gateway does.",
    ),
    "purple": ("purple_agent.cli", "purple", "Run a purple (participant) agent."),
    "leaderboard": (
        "skillsbench_agentbeats.leaderboard_cli",
        "leaderboard",
        "Query results files and render reports.",
    ),
    "readiness": (
        "skillsbench_agentbeats.commands",
        "readiness",
        "Validate or assemble public-readiness evidence.",
    ),
    "images": (
        "skillsbench_agentbeats.commands",
        "images",
        "Image evidence, task environment images and the local base image.",
    ),
    "deploy-bundle": (
        "integrations.agentbeats.cli",
        "deploy_bundle",
        "Write a validated deploy bundle.",
    ),
    "ghcr-preflight": (
        "integrations.agentbeats.cli",
        "ghcr_preflight",
        "Check a GHCR token's package scopes.",
    ),
    "manifests": (
        "skillsbench_agentbeats.commands",
        "manifests",
        "Static checks of Amber manifests.",
    ),
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module_name, attr, _ = entry
        # A missing module or attribute is a broken build: fail loudly, never hide it.
        command = getattr(importlib.import_module(module_name), attr)
        if not isinstance(command, click.Command):
            raise TypeError(f"{module_name}.{attr} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="skillsbench-agentbeats")
def cli() -> None:
    """Score AI agents on SkillsBench through AgentBeats."""


EXIT_FAILED: Final = 1  # the command ran, and what it checked or ran failed
EXIT_BAD_INPUT: Final = 2  # the command could not run: bad option, config, file or URL
EXIT_INTERRUPTED: Final = 130


def main(argv: list[str] | None = None) -> Any:
    """Run the CLI. One error style in every command: bad input (a click usage error, a
    ``ClickException``, a ``ValueError`` or ``OSError``) is ONE line ``error: …`` on stderr and
    exit code 2, never a traceback; a command whose run or check failed exits 1 (its own
    lines say why); an interrupt exits 130."""
    try:
        result = cli.main(args=argv, standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:
        click.echo(f"error: {click_error_line(exc)}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except (ValueError, OSError) as exc:
        click.echo(f"error: {_one_line(exc)}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
    if isinstance(result, int) and result != 0:
        sys.exit(result)
    return result


def click_error_line(exc: click.ClickException) -> str:
    """A click error in one line; a usage error names the command's ``--help``."""
    text = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    if isinstance(exc, click.UsageError) and ctx is not None:
        text += f" (see '{ctx.command_path} --help')"
    return text


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(part.strip() for part in text.splitlines() if part.strip())
