"""The tasks a worker can run: task folders under one tasks dir, loaded once."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from task_sets.task import Task, TaskError, discover_tasks, load_task

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


def resolve_tasks_dir(value: Path | None) -> Path:
    """``value``, else :func:`default_tasks_dir`; it must exist."""
    tasks_dir = value or default_tasks_dir()
    if not tasks_dir.is_dir():
        raise ValueError(f"tasks dir {tasks_dir} does not exist (use --tasks-dir)")
    return tasks_dir


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
