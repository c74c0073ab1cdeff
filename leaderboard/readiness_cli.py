"""``skillsbench-agentbeats readiness validate`` and the helpers the readiness commands share.

The deployment commands (``readiness assemble``, ``images``, ``deploy-bundle``, ``ghcr-preflight``,
``manifests``) are AgentBeats tooling in :mod:`integrations.agentbeats.cli`; the composition root
(:mod:`skillsbench_agentbeats.commands`) puts ``validate`` and ``assemble`` in one group.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from leaderboard.findings import Finding
from serving.output import prepare_output_file

if TYPE_CHECKING:
    from leaderboard.query_check import QueryRunner

FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
DIR = click.Path(exists=True, file_okay=False, path_type=Path)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path.name} is not valid JSON: {exc}") from exc


def write_json(path: Path, data: Any) -> None:
    prepare_output_file(path)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def report(findings: Sequence[Finding], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps([f.model_dump() for f in findings], indent=2))
    else:
        for finding in findings:
            click.echo(finding.render())


def task_set_loader(task_set_file: Path | None) -> Any:
    from leaderboard.task_set_lookup import TaskSetSummary, load_task_set

    def load(name: str) -> TaskSetSummary:
        if task_set_file is None:
            return load_task_set(name)
        summary = load_task_set(task_set_file)
        if summary.task_set != name:
            raise ValueError(f"--task-set-file holds {summary.task_set!r}, not {name!r}")
        return summary

    return load


def query_runner(queries_dir: Path | None) -> QueryRunner:
    from leaderboard.query_check import QueryRunner, load_queries

    return QueryRunner(load_queries(queries_dir))


# --- readiness -----------------------------------------------------------------------------


queries_dir_option = click.option(
    "--queries-dir",
    type=DIR,
    help="Directory with overall.sql, by_category.sql, by_difficulty.sql.",
)
task_set_file_option = click.option(
    "--task-set-file", type=FILE, help="Task-set manifest to use instead of task_sets/<name>.json."
)


@click.command("validate")
@click.option("--evidence", "evidence_path", type=FILE, required=True, help="Evidence JSON.")
@queries_dir_option
@task_set_file_option
@click.option("--json", "as_json", is_flag=True, help="Print findings as JSON.")
def validate(
    evidence_path: Path, queries_dir: Path | None, task_set_file: Path | None, as_json: bool
) -> None:
    """Check evidence against every readiness rule; list every violation with its JSON path."""
    from leaderboard.evidence import RULES
    from leaderboard.readiness import validate_evidence

    findings = validate_evidence(
        read_json(evidence_path),
        base_dir=evidence_path.parent,
        queries=query_runner(queries_dir),
        task_set_loader=task_set_loader(task_set_file),
    )
    if findings:
        report(findings, as_json)
        click.echo(f"{len(findings)} readiness violation(s) in {evidence_path.name}", err=True)
        sys.exit(1)
    if as_json:
        click.echo("[]")
    else:
        click.echo(f"ok: {evidence_path.name} passes all {len(RULES)} readiness rules")
