"""The crash-safe run store: ``<jobs>/runs/<run_id>/run.json`` and its journal ``journal.jsonl``.

A run-level change (submit, resume, end) writes the whole run document to a temp file in the same
folder, fsyncs it and renames it over the old one, so a SIGKILL leaves either the old or the new
document, never a torn one. A trial's state change (start, retry, finish, a host process it
started) and small run-level changes (``status``, ``cancel_requested``) only append one line to
the journal (fsynced): ``{"seq": n, "trial": {...}}`` or ``{"seq": n, "run": {...}}``, O(1) per
change instead of rewriting 10,000 trials. The document records the last journal ``seq`` it
includes (``journal_seq``); reading a run applies the journal lines after it in ``seq`` order (a
torn last line is skipped), and a full save that includes every line removes the journal
(compaction: at the end of a run, at cancel, at resume). Trial artifacts live next to it under
``trials/<trial_id>/``.

A full disk (ENOSPC, EDQUOT) pauses the store instead of failing it: the write is tried again
until space returns (:meth:`RunStore.wait_for_space`), and the engine goes on only once it is
stored, so nothing is reported that the disk does not hold.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from worker.core.files import append_line, disk_full, has_space, write_atomic
from worker.runs.records import RunRecord, TrialRecord

log = logging.getLogger(__name__)

RUNS_DIRNAME = "runs"
RUN_FILENAME = "run.json"
# Locks (flock, released by the kernel when their process dies, however it dies): the jobs
# folder's, held shared by every engine using it and taken exclusive only to reap what a dead
# process left; and a run's, held by the one process that drives it.
FOLDER_LOCK_FILENAME = ".engine.lock"
RUN_LOCK_FILENAME = "driver.lock"
JOURNAL_FILENAME = "journal.jsonl"
# Run-level fields a journal line may carry (the rest change only with a full save).
JOURNAL_RUN_FIELDS = frozenset({"status", "updated_at", "cancel_requested", "error"})
# Trials serialized between two yields to the event loop by a full save.
TRIALS_PER_STEP = 250
# A journal longer than this many lines (or twice the run's trials, if more) is compacted by a
# full save: restarts read a bounded journal, and the cost stays O(1) per change amortized.
JOURNAL_COMPACT_MIN_LINES = 1000
# A write that met a full disk is tried again after this long, doubling up to the maximum.
FULL_DISK_RETRY_FIRST_SEC = 0.25
FULL_DISK_RETRY_MAX_SEC = 5.0


def _journal_entries(path: Path, after: int) -> list[dict[str, Any]]:
    """The readable journal lines of ``path`` with ``seq`` > ``after``, in ``seq`` order."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    entries = []
    for line in raw.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # torn by a kill mid-write
        if isinstance(entry, dict) and isinstance(entry.get("seq"), int) and entry["seq"] > after:
            entries.append(entry)
    entries.sort(key=lambda entry: int(entry["seq"]))
    return entries


def read_run_document(folder: Path) -> dict[str, Any]:
    """A run's stored document as JSON, its journal applied: what a restarted worker sees.
    OSError/ValueError when ``run.json`` cannot be read."""
    doc = json.loads((folder / RUN_FILENAME).read_bytes())
    if not isinstance(doc, dict):
        raise ValueError("the run document is not a JSON object")
    trials = doc.get("trials")
    seq = doc.get("journal_seq", 0)
    for entry in _journal_entries(folder / JOURNAL_FILENAME, seq if isinstance(seq, int) else 0):
        trial = entry.get("trial")
        if isinstance(trial, dict) and isinstance(trials, dict):
            try:
                checked = TrialRecord.model_validate(trial)
            except ValidationError:
                continue
            if checked.key in trials:
                trials[checked.key] = trial
        fields = entry.get("run")
        if isinstance(fields, dict):
            doc.update({k: v for k, v in fields.items() if k in JOURNAL_RUN_FIELDS})
        doc["journal_seq"] = entry["seq"]
    return doc


class RunStore:
    """Runs on disk. One writer (the worker process); the writes of one run are serialized."""

    def __init__(self, jobs_dir: Path) -> None:
        self.jobs_dir = jobs_dir
        self.runs_dir = jobs_dir / RUNS_DIRNAME
        self._locks: dict[str, asyncio.Lock] = {}
        self._seq: dict[str, int] = {}  # the last journal seq given out, per run
        self._lines: dict[str, int] = {}  # lines in the run's journal file
        self.full_since: float | None = None  # monotonic time the jobs folder was found full
        self._folder_lock: int | None = None
        self._run_locks: dict[str, int] = {}

    def run_dir(self, run_id: str) -> Path:
        return self.runs_dir / run_id

    def trial_dir(self, run_id: str, trial_id: str) -> Path:
        return self.run_dir(run_id) / "trials" / trial_id

    def relative_trial_dir(self, run_id: str, trial_id: str) -> str:
        """``trial_dir`` relative to the jobs dir (without building paths: cheap per trial)."""
        return f"{RUNS_DIRNAME}/{run_id}/trials/{trial_id}"

    def relative(self, path: Path) -> str:
        return str(path.relative_to(self.jobs_dir))

    def _lock(self, run_id: str) -> asyncio.Lock:
        return self._locks.setdefault(run_id, asyncio.Lock())

    def _next_seq(self, record: RunRecord) -> int:
        seq = max(self._seq.get(record.run_id, 0), record.journal_seq) + 1
        self._seq[record.run_id] = seq
        return seq

    async def save(self, record: RunRecord) -> None:
        """Persist the whole of ``record`` (compaction: the journal goes when this document
        includes every line of it). Serialized a batch of trials at a time, yielding to the
        event loop in between: 10,000 trials in one dump held it for 45-90 ms."""
        async with self._lock(record.run_id):
            seq = self._seq.get(record.run_id, record.journal_seq)
            record.journal_seq = seq
            keys, status = record.held()  # what this document stores
            data = await _document(record)
            folder = self.run_dir(record.run_id)
            await self._write(write_atomic, folder / RUN_FILENAME, data)
            record.release(keys, status=status)
            if self._seq.get(record.run_id, seq) == seq:  # nothing journaled since the snapshot
                with contextlib.suppress(FileNotFoundError):
                    await asyncio.to_thread(os.unlink, folder / JOURNAL_FILENAME)
                self._lines[record.run_id] = 0

    async def save_trial(self, record: RunRecord, trial: TrialRecord) -> None:
        """Persist one trial's state (and the run's ``updated_at``): one journal line."""
        line = (
            f'{{"seq":{self._next_seq(record)},"run":{{"updated_at":{json.dumps(record.updated_at)}}},'
            f'"trial":{trial.model_dump_json()}}}\n'
        ).encode()
        await self._append(record.run_id, line)
        record.release((trial.key,))
        await self._compact_if_long(record)

    async def save_fields(self, record: RunRecord, fields: Iterable[str]) -> None:
        """Persist run-level ``fields`` (of :data:`JOURNAL_RUN_FIELDS`) and ``updated_at``."""
        names = {*fields, "updated_at"}
        unknown = names - JOURNAL_RUN_FIELDS
        if unknown:
            raise ValueError(f"not journaled run fields: {sorted(unknown)}")
        values = record.model_dump(mode="json", include=names)
        line = json.dumps({"seq": self._next_seq(record), "run": values}) + "\n"
        await self._append(record.run_id, line.encode())
        record.release(status="status" in names)
        await self._compact_if_long(record)

    async def _compact_if_long(self, record: RunRecord) -> None:
        limit = max(JOURNAL_COMPACT_MIN_LINES, 2 * len(record.trials))
        if self._lines.get(record.run_id, 0) > limit:
            await self.save(record)

    async def _append(self, run_id: str, line: bytes) -> None:
        async with self._lock(run_id):
            await self._write(append_line, self.run_dir(run_id) / JOURNAL_FILENAME, line)
            self._lines[run_id] = self._lines.get(run_id, 0) + 1

    # ---- who uses the jobs folder, who drives a run -----------------------------------------

    def claim_folder(self) -> bool:
        """Hold the jobs folder's lock shared (for as long as this store lives); True when no
        other live process held it at that moment, so that what this worker's sandboxes left
        here is a dead process's to reap (the caller reaps before :meth:`share_folder`)."""
        if self._folder_lock is not None:
            return False
        self.jobs_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.jobs_dir / FOLDER_LOCK_FILENAME, os.O_RDWR | os.O_CREAT, 0o644)
        self._folder_lock = fd
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fcntl.flock(fd, fcntl.LOCK_SH)
            return False
        return True

    def share_folder(self) -> None:
        """After the reap: let other engines use the folder too."""
        if self._folder_lock is not None:
            fcntl.flock(self._folder_lock, fcntl.LOCK_SH)

    def lock_run(self, run_id: str) -> int | None:
        """Take the run's driver lock: None when this store has it now, else the pid of the
        live process that holds it (0 when it cannot be told)."""
        if run_id in self._run_locks:
            return None
        try:
            fd = os.open(self.run_dir(run_id) / RUN_LOCK_FILENAME, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:  # a full disk: the run goes on, unguarded against a second driver
            if not disk_full(exc):
                raise
            log.warning("run %s: no driver lock (%s)", run_id, exc.strerror)
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = int(os.pread(fd, 32, 0).decode().strip() or 0)
            except (OSError, ValueError):
                holder = 0
            os.close(fd)
            return holder
        with contextlib.suppress(OSError):  # who holds it, for the message of the next one
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._run_locks[run_id] = fd
        return None

    def unlock_run(self, run_id: str) -> None:
        fd = self._run_locks.pop(run_id, None)
        if fd is not None:
            os.close(fd)

    def release(self) -> None:
        """Let go of every lock (the engine closes)."""
        for run_id in list(self._run_locks):
            self.unlock_run(run_id)
        if self._folder_lock is not None:
            os.close(self._folder_lock)
            self._folder_lock = None

    def load(self, run_id: str) -> RunRecord:
        """One stored run (journal applied): KeyError when there is none, ValueError/OSError
        when its document cannot be read."""
        folder = self.run_dir(run_id)
        if not run_id or "/" in run_id or not (folder / RUN_FILENAME).is_file():
            raise KeyError(run_id)
        run = RunRecord.model_validate(read_run_document(folder))
        self._seq[run.run_id] = max(self._seq.get(run.run_id, 0), run.journal_seq)
        return run

    # ---- full disks ------------------------------------------------------------------------

    async def _write(self, write: Callable[..., None], *args: object) -> None:
        """``write(*args)`` off the event loop; on a full disk, again until it is stored."""
        delay = FULL_DISK_RETRY_FIRST_SEC
        while True:
            try:
                await asyncio.to_thread(write, *args)
            except OSError as exc:
                if not disk_full(exc):
                    raise
                self._full(exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, FULL_DISK_RETRY_MAX_SEC)
                continue
            self._space_back()
            return

    async def wait_for_space(self) -> None:
        """Until the jobs folder takes writes again (at once when it does)."""
        delay = FULL_DISK_RETRY_FIRST_SEC
        while not await asyncio.to_thread(has_space, self.jobs_dir):
            self._full(None)
            await asyncio.sleep(delay)
            delay = min(delay * 2, FULL_DISK_RETRY_MAX_SEC)
        self._space_back()

    def _full(self, exc: OSError | None) -> None:
        if self.full_since is None:
            self.full_since = time.monotonic()
            log.warning(
                "the jobs folder %s is full%s: the runs are paused until space returns",
                self.jobs_dir,
                f" ({exc.strerror})" if exc is not None and exc.strerror else "",
            )

    def _space_back(self) -> None:
        if self.full_since is not None:
            log.warning(
                "the jobs folder %s takes writes again after %.0fs: the runs go on",
                self.jobs_dir,
                time.monotonic() - self.full_since,
            )
            self.full_since = None

    def load_all(self) -> tuple[list[RunRecord], list[str]]:
        """Every stored run (journal applied), oldest first, and one line per run document that
        could not be read."""
        runs: list[RunRecord] = []
        problems: list[str] = []
        if not self.runs_dir.is_dir():
            return runs, problems
        for folder in sorted(self.runs_dir.iterdir()):
            path = folder / RUN_FILENAME
            if not path.is_file():
                continue
            try:
                run = RunRecord.model_validate(read_run_document(folder))
            except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
                problems.append(f"{path}: {str(exc).splitlines()[0]}")
                continue
            self._seq[run.run_id] = run.journal_seq
            runs.append(run)
        runs.sort(key=lambda run: (run.created_at, run.run_id))
        return runs, problems


async def _document(record: RunRecord) -> list[str]:
    """``record`` as compact JSON text parts, its per-trial parts (trials, proof refs) made a
    batch at a time with the event loop running in between (the proof refs as one pydantic
    dump held it for ~100 ms at 10,000 trials)."""
    head = record.model_dump_json(exclude={"trials", "private_proof_refs"})
    refs = record.private_proof_refs
    parts = [head[:-1], ',"private_proof_refs":']
    if refs is None:
        parts.append("null")
    else:
        parts.append("[")
        for start in range(0, len(refs), TRIALS_PER_STEP * 4):
            batch = refs[start : start + TRIALS_PER_STEP * 4]
            text = json.dumps(batch, ensure_ascii=False, separators=(",", ":"))[1:-1]
            parts.append(("," if start else "") + text)
            await asyncio.sleep(0)
        parts.append("]")
    parts.append(',"trials":{')
    for index, (key, trial) in enumerate(list(record.trials.items())):
        parts.append(f"{',' if index else ''}{json.dumps(key)}:{trial.model_dump_json()}")
        if index % TRIALS_PER_STEP == TRIALS_PER_STEP - 1:
            await asyncio.sleep(0)
    parts.append("}}")
    return parts
