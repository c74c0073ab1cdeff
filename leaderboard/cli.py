"""``skillsbench-agentbeats leaderboard …``: query results files, validate them, render a report.

Heavy imports (duckdb) happen inside the commands so ``--help`` stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from leaderboard.rows import AGENTBEATS_UUID_PATTERN
from serving.invocation import command_prefix
from serving.output import prepare_output_file

if TYPE_CHECKING:
    from leaderboard.report import TrialLinks

_QUERY_CHOICES = ("overall", "by_category", "by_difficulty", "all")
_FORMAT_CHOICES = ("table", "json", "csv", "markdown")


def _participant(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not AGENTBEATS_UUID_PATTERN.match(value.strip()):
        raise click.BadParameter(f"{value!r} is not an AgentBeats UUID")
    return value.strip() if value else None


_results_option = click.option(
    "--results",
    "results",
    multiple=True,
    required=True,
    metavar="GLOB",
    help="Results files: a glob (quote it), a file or a folder; repeatable.",
)
_participant_option = click.option(
    "--participant",
    callback=_participant,
    metavar="UUID",
    help="Agent UUID for files without a top-level participant (gateway exports, envelopes).",
)


@click.group(name="leaderboard")
def leaderboard() -> None:
    """Query results files, validate them, and render the leaderboard report."""


@leaderboard.command()
@_results_option
@click.option(
    "--query", "query", type=click.Choice(_QUERY_CHOICES), default="all", show_default=True
)
@click.option(
    "--format", "fmt", type=click.Choice(_FORMAT_CHOICES), default="table", show_default=True
)
@_participant_option
def query(results: tuple[str, ...], query: str, fmt: str, participant: str | None) -> None:
    """Run the leaderboard queries over results files, as AgentBeats does."""
    from leaderboard.formatting import render
    from leaderboard.query import QUERY_NAMES, run_queries

    names = list(QUERY_NAMES) if query == "all" else [query]
    click.echo(render(run_queries(results, names, participant), fmt), nl=False)


@leaderboard.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--contract",
    is_flag=True,
    help="Also check every row against the full public row contract.",
)
def validate(files: tuple[Path, ...], contract: bool) -> int:
    """Check results files as the leaderboard repository's CI does; list every violation."""
    from leaderboard.validate import validate_results_file

    failed = 0
    for path in files:
        violations = validate_results_file(path, contract=contract)
        if violations:
            failed += 1
            for violation in violations:
                click.echo(f"{path}: {violation}", err=True)
        else:
            click.echo(f"ok: {path}")
    if failed:
        click.echo(f"{failed} of {len(files)} file(s) invalid", err=True)
        return 1
    return 0


@leaderboard.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The submittable results file to write (e.g. results/<owner>-<date>.json).",
)
@click.option("--agent", metavar="UUID", help="The agent's AgentBeats id (participants.agent).")
@click.option("--green", metavar="UUID", help="The green agent's AgentBeats id (optional).")
@click.option(
    "--scenario",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A scenario (json5) whose metadata.agentbeats_ids name the agent (and green).",
)
@click.option(
    "--num-shards",
    type=int,
    help="How many shards the run had: fewer files given means shards are missing.",
)
@click.option(
    "--allow-partial",
    is_flag=True,
    help="Write a 'partial' file when shards failed or are missing (the leaderboard ignores it).",
)
@click.option("--force", is_flag=True, help="Replace an existing, different output file.")
def aggregate(
    files: tuple[Path, ...],
    output: Path,
    agent: str | None,
    green: str | None,
    scenario: Path | None,
    num_shards: int | None,
    allow_partial: bool,
    force: bool,
) -> None:
    """Merge shard results files (gateway exports, assess/run --output) into one submittable file."""
    from leaderboard.aggregate import agent_ids_from_scenario, write_aggregate
    from leaderboard.aggregate import aggregate as merge

    if scenario is not None:
        ids = agent_ids_from_scenario(scenario)
        agent = agent or ids["agent"]
        green = green or ids.get("green")
    result = merge(
        list(files), agent=agent, green=green, num_shards=num_shards, allow_partial=allow_partial
    )
    write_aggregate(result, output, force=force)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(
        f"wrote {output}: status {result.status}, {result.shards} shard(s), {result.rows} row(s)"
    )
    click.echo(f"next: {command_prefix()} leaderboard validate {output}")


def report_options(func: Any) -> Any:
    """The ``report`` command's options; the composition root's ``report`` (which adds
    ``--jobs``, ``skillsbench_agentbeats/leaderboard_cli.py``) takes the same."""
    options = [
        _results_option,
        click.option(
            "--output",
            type=click.Path(dir_okay=False, path_type=Path),
            default=Path("leaderboard.html"),
            show_default=True,
        ),
        _participant_option,
        click.option("--title", default="SkillsBench leaderboard", show_default=True),
        click.option(
            "--labels",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            help='Label map: a JSON object {"<agent UUID>": "label"}; labels show beside the ids.',
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def write_report(
    results: tuple[str, ...],
    output: Path,
    participant: str | None,
    title: str,
    labels: Path | None,
    trial_links: TrialLinks | None = None,
) -> None:
    """The page, written to ``output``; ``trial_links``: trial id -> its transcript's address."""
    from leaderboard.report import build_report, load_labels

    names = load_labels(labels) if labels is not None else None
    html = build_report(
        results, participant=participant, title=title, labels=names, trial_links=trial_links
    )
    prepare_output_file(output).write_text(html, encoding="utf-8")
    click.echo(f"wrote {output}")


@leaderboard.command()
@report_options
def report(
    results: tuple[str, ...],
    output: Path,
    participant: str | None,
    title: str,
    labels: Path | None,
) -> None:
    """Write one static HTML page: tables, pass-rate charts, confidence intervals, per-task rows."""
    write_report(results, output, participant, title, labels)


@leaderboard.command()
@click.argument("payload", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--participant", "agent", required=True, help="participants.agent: UUID or URL.")
@click.option(
    "--task-set",
    "task_set",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Task-set manifest supplying task_set, digest and task metadata rows lack.",
)
def normalize(payload: Path, agent: str, task_set: Path | None) -> None:
    """Print the public envelope for a worker payload (RunStatus JSON, rows, or an envelope)."""
    from leaderboard.normalize import RowContext, build_envelope

    data: Any = json.loads(payload.read_text())
    context = RowContext.from_manifest(json.loads(task_set.read_text())) if task_set else None
    envelope = build_envelope({"agent": agent}, data, context)
    click.echo(json.dumps(envelope.public_dict(), indent=2))


@leaderboard.command()
@click.option(
    "--task-set",
    "task_set",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Task-set manifest whose tasks the synthetic rows cover.",
)
@click.option("--output", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--seed", type=int, default=7, show_default=True)
def sample(task_set: Path, output: Path, seed: int) -> None:
    """Write synthetic published-shape results files (for demos, tests and benchmarks)."""
    from leaderboard.sample import write_sample

    for path in write_sample(json.loads(task_set.read_text()), output, seed=seed):
        click.echo(f"wrote {path}")
