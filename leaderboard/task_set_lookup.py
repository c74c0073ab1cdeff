"""What readiness and deploy bundles need from a task-set manifest, loaded by name or path.

The manifest itself (format, digest, packaged names) belongs to ``task_sets.manifest``.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from task_sets.manifest import load_task_set as load_manifest


class TaskSetSummary(BaseModel):
    """A task set's name, digest and task ids, in manifest order."""

    model_config = ConfigDict(frozen=True)

    task_set: str
    task_set_digest: str | None
    task_ids: tuple[str, ...]


def load_task_set(name_or_path: str | Path) -> TaskSetSummary:
    """``task_sets/<name>.json`` by name, or a manifest file; ValueError names what is wrong."""
    manifest = load_manifest(name_or_path)
    return TaskSetSummary(
        task_set=manifest.task_set,
        task_set_digest=manifest.task_set_digest,
        task_ids=tuple(t.task_id for t in manifest.tasks),
    )
