"""The tasks a worker can run: task folders under one tasks dir, loaded once; which tasks dir a
command uses (a published set's fetched copy when there is one, ``task-set fetch``)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from serving.invocation import command_prefix
from task_sets.task import Task, TaskError, discover_tasks, load_task
from task_sets.task_cache import fetched_tasks_dir

TASKS_DIR_VAR = "SKILLSBENCH_TASKS_DIR"


class UnknownTask(ValueError):
    """A requested task id that has no (valid) folder in the tasks dir."""


def default_tasks_dir() -> Path:
    """``$SKILLSBENCH_TASKS_DIR``, else the repository's ``tasks/``, else ``./tasks``."""
    env = os.environ.get(TASKS_DIR_VAR)
    if env:
        return Path(env)
    repo_tasks = Path(__file__).resolve().parents[2] / "tasks"  # worker/runs/catalog.py
    return repo_tasks if repo_tasks.is_dir() else Path("tasks")


def resolve_tasks_dir(
    value: Path | None, task_set: str | None = None, task_cache: Path | None = None
) -> Path:
    """``value``, else the tasks ``task-set fetch`` put in ``task_cache`` (default: the user's
    cache) for ``task_set`` unless ``$SKILLSBENCH_TASKS_DIR`` is set, else
    :func:`default_tasks_dir`; it must exist."""
    tasks_dir = value
    if tasks_dir is None and task_set is not None and not os.environ.get(TASKS_DIR_VAR):
        from task_sets.manifest import load_task_set

        manifest = load_task_set(task_set)
        tasks_dir = fetched_tasks_dir(manifest.task_set, manifest.task_set_digest, task_cache)
    tasks_dir = tasks_dir or default_tasks_dir()
    if not tasks_dir.is_dir():
        raise ValueError(f"tasks dir {tasks_dir} does not exist (use --tasks-dir)")
    return tasks_dir


SHOWN_IDS = 5


def check_task_folders(manifest: dict[str, Any], folder: Path, task_set: str) -> None:
    """Refuse (ValueError, one line) a selection whose tasks have no folder in ``folder``,
    before anything runs; for a published set, say how to fetch them."""
    ids = [str(entry["task_id"]) for entry in manifest["tasks"]]
    missing = [tid for tid in ids if not (folder / tid / "task.toml").is_file()]
    if not missing:
        return
    shown = ", ".join(missing[:SHOWN_IDS])
    more = f" and {len(missing) - SHOWN_IDS} more" if len(missing) > SHOWN_IDS else ""
    if manifest.get("source_registry"):
        how = (
            f"get them with `{command_prefix()} task-set fetch {shlex.quote(task_set)}` "
            "(or give --tasks-dir)"
        )
    else:
        how = "give the --tasks-dir that holds them"
    raise ValueError(
        f"task set {manifest['task_set']!r}: {len(missing)} of its {len(ids)} tasks have no "
        f"task folder in {folder}: {shown}{more}; {how}"
    )


def selected_manifest(
    tasks_dir: Path, task_set: str | None, task_ids: Sequence[str]
) -> dict[str, Any]:
    """The task-set manifest document a command line selects: a packaged task set (or manifest
    file), narrowed to ``task_ids`` when given; or a manifest built from ``task_ids`` alone."""
    from task_sets.manifest import build_manifest, load_task_set

    if task_set is None and not task_ids:
        raise ValueError("give --task-set or --task-id")
    if task_set is None:
        # A plain run of task folders: [metadata] category/difficulty may be missing (null).
        return build_manifest(
            tasks_dir, "local", task_ids=list(task_ids), require_metadata=False
        ).document()
    document = load_task_set(task_set).document()
    if task_ids:
        unknown = set(task_ids) - {entry["task_id"] for entry in document["tasks"]}
        if unknown:
            raise ValueError(f"task set {task_set!r} has no task {sorted(unknown)[0]!r}")
        document["tasks"] = [e for e in document["tasks"] if e["task_id"] in task_ids]
    return document


class TaskCatalog:
    def __init__(self, tasks_dir: Path) -> None:
        self.tasks_dir = tasks_dir
        self._cache: dict[str, Task] = {}

    def get(self, task_id: str) -> Task:
        task = self._cache.get(task_id)
        if task is not None:
            return task
        if "/" in task_id or task_id in ("", ".", ".."):
            raise UnknownTask(f"unknown task {task_id!r}")
        folder = self.tasks_dir / task_id
        try:
            found = (folder / "task.toml").is_file()
        except (OSError, ValueError):  # a name the file system refuses (too long, NUL byte)
            found = False
        if not found:
            raise UnknownTask(
                f"unknown task {task_id[:80]!r}: no task folder in {self.tasks_dir} (a published "
                "task set's tasks come with `skillsbench-agentbeats task-set fetch NAME`)"
            )
        try:
            task = load_task(folder)
        except (TaskError, OSError) as exc:
            raise UnknownTask(f"task {task_id!r} cannot be loaded: {exc}") from None
        self._cache[task_id] = task
        return task

    def ids(self) -> list[str]:
        return list(discover_tasks(self.tasks_dir))
