"""Finding trials in a jobs dir: every run (its ``run.json``) and its trials, newest first, and one
trial named by its id, an id prefix, its 8-hex suffix, or its task (the newest trial of it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from worker.runs.records import RunRecord
from worker.runs.store import RunStore

DEFAULT_JOBS_DIR: Final = Path("jobs/local")  # `run`'s default --jobs-dir
_SHOWN_CANDIDATES: Final = 5


@dataclass(frozen=True)
class TrialEntry:
    run_id: str
    task_id: str
    trial_id: str
    folder: Path
    started_at: str
    state: str  # the trial's state in the run (queued, running, finished, …)
    reward: float | None
    passed: bool | None
    failure: str | None  # the failure kind, when the trial had one
    n_attempts: int


def _entries(jobs_dir: Path, run: RunRecord) -> list[TrialEntry]:
    out = []
    for trial in run.trials.values():
        attempt = trial.current
        if attempt is None:
            continue
        row = trial.row or {}
        out.append(
            TrialEntry(
                run_id=run.run_id,
                task_id=trial.task_id,
                trial_id=attempt.trial_id,
                folder=jobs_dir / attempt.trial_dir,
                started_at=attempt.started_at,
                state=trial.state,
                reward=row.get("reward"),
                passed=row.get("passed"),
                failure=trial.failure or attempt.failure,
                n_attempts=len(trial.attempts),
            )
        )
    out.sort(key=lambda e: (e.started_at, e.trial_id), reverse=True)
    return out


def runs(jobs_dir: Path) -> list[tuple[RunRecord, list[TrialEntry]]]:
    """Every run under ``jobs_dir`` with its trials, newest first."""
    if not jobs_dir.is_dir():
        raise ValueError(f"{jobs_dir}: no such jobs dir (`run --jobs-dir` says where runs go)")
    found, problems = RunStore(jobs_dir).load_all()
    if problems and not found:
        raise ValueError(problems[0])
    return [(run, _entries(jobs_dir, run)) for run in reversed(found)]


def find_trial(jobs_dir: Path, query: str) -> TrialEntry:
    """The trial ``query`` names: its full id, a unique id prefix or suffix, or a task id (the
    newest trial of that task); a name that fits several trials is refused with some of them."""
    every = [entry for _, entries in runs(jobs_dir) for entry in entries]
    if not every:
        raise ValueError(f"{jobs_dir}: no trials yet")
    exact = [e for e in every if e.trial_id == query]
    if exact:
        return exact[0]
    by_task = [e for e in every if e.task_id == query]
    if by_task:
        return by_task[0]  # newest first
    partial = [
        e
        for e in every
        if e.trial_id.startswith(query) or e.trial_id.rsplit("__", 1)[-1].startswith(query)
    ]
    if len(partial) == 1:
        return partial[0]
    if not partial:
        raise ValueError(
            f"no trial {query!r} under {jobs_dir} (`trials list {jobs_dir}` lists them)"
        )
    shown = ", ".join(e.trial_id for e in partial[:_SHOWN_CANDIDATES])
    more = f" and {len(partial) - _SHOWN_CANDIDATES} more" if len(partial) > 5 else ""
    raise ValueError(f"{query!r} fits {len(partial)} trials: {shown}{more}; give more of the id")
