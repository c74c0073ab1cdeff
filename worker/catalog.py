"""The tasks a worker can run: task folders under one tasks dir, loaded once."""

from __future__ import annotations

import os
from pathlib import Path

from task_sets.task import Task, TaskError, discover_tasks, load_task

TASKS_DIR_VAR = "SKILLSBENCH_TASKS_DIR"


class UnknownTask(ValueError):
    """A requested task id that has no (valid) folder in the tasks dir."""


def default_tasks_dir() -> Path:
    """``$SKILLSBENCH_TASKS_DIR``, else the repository's ``tasks/``, else ``./tasks``."""
    env = os.environ.get(TASKS_DIR_VAR)
    if env:
        return Path(env)
    repo_tasks = Path(__file__).resolve().parent.parent / "tasks"
    return repo_tasks if repo_tasks.is_dir() else Path("tasks")


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
        if not (folder / "task.toml").is_file():
            raise UnknownTask(f"unknown task {task_id!r}: no task folder in {self.tasks_dir}")
        try:
            task = load_task(folder)
        except TaskError as exc:
            raise UnknownTask(f"task {task_id!r} cannot be loaded: {exc}") from None
        self._cache[task_id] = task
        return task

    def ids(self) -> list[str]:
        return list(discover_tasks(self.tasks_dir))
