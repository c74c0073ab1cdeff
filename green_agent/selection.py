"""From a validated assessment config to the worker's task list for this shard.

The config model, manifests and sharding are owned by ``task_sets``; this module is the green
agent's one call site into them, turning their errors into :class:`RequestError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from green_agent.request import RequestError
from task_sets.manifest import TaskSetError, TaskSetManifest, is_path, load_task_set, shard
from worker.api import RunTask

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


@dataclass(frozen=True)
class Selection:
    """What one assessment (one shard) runs."""

    config: dict[str, Any]
    task_set: str
    task_set_digest: str
    tasks: list[RunTask]
    participant_id: str | None = None
    num_instances: int = 1
    task_ids: list[str] = field(default_factory=list)


def _int(config: dict[str, Any], key: str, default: int, minimum: int) -> int:
    value = config.get(key, default)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError(f"config.{key}", f"must be an integer, got {value!r}")
    if value < minimum:
        raise RequestError(f"config.{key}", f"must be >= {minimum}, got {value}")
    return value


def _bool(config: dict[str, Any], key: str, default: bool) -> bool:
    value = config.get(key, default)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        value = value.strip().lower() == "true"
    if not isinstance(value, bool):
        raise RequestError(f"config.{key}", f"must be a boolean, got {value!r}")
    return value


def _load_manifest(name: str) -> TaskSetManifest:
    # Only packaged sets by name: a request must never make the green agent read a path.
    if not _NAME.match(name) or is_path(name):
        raise RequestError("config.task_set", f"is not a task-set name: {name!r}")
    try:
        return load_task_set(name)
    except TaskSetError as exc:
        raise RequestError("config.task_set", str(exc)) from None


def select(config: dict[str, Any]) -> Selection:
    """Validate ``config`` and resolve the task set and this shard's tasks."""
    task_set = config.get("task_set")
    if not isinstance(task_set, str) or not task_set.strip():
        raise RequestError("config.task_set", "is required (a task-set name)")
    condition = config.get("condition", "with_skills")
    if condition != "with_skills":
        raise RequestError("config.condition", "must be 'with_skills' for public scoring")
    shard_index = _int(config, "shard_index", 0, 0)
    num_shards = _int(config, "num_shards", 1, 1)
    if shard_index >= num_shards:
        raise RequestError(
            "config.shard_index", f"must be < num_shards ({num_shards}), got {shard_index}"
        )
    num_instances = _int(config, "num_instances", 1, 1)
    allow_excluded = _bool(config, "allow_excluded_tasks", False)
    participant_id: str | None = None
    ids = config.get("participant_ids")
    if ids is not None:
        if not isinstance(ids, dict):
            raise RequestError("config.participant_ids", "must be an object of role -> UUID")
        agent_id = ids.get("agent")
        if agent_id is not None:
            if not isinstance(agent_id, str) or not _UUID.match(agent_id):
                raise RequestError("config.participant_ids.agent", "must be a UUID")
            participant_id = agent_id
    has_tasks = "tasks" in config
    has_ids = "task_ids" in config
    if has_tasks == has_ids:
        raise RequestError("config.tasks", "give exactly one of tasks:'all' or task_ids:[...]")
    manifest = _load_manifest(task_set.strip())
    entries = list(manifest.tasks)
    by_id = {entry.task_id: entry for entry in entries}
    if has_tasks:
        if config["tasks"] != "all":
            raise RequestError("config.tasks", "must be 'all' (or give task_ids)")
        chosen = entries
    else:
        wanted = config["task_ids"]
        if (
            not isinstance(wanted, list)
            or not wanted
            or not all(isinstance(t, str) for t in wanted)
        ):
            raise RequestError("config.task_ids", "must be a non-empty list of task ids")
        unknown = [t for t in wanted if t not in by_id]
        if unknown and not allow_excluded:
            raise RequestError("config.task_ids", f"unknown task ids: {', '.join(unknown)}")
        chosen = [by_id[t] for t in wanted if t in by_id]
    selected = shard(chosen, shard_index, num_shards)
    if not selected:
        raise RequestError("config.shard_index", "selects no tasks")
    tasks = [
        RunTask(
            task_id=entry.task_id,
            task_digest=entry.task_digest,
            category=entry.category,
            difficulty=entry.difficulty,
            tags=list(entry.tags),
        )
        for entry in selected
    ]
    normalized = dict(config)
    normalized.update(
        task_set=task_set.strip(),
        condition=condition,
        shard_index=shard_index,
        num_shards=num_shards,
        num_instances=num_instances,
        allow_excluded_tasks=allow_excluded,
    )
    return Selection(
        config=normalized,
        task_set=task_set.strip(),
        task_set_digest=manifest.task_set_digest,
        tasks=tasks,
        participant_id=participant_id,
        num_instances=num_instances,
        task_ids=[t.task_id for t in tasks],
    )
