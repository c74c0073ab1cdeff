"""What a run's state looks like from outside: its progress counts and its status document
(``GET /runs/{id}``, the ``status`` and ``end`` events). Functions of the run record alone."""

from __future__ import annotations

from typing import Any

from worker.api import Progress, RunStatus
from worker.runs.records import RunRecord


def progress(run: RunRecord) -> Progress:
    """The counts of the run as stored (a change not stored yet is not counted)."""
    counts = Progress(total=len(run.trials))
    for _key, state, row in run.shown_trials():
        if state == "finished":
            counts.finished += 1
            if row is not None and row["passed"]:
                counts.passed += 1
        elif state == "running":
            counts.running += 1
    return counts


def status_doc(run: RunRecord, *, with_rows: bool = True) -> dict[str, Any]:
    """The run's :class:`~worker.api.RunStatus` as JSON, built in O(trials). The rows (public-row
    JSON already) and the proof refs are not validated again: 10,000 of them would hold the event
    loop for long. What it says is stored (worker/runs/records.py: a change not stored yet is
    not reported), so no restart can take it back."""
    doc = RunStatus(
        run_id=run.run_id,
        status=run.shown_status,
        created_at=run.created_at,
        updated_at=run.updated_at,
        progress=progress(run),
        worker_meta=run.worker_meta,
        error=run.error,
        private_proof_manifest=run.private_proof_manifest,
    ).model_dump(mode="json", by_alias=True)
    shown = list(run.shown_trials())
    doc["tasks"] = {key: state for key, state, _row in shown}
    doc["rows"] = [row for _key, _state, row in shown if row is not None] if with_rows else []
    doc["phases"] = {key: told.model_dump() for key, told in run.shown_phases().items()}
    ended = run.shown_terminal
    doc["_private_proof_refs"] = run.private_proof_refs if ended else None
    if not ended:
        doc["_private_proof_manifest"] = None
    return doc


def unfinished(run: RunRecord) -> int:
    return sum(1 for t in run.trials.values() if t.state != "finished")
