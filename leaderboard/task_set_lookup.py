"""Find a task-set manifest by name (``task_sets/<name>.json``) or by path."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

PACKAGED_TASK_SETS = Path(__file__).resolve().parent.parent / "task_sets"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class TaskSetSummary(BaseModel):
    """What readiness and deploy bundles need from a manifest: its name, digest and task ids."""

    model_config = ConfigDict(frozen=True)

    task_set: str
    task_set_digest: str | None
    task_ids: tuple[str, ...]


def load_task_set(name_or_path: str | Path) -> TaskSetSummary:
    """Load a manifest from a file path, else ``task_sets/<name>.json``; ValueError if neither."""
    path = Path(name_or_path)
    if not path.is_file():
        name = str(name_or_path)
        if not _NAME.match(name):
            raise ValueError(f"task set {name!r} is neither a file nor a task-set name")
        path = PACKAGED_TASK_SETS / f"{name}.json"
        if not path.is_file():
            raise ValueError(f"task set {name!r} not found (looked for {path.name} in task_sets/)")
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"task set {path.name} is not valid JSON: {exc}") from exc
    tasks = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(tasks, list) or not all(
        isinstance(t, dict) and isinstance(t.get("task_id"), str) for t in tasks
    ):
        raise ValueError(f"task set {path.name} has no tasks[].task_id list")
    return TaskSetSummary(
        task_set=str(data.get("task_set") or path.stem),
        task_set_digest=data.get("task_set_digest"),
        task_ids=tuple(t["task_id"] for t in tasks),
    )
