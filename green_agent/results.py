"""Public results: worker rows through the shared normalizer, gap rows, and the envelope.

Nothing a worker sends leaves the green agent except through :func:`public_rows`, so
worker-private meta (``_private_*``, proof refs, local paths) never reaches AgentBeats.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from green_agent.selection import Selection
from leaderboard.rows import ROW_KEYS, Envelope, FailureCategory, PublicRow
from worker.api import RunTask


def new_trial_id(task_id: str, kind: str = "agentbeats") -> str:
    return f"{task_id}__{kind}__{uuid.uuid4().hex[:8]}"


def failure_row(
    task: RunTask, selection: Selection, category: FailureCategory, *, kind: str = "agentbeats"
) -> dict[str, Any]:
    """A public row for a trial that produced no result (never score-eligible)."""
    return PublicRow(
        task_id=task.task_id,
        trial_id=new_trial_id(task.task_id, kind),
        task_set=selection.task_set,
        task_set_digest=selection.task_set_digest,
        score_eligible=False,
        passed=False,
        reward=0.0,
        time_used=None,
        task_digest=task.task_digest,
        category=task.category,
        difficulty=task.difficulty,
        tags=list(task.tags),
        infra_failure_type=category,
        error_type=category,
    ).public_dict()


def missing_rows(
    rows: Iterable[Mapping[str, Any]], selection: Selection, category: FailureCategory
) -> list[dict[str, Any]]:
    """Failure rows for every expected trial (task x num_instances) the worker did not report."""
    seen = Counter(str(row.get("task_id")) for row in rows)
    gaps: list[dict[str, Any]] = []
    for task in selection.tasks:
        for _ in range(max(0, selection.num_instances - seen[task.task_id])):
            gaps.append(failure_row(task, selection, category))
    return gaps


def _normalize_row(row: Mapping[str, Any], selection: Selection) -> dict[str, Any]:
    """Interim call site for the shared normalizer (``leaderboard.normalize``)."""
    task = next((t for t in selection.tasks if t.task_id == row.get("task_id")), None)
    base: dict[str, Any] = {
        "task_set": selection.task_set,
        "task_set_digest": selection.task_set_digest,
    }
    if task is not None:
        base.update(
            task_digest=task.task_digest,
            category=task.category,
            difficulty=task.difficulty,
            tags=list(task.tags),
        )
    candidate = {**base, **{k: row[k] for k in ROW_KEYS if k in row and row[k] is not None}}
    candidate["artifact_refs"] = []
    try:
        return PublicRow.model_validate(candidate).public_dict()
    except ValidationError:
        if task is None:
            task = RunTask(task_id=str(row.get("task_id") or "unknown-task"))
        return failure_row(task, selection, "worker_error")


def public_rows(rows: Iterable[Mapping[str, Any]], selection: Selection) -> list[dict[str, Any]]:
    return [_normalize_row(row, selection) for row in rows]


def envelope(participant: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The one DataPart the assessment returns, validated against the public contract."""
    return Envelope.model_validate(
        {"status": "completed", "participants": {"agent": participant}, "results": rows}
    ).public_dict()
