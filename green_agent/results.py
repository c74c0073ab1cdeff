"""Public results: worker rows through the shared normalizer, gap rows, and the envelope.

Nothing a worker sends leaves the green agent except through :class:`PublicResults`
(``leaderboard.normalize``), so worker-private meta (``_private_*``, proof refs, local paths,
unknown keys) never reaches AgentBeats. The green agent is authoritative for the task set: rows
carry the selected set's name and digest whatever the worker says.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from green_agent.selection import Selection
from leaderboard.normalize import RowContext, TaskMeta, build_envelope, normalize_row
from leaderboard.rows import FailureCategory, worker_failed
from worker.api import RunTask


def row_context(selection: Selection) -> RowContext:
    return RowContext(
        task_set=selection.task_set,
        task_set_digest=selection.task_set_digest,
        condition=str(selection.config.get("condition", "with_skills")),
        tasks={
            task.task_id: TaskMeta(
                task_digest=task.task_digest,
                category=task.category,
                difficulty=task.difficulty,
                tags=tuple(task.tags),
            )
            for task in selection.tasks
        },
    )


class PublicResults:
    """The public side of one assessment. Its row context is built once, not per streamed row."""

    def __init__(self, selection: Selection) -> None:
        self.selection = selection
        self.context = row_context(selection)
        self._authoritative = {
            "task_set": selection.task_set,
            "task_set_digest": selection.task_set_digest,
        }

    def rows(self, rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return [self.row(row) for row in rows]

    def row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        return normalize_row({**row, **self._authoritative}, self.context).public_dict()

    def failure_row(self, task: RunTask, category: FailureCategory) -> dict[str, Any]:
        """A public row for a trial that produced no result (never score-eligible)."""
        raw = {
            "task_id": task.task_id,
            "trial_id": f"{task.task_id}__agentbeats__{secrets.token_hex(4)}",
            "condition": self.selection.config.get("condition", "with_skills"),
            "score_eligible": False,
            "passed": False,
            "reward": 0.0,
            "time_used": None,
            "infra_failure_type": category,
        }
        return self.row(raw)

    def missing_rows(
        self, rows: Iterable[Mapping[str, Any]], category: FailureCategory
    ) -> list[dict[str, Any]]:
        """Failure rows for every expected trial (task x num_instances) the worker did not report."""
        seen = Counter(str(row.get("task_id")) for row in rows)
        gaps: list[dict[str, Any]] = []
        for task in self.selection.tasks:
            for _ in range(max(0, self.selection.num_instances - seen[task.task_id])):
                gaps.append(self.failure_row(task, category))
        return gaps

    def in_task_order(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Rows in the selection's task order (as published), whatever order trials finished in."""
        position = {task.task_id: i for i, task in enumerate(self.selection.tasks)}
        return sorted(rows, key=lambda row: position.get(str(row.get("task_id")), len(position)))

    def envelope(self, participant: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """The one DataPart the assessment returns, validated against the public contract."""
        return build_envelope({"agent": participant}, rows, self.context).public_dict()


def worker_failure(rows: Sequence[Mapping[str, Any]], error: str | None) -> str | None:
    """Why the assessment scored nothing because of the worker, or None when it measured the
    agent (some trial was scored, or failed for a reason of its own: sandbox, participant,
    verifier). ``error``: the worker's (or the adapter's) reason for how the run ended."""
    kinds = worker_failed(rows)
    if kinds is None:
        return None
    why = f"{error}; " if error else ""
    return f"{why}no trial was scored ({kinds}): this result measures the worker, not the agent"
