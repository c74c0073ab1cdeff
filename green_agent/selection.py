"""From the request's config to the worker's task list for this shard.

The config model, manifests and sharding are owned by ``task_sets`` (:mod:`task_sets.config`);
this module is the green agent's one call site into them. Their :class:`ConfigError` becomes a
:class:`RequestError` on ``config.<field>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from green_agent.request import RequestError
from task_sets.config import ConfigError, parse_config, select_tasks
from worker.api import RunTask


@dataclass(frozen=True)
class Selection:
    """What one assessment (one shard) runs."""

    config: dict[str, Any]  # the validated config, as sent to the worker
    task_set: str
    task_set_digest: str
    tasks: list[RunTask]
    participant_id: str | None = None
    num_instances: int = 1


def select(raw_config: dict[str, Any]) -> Selection:
    """Validate ``raw_config`` and resolve the task set and this shard's tasks."""
    try:
        config = parse_config(raw_config)
        selection = select_tasks(config)
    except ConfigError as exc:
        raise RequestError(f"config.{exc.field}", exc.rule) from None
    tasks = [
        RunTask(
            task_id=entry.task_id,
            task_digest=entry.task_digest,
            category=entry.category,
            difficulty=entry.difficulty,
            tags=list(entry.tags),
        )
        for entry in selection.tasks
    ]
    return Selection(
        config=config.to_wire(),
        task_set=selection.task_set,
        task_set_digest=selection.task_set_digest,
        tasks=tasks,
        participant_id=config.participant_ids.agent if config.participant_ids else None,
        num_instances=selection.num_instances,
    )
