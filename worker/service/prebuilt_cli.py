"""`images build-tasks`: build (and push) task environment images, write the prebuilt map."""

from __future__ import annotations

import json
from pathlib import Path

import click

from serving.output import prepare_output_file
from worker.sandbox.settings import base_image_map_option
from worker.service.cli import task_cache_option


@click.command("build-tasks")
@click.option("--tasks-dir", type=click.Path(path_type=Path, file_okay=False), default=None)
@click.option("--task-set", default=None, help="A packaged task set name or a manifest file.")
@task_cache_option()
@click.option("--task-id", "task_ids", multiple=True, help="Only these tasks (repeatable).")
@click.option("--platform", default="linux/amd64", show_default=True)
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("prebuilt_images.json"),
    show_default=True,
)
@click.option("--push", is_flag=True, help="Push each image to --registry and pin its digest.")
@click.option("--registry", default=None, help="Registry host (and namespace), e.g. ghcr.io/org.")
@click.option("--repository", default="skillsbench-task-env", show_default=True)
@base_image_map_option()
def build_tasks(
    tasks_dir: Path | None,
    task_set: str | None,
    task_cache: Path | None,
    task_ids: tuple[str, ...],
    platform: str,
    output: Path,
    push: bool,
    registry: str | None,
    repository: str,
    base_image_map: dict[str, str],
) -> None:
    """Build each selected task's with-skills environment image; write task id -> ref@digest."""
    if push and not registry:
        raise click.UsageError("--push needs --registry")
    if registry and not push:
        raise click.UsageError("--registry is only used with --push")
    from task_sets.task import load_task
    from worker.runs.catalog import check_task_folders, resolve_tasks_dir, selected_manifest
    from worker.sandbox._docker.client import docker_client
    from worker.sandbox.prebuilt import build_task_images, prebuilt_map
    from worker.sandbox.settings import base_image_map_from_env

    root = resolve_tasks_dir(tasks_dir, task_set, task_cache)
    document = selected_manifest(root, task_set, task_ids)
    if task_set is not None:
        check_task_folders(document, root, task_set)
    tasks = []
    for entry in document["tasks"]:
        folder = root / entry["task_id"]
        if not folder.is_dir():
            raise ValueError(f"task {entry['task_id']!r} has no folder in {root}")
        tasks.append(load_task(folder))
    try:
        client = docker_client()
    except Exception as exc:
        raise ValueError(str(exc)) from None
    built = build_task_images(
        client,
        tasks,
        platform=platform,
        registry=registry if push else None,
        repository=repository,
        progress=lambda line: click.echo(line, err=True),
        base_map={**base_image_map_from_env(), **base_image_map},
    )
    prepare_output_file(output).write_text(
        json.dumps(prebuilt_map(built), indent=2, sort_keys=True) + "\n"
    )
    click.echo(f"wrote {output} ({len(built)} images)")
