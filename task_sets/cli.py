"""``skillsbench-agentbeats task-set …`` and ``config check``.

Bad input ends as one ``Error: …`` line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import functools
import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import click

from serving.invocation import command_prefix
from serving.output import prepare_output_file
from task_sets.config import CONFIG_KEYS, parse_config, select_tasks
from task_sets.digest import task_set_digest
from task_sets.fetch import fetch_task_set
from task_sets.manifest import (
    BuildReport,
    build_manifest,
    dumps_manifest,
    is_path,
    load_task_set,
    packaged_task_sets,
    read_json,
    shard,
    verify_manifest,
)
from task_sets.task_cache import CACHE_DIR_VAR, default_cache_dir

F = TypeVar("F", bound=Callable[..., Any])


def _one_line_errors(func: F) -> F:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (ValueError, OSError) as exc:
            text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
            raise click.ClickException(text or type(exc).__name__) from None

    return cast(F, wrapper)


def _manifest_file(name_or_path: str) -> Path:
    if is_path(name_or_path) or Path(name_or_path).is_file():
        return Path(name_or_path)
    known = packaged_task_sets()
    if name_or_path not in known:
        raise ValueError(
            f"unknown task set {name_or_path!r} (known: {', '.join(known)}; or give a path)"
        )
    return known[name_or_path]


MANIFEST_ARG = click.argument("manifest", metavar="NAME_OR_FILE")


@click.group(name="task-set")
def task_set() -> None:
    """Build, digest, verify, shard and fetch task sets (skillsbench.agentbeats.task_set.v1)."""


@task_set.command()
@click.argument("tasks_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--name", "name", required=True, help="Task set name recorded in the manifest.")
@click.option(
    "--task-id",
    "task_ids",
    multiple=True,
    help="Only these tasks, in this order (repeatable). Default: every direct child task, sorted.",
)
@click.option(
    "--allow-excluded", is_flag=True, help="Let excluded tasks in (never for public sets)."
)
@click.option(
    "--allow-refused",
    is_flag=True,
    help="Exit 0 although some task folders were refused (they are left out either way).",
)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write here.")
@_one_line_errors
def build(
    tasks_dir: Path,
    name: str,
    task_ids: tuple[str, ...],
    allow_excluded: bool,
    allow_refused: bool,
    output: Path | None,
) -> None:
    """Build a manifest from the task folders in TASKS_DIR.

    Folders that do not load are left out and listed on stderr with their reason; the exit
    status is then 1 unless --allow-refused."""
    report = BuildReport()
    manifest = build_manifest(
        tasks_dir,
        name,
        task_ids=list(task_ids) or None,
        allow_excluded_tasks=allow_excluded,
        report=report,
    )
    for tid, warnings in report.warnings.items():
        for warning in warnings:
            click.echo(f"warning: {tid}: {warning}", err=True)
    for tid, reason in report.refused.items():
        click.echo(f"refused: {tid}: {reason}", err=True)
    text = dumps_manifest(manifest)
    if output is None:
        click.echo(text, nl=False)
    else:
        prepare_output_file(output).write_text(text, encoding="utf-8")
        click.echo(
            f"wrote {output}: {manifest.task_count} tasks, {manifest.task_set_digest}", err=True
        )
    if report.refused and not allow_refused:
        click.echo(
            f"error: {len(report.refused)} task folder(s) refused (listed above) and left out "
            f"of the {manifest.task_count} built; --allow-refused accepts the set without them",
            err=True,
        )
        raise SystemExit(1)


@task_set.command()
@MANIFEST_ARG
@_one_line_errors
def digest(manifest: str) -> None:
    """Compute the task_set_digest of a manifest from its content (the stored value is ignored)."""
    file = _manifest_file(manifest)
    data = read_json(file)
    if not isinstance(data, dict):
        raise ValueError(f"{file}: a task-set manifest must be a JSON object")
    click.echo(task_set_digest(data))


@task_set.command()
@MANIFEST_ARG
@click.option(
    "--tasks-dir",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="Also check that every task id is a direct child folder here.",
)
@click.option(
    "--check-task-digests",
    is_flag=True,
    help="With --tasks-dir: also compare each folder's task_digest and metadata.",
)
@_one_line_errors
def verify(manifest: str, tasks_dir: Path | None, check_task_digests: bool) -> None:
    """Verify a manifest: schema, digest, task ids (and task folders with --tasks-dir)."""
    if check_task_digests and tasks_dir is None:
        raise click.UsageError("--check-task-digests needs --tasks-dir")
    file = _manifest_file(manifest)
    data = read_json(file)
    problems = verify_manifest(
        data, source=str(file), tasks_dir=tasks_dir, check_task_digests=check_task_digests
    )
    if problems:
        raise ValueError(f"{file}: " + "; ".join(problems))
    click.echo(f"ok: {data['task_set']} ({data['task_count']} tasks, {data['task_set_digest']})")


@task_set.command(name="shard")
@MANIFEST_ARG
@click.option("--shard-index", type=int, required=True)
@click.option("--num-shards", type=int, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the shard's task entries as JSON.")
@_one_line_errors
def shard_command(manifest: str, shard_index: int, num_shards: int, as_json: bool) -> None:
    """Print the task ids of one shard (positions i with i % num_shards == shard_index)."""
    loaded = load_task_set(manifest)
    entries = shard(loaded.tasks, shard_index, num_shards)
    if as_json:
        click.echo(json.dumps([entry.model_dump() for entry in entries], indent=2))
    else:
        for entry in entries:
            click.echo(entry.task_id)


@task_set.command()
@MANIFEST_ARG
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help=f"Where fetched task sets live (default: ${CACHE_DIR_VAR}, else "
    "~/.cache/skillsbench-agentbeats/task-sets, or under $XDG_CACHE_HOME).",
)
@click.option(
    "--source",
    "source_url",
    metavar="URL",
    default=None,
    help="Fetch from this git repository (a mirror or a local clone) instead of the one the "
    "manifest's source_registry names; the pinned ref and the checks stay the same.",
)
@click.option("--force", is_flag=True, help="Fetch again even when the cache holds the set.")
@_one_line_errors
def fetch(manifest: str, cache_dir: Path | None, source_url: str | None, force: bool) -> None:
    """Fetch the tasks of a published task set from its source registry at the pinned ref.

    They are checked against the manifest (every task id; each task_digest when the manifest
    names an algorithm we know) and put in the cache, where `run --task-set` finds them.
    Prints the tasks folder."""
    loaded = load_task_set(manifest)
    result = fetch_task_set(loaded, cache_dir or default_cache_dir(), url=source_url, force=force)
    done = "fetched" if result.fetched else "already fetched"
    tasks = f"{loaded.task_count} task{'' if loaded.task_count == 1 else 's'}"
    click.echo(
        f"{done} {loaded.task_set}: {tasks} from {result.source.url} at "
        f"{result.source.pin} (commit {result.commit[:12]})",
        err=True,
    )
    if not result.digests_checked:
        click.echo(
            "task digests not checked: the manifest names no task_digest_algorithm we know "
            "(the published sets' is not public); task ids checked",
            err=True,
        )
    cache_flag = f" --task-cache {shlex.quote(str(cache_dir))}" if cache_dir is not None else ""
    click.echo(
        f"next: {command_prefix()} run --task-set {shlex.quote(manifest)}{cache_flag} "
        "--agent oracle "
        "--environment docker",
        err=True,
    )
    click.echo(result.tasks_dir)


@click.group(name="config")
def config() -> None:
    """Validate assessment configs."""


def _keys_help() -> str:
    return "\n".join(
        f"  {key}: {kind}, default {default}".replace("`", "")
        for key, (kind, default, _) in CONFIG_KEYS.items()
    )


@config.command(epilog="Keys:\n\n\b\n" + _keys_help())
@click.argument("config_text", metavar="JSON_OR_@FILE")
@click.option(
    "--manifest",
    help="Task-set manifest (name or file) to select from instead of the packaged set named by "
    "the config.",
)
@click.option(
    "--tasks-dir",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="Tasks folder, needed only to load excluded tasks the config allows.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole selection as JSON.")
@_one_line_errors
def check(config_text: str, manifest: str | None, tasks_dir: Path | None, as_json: bool) -> None:
    """Validate a config and print the task ids it selects for its shard."""
    if config_text.startswith("@"):
        config_text = Path(config_text[1:]).read_text(encoding="utf-8")
    parsed = parse_config(config_text)
    selection = select_tasks(
        parsed,
        manifest=load_task_set(manifest) if manifest else None,
        tasks_dir=tasks_dir,
    )
    if as_json:
        body = {"config": parsed.to_wire(), "selection": selection.model_dump(mode="json")}
        click.echo(json.dumps(body, indent=2))
    else:
        for task_id in selection.task_ids:
            click.echo(task_id)
