"""What a run's state looks like from outside: its progress counts and its status document
(``GET /runs/{id}``, the ``status`` and ``end`` events). Functions of the run record alone."""

from __future__ import annotations

from typing import Any

from worker.api import Progress, RunStatus
from worker.runs.records import RunRecord


def progress(run: RunRecord) -> Progress:
    counts = Progress(total=len(run.trials))
    for trial in run.trials.values():
        if trial.state == "finished":
            counts.finished += 1
            if trial.row is not None and trial.row["passed"]:
                counts.passed += 1
        elif trial.state == "running":
            counts.running += 1
    return counts


def status_doc(run: RunRecord, *, with_rows: bool = True) -> dict[str, Any]:
    """The run's :class:`~worker.api.RunStatus` as JSON, built in O(trials). The rows (public-row
    JSON already) and the proof refs are not validated again: 10,000 of them would hold the event
    loop for long."""
    doc = RunStatus(
        run_id=run.run_id,
        status=run.status,
        created_at=run.created_at,
        updated_at=run.updated_at,
        progress=progress(run),
        worker_meta=run.worker_meta,
        error=run.error,
        private_proof_manifest=run.private_proof_manifest,
    ).model_dump(mode="json", by_alias=True)
    doc["tasks"] = {key: trial.state for key, trial in run.trials.items()}
    doc["rows"] = run.rows() if with_rows else []
    doc["_private_proof_refs"] = run.private_proof_refs
    return doc


def unfinished(run: RunRecord) -> int:
    return sum(1 for t in run.trials.values() if t.state != "finished")
