"""What the web viewer lists: the runs of the jobs folders it was given and their trials, read
from each run's document (``run.json`` with its journal applied: what the worker has recorded so
far, so a running run reads as it stands), and the filters and sorts over them.

Every folder it names is checked to lie within the jobs folder it came from (a run document or
a symlink pointing elsewhere is passed over): the viewer serves those folders and nothing else.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from worker.runs.records import RunRecord
from worker.runs.store import JOURNAL_FILENAME, RUN_FILENAME, read_run_document
from worker.trial_record.paths import ACP_TRAJECTORY_FILE, RESULT_FILE
from worker.viewer.trial_folder import inside

RUNS_DIR: Final = "runs"
OUTCOMES: Final = ("passed", "failed", "error", "running", "queued", "cancelled")
SORTS: Final = ("started", "task", "reward", "time", "outcome")
MAX_TRIALS_PARAM: Final = 200_000  # characters of ?trials= (ids of one leaderboard row)
# A link carries its trial ids in ?trials= up to this many characters; past it (a row of
# hundreds of trials, beyond what a request line may hold) it names a set the viewer keeps.
LINK_TRIALS_MAX: Final = 4_000
TRIAL_SETS_MAX: Final = 4_096
_TRIAL_SETS: OrderedDict[str, frozenset[str]] = OrderedDict()
_TRIAL_SETS_LOCK = threading.Lock()


def trials_query(trial_ids: Iterable[str]) -> str:
    """The query (``trials=ID,ID`` or ``set=TOKEN``) of a link to the list of ``trial_ids``."""
    from urllib.parse import quote

    ids = sorted(set(trial_ids))
    joined = ",".join(ids)
    if len(joined) <= LINK_TRIALS_MAX:
        return "trials=" + quote(joined, safe=",")
    token = hashlib.sha256("\n".join(ids).encode()).hexdigest()[:24]
    with _TRIAL_SETS_LOCK:
        _TRIAL_SETS[token] = frozenset(ids)
        _TRIAL_SETS.move_to_end(token)
        while len(_TRIAL_SETS) > TRIAL_SETS_MAX:
            _TRIAL_SETS.popitem(last=False)
    return f"set={token}"


def trial_set(token: str) -> frozenset[str] | None:
    """The trial ids a ``set=`` link names, or None (made by a viewer since restarted)."""
    with _TRIAL_SETS_LOCK:
        return _TRIAL_SETS.get(token)


@dataclass(frozen=True)
class TrialRow:
    root: int  # which jobs folder (its index in the viewer's list)
    run_id: str
    trial_id: str | None  # None while the trial is queued
    task_id: str
    agent: str
    state: str  # queued | running | finished
    outcome: str  # one of OUTCOMES
    reward: float | None
    passed: bool | None
    failure: str | None
    score_eligible: bool | None
    reason: str | None
    seconds: float | None
    started_at: str | None
    n_attempts: int

    @property
    def key(self) -> str:
        return f"{self.root}/{self.run_id}/{self.trial_id or self.task_id}"


@dataclass
class RunRow:
    root: int
    run_id: str
    folder: Path
    created_at: str
    status: str
    agent: str
    task_set: str | None
    trials: list[TrialRow] = field(default_factory=list)

    def count(self, outcome: str) -> int:
        return sum(1 for t in self.trials if t.outcome == outcome)

    @property
    def n_done(self) -> int:
        return sum(1 for t in self.trials if t.state == "finished")


def graded_mean(trials: Iterable[TrialRow]) -> tuple[float | None, int]:
    """The mean reward of the finished, score-eligible trials (an infrastructure error is not
    graded, as in `run`'s summary and the leaderboard), and how many there are."""
    rewards = [
        t.reward
        for t in trials
        if t.state == "finished" and t.score_eligible is True and t.reward is not None
    ]
    return (sum(rewards) / len(rewards) if rewards else None), len(rewards)


def _outcome(state: str, row: dict[str, Any], failure: str | None, run_status: str) -> str:
    if state != "finished":
        return "cancelled" if run_status == "cancelled" and state == "queued" else state
    if row.get("passed"):
        return "passed"
    if failure == "worker_cancelled":
        return "cancelled"
    # score-eligible failures (agent errors, timeouts, no pass) are the agent's; the others
    # (infrastructure, verifier) are errors of the run
    return "failed" if row.get("score_eligible", True) else "error"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def trial_folder(given: Path, trial_dir: str) -> Path | None:
    """Where a run document's ``trial_dir`` (relative to the jobs folder) is, when that lies
    within ``given``, the folder the viewer was given (a jobs folder, or one run folder: then
    its trials, never a folder beside it); ``None`` elsewhere."""
    path = jobs_of(given) / trial_dir
    return path if inside(path, given) else None


def read_run(root: int, given: Path, folder: Path) -> RunRow | None:
    """One run folder (of ``given``, a folder the viewer was given) as the viewer lists it;
    ``None`` when its document is unreadable."""
    try:
        run = RunRecord.model_validate(read_run_document(folder))
    except (OSError, ValueError, ValidationError):
        return None
    out = RunRow(
        root=root,
        run_id=run.run_id,
        folder=folder,
        created_at=run.created_at,
        status=run.status,
        agent=run.agent,
        task_set=run.request.task_set,
    )
    for trial in run.trials.values():
        attempt = trial.current
        row = trial.row or {}
        failure = trial.failure or (attempt.failure if attempt else None)
        trial_id = attempt.trial_id if attempt else None
        if attempt is not None and trial_folder(given, attempt.trial_dir) is None:
            trial_id = None  # a document naming a folder elsewhere: not shown
        out.trials.append(
            TrialRow(
                root=root,
                run_id=run.run_id,
                trial_id=trial_id,
                task_id=trial.task_id,
                agent=run.agent,
                state=trial.state,
                outcome=_outcome(trial.state, row, failure, run.status),
                reward=_number(row.get("reward")),
                passed=row.get("passed") if isinstance(row.get("passed"), bool) else None,
                failure=failure,
                score_eligible=row.get("score_eligible")
                if isinstance(row.get("score_eligible"), bool)
                else None,
                reason=(attempt.reason or attempt.error) if attempt else None,
                seconds=_number(row.get("time_used")),
                started_at=attempt.started_at if attempt else None,
                n_attempts=len(trial.attempts),
            )
        )
    return out


def _documents_inside(folder: Path) -> bool:
    """Whether the run document and its journal (if any) are files of ``folder`` itself, not
    links to a document elsewhere."""
    journal = folder / JOURNAL_FILENAME
    return inside(folder / RUN_FILENAME, folder) and (
        not os.path.lexists(journal) or inside(journal, folder)
    )


def run_folders(jobs: Path) -> list[Path]:
    """The run folders of a jobs folder (or of one run folder given directly), within it."""
    if (jobs / RUN_FILENAME).is_file():
        return [jobs] if _documents_inside(jobs) else []
    runs_dir = jobs / RUNS_DIR
    if not runs_dir.is_dir() or not inside(runs_dir, jobs):
        return []
    found = []
    for entry in sorted(os.scandir(runs_dir), key=lambda e: e.name):
        folder = Path(entry.path)
        if (
            entry.is_dir()
            and (folder / RUN_FILENAME).is_file()
            and inside(folder, jobs)
            and _documents_inside(folder)
        ):
            found.append(folder)
    return found


def unreadable_runs(roots: list[Path]) -> list[tuple[Path, str]]:
    """The run folders of ``roots`` whose document cannot be read (not JSON, not a run
    record, unreadable), each with why: :func:`scan` passes over them, the runs page names
    them."""
    found = []
    for root in roots:
        for folder in run_folders(root):
            try:
                RunRecord.model_validate(read_run_document(folder))
            except (OSError, ValueError, ValidationError) as exc:
                why = " ".join(str(exc).split())
                found.append((folder, why[:300]))
    return found


def jobs_of(folder: Path) -> Path:
    """The jobs folder trial paths are relative to: a run folder's ``../..``."""
    return folder.parent.parent if (folder / RUN_FILENAME).is_file() else folder


def scan(roots: list[Path]) -> list[RunRow]:
    """Every readable run of ``roots``, newest first."""
    runs = []
    for n, root in enumerate(roots):
        for folder in run_folders(root):
            run = read_run(n, root, folder)
            if run is not None:
                runs.append(run)
    runs.sort(key=lambda r: (r.created_at, r.run_id), reverse=True)
    return runs


def signature(roots: list[Path]) -> str:
    """A cheap fingerprint of what the viewer shows (sizes and times of every run document,
    journal, trajectory and record): it changes when a run moves on."""
    parts: list[str] = []
    for root in roots:
        for folder in run_folders(root):
            names = [RUN_FILENAME, JOURNAL_FILENAME]
            trials = folder / "trials"
            if trials.is_dir():
                names += [
                    f"trials/{entry.name}/{name}"
                    for entry in os.scandir(trials)
                    for name in (ACP_TRAJECTORY_FILE, RESULT_FILE)
                ]
            for name in names:
                try:
                    st = os.stat(folder / name)
                except OSError:
                    continue
                parts.append(f"{folder.name}/{name}:{st.st_size}:{st.st_mtime_ns}")
    return str(hash("\n".join(sorted(parts))))


@dataclass(frozen=True)
class Filters:
    """What the trials list is narrowed to (each empty: no narrowing)."""

    run: str = ""
    task: str = ""
    agent: str = ""
    outcome: str = ""
    failure: str = ""
    eligible: str = ""  # "yes" | "no" | ""
    q: str = ""  # search: a substring of the task, trial id, agent, failure or reason
    sort: str = "started"
    desc: bool = False
    trials: frozenset[str] = frozenset()  # these trial ids only (a leaderboard row's trials)
    # the set those ids came from (``?set=``), kept by the filters form; "" for ``?trials=``
    trial_set: str = ""
    unknown_set: bool = False  # a ``?set=`` this viewer does not hold (restarted since)

    @classmethod
    def of(cls, params: Any) -> Filters:
        def one(name: str) -> str:
            return str(params.get(name) or "")[:200]

        sort = one("sort")
        token = one("set")
        held = trial_set(token) if token else None
        trials = frozenset(
            t for t in str(params.get("trials") or "")[:MAX_TRIALS_PARAM].split(",") if t
        )
        return cls(
            run=one("run"),
            task=one("task"),
            agent=one("agent"),
            outcome=one("outcome") if one("outcome") in OUTCOMES else "",
            failure=one("failure"),
            eligible=one("eligible") if one("eligible") in ("yes", "no") else "",
            q=one("q"),
            sort=sort if sort in SORTS else "started",
            desc=one("desc") == "1",
            trials=held if held is not None else trials,
            trial_set=token if held is not None else "",
            unknown_set=bool(token) and held is None,
        )

    def matches(self, t: TrialRow) -> bool:
        if self.unknown_set:
            return False
        if self.trials and t.trial_id not in self.trials:
            return False
        if self.run and t.run_id != self.run:
            return False
        if self.task and t.task_id != self.task:
            return False
        if self.agent and t.agent != self.agent:
            return False
        if self.outcome and t.outcome != self.outcome:
            return False
        if self.failure and (t.failure or "none") != self.failure:
            return False
        if self.eligible and t.score_eligible is not (self.eligible == "yes"):
            return False
        if self.q:
            needle = self.q.lower()
            hay = " ".join(
                str(v or "") for v in (t.task_id, t.trial_id, t.agent, t.failure, t.reason)
            )
            if needle not in hay.lower():
                return False
        return True

    def apply(self, trials: Iterable[TrialRow]) -> list[TrialRow]:
        kept = [t for t in trials if self.matches(t)]
        order = OUTCOMES.index

        def key(t: TrialRow) -> tuple[Any, ...]:
            if self.sort == "task":
                return (t.task_id, t.started_at or "")
            if self.sort == "reward":
                return (t.reward is None, t.reward or 0.0, t.task_id)
            if self.sort == "time":
                return (t.seconds is None, t.seconds or 0.0, t.task_id)
            if self.sort == "outcome":
                return (order(t.outcome), t.task_id)
            return (t.started_at or "~", t.task_id)

        kept.sort(key=key, reverse=self.desc)
        return kept
