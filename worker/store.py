"""The crash-safe run store: ``<jobs>/runs/<run_id>/run.json``, replaced atomically.

Every state change writes the whole run document to a temp file in the same folder, fsyncs it
and renames it over the old one, so a SIGKILL leaves either the old or the new document, never a
torn one. Trial artifacts live next to it under ``trials/<trial_id>/``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from pathlib import Path

from pydantic import ValidationError

from worker.records import RunRecord

RUNS_DIRNAME = "runs"
RUN_FILENAME = "run.json"


def write_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new bytes, never a mix.

    ``durable`` also fsyncs, so the new bytes survive a power loss, not only a process kill.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if not durable:
        return
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class RunStore:
    """Runs on disk. One writer (the worker process); saves of one run are serialized."""

    def __init__(self, jobs_dir: Path) -> None:
        self.jobs_dir = jobs_dir
        self.runs_dir = jobs_dir / RUNS_DIRNAME
        self._locks: dict[str, asyncio.Lock] = {}

    def run_dir(self, run_id: str) -> Path:
        return self.runs_dir / run_id

    def trial_dir(self, run_id: str, trial_id: str) -> Path:
        return self.run_dir(run_id) / "trials" / trial_id

    def relative_trial_dir(self, run_id: str, trial_id: str) -> str:
        """``trial_dir`` relative to the jobs dir (without building paths: cheap per trial)."""
        return f"{RUNS_DIRNAME}/{run_id}/trials/{trial_id}"

    def relative(self, path: Path) -> str:
        return str(path.relative_to(self.jobs_dir))

    async def save(self, record: RunRecord) -> None:
        """Persist ``record`` as it is now (the snapshot is taken before any await)."""
        data = record.model_dump_json().encode()  # compact: half the time of an indented dump
        lock = self._locks.setdefault(record.run_id, asyncio.Lock())
        async with lock:
            await asyncio.to_thread(write_atomic, self.run_dir(record.run_id) / RUN_FILENAME, data)

    def load_all(self) -> tuple[list[RunRecord], list[str]]:
        """Every stored run, oldest first, and one line per run document that could not be read."""
        runs: list[RunRecord] = []
        problems: list[str] = []
        if not self.runs_dir.is_dir():
            return runs, problems
        for folder in sorted(self.runs_dir.iterdir()):
            path = folder / RUN_FILENAME
            if not path.is_file():
                continue
            try:
                runs.append(RunRecord.model_validate_json(path.read_bytes()))
            except (OSError, ValidationError) as exc:
                problems.append(f"{path}: {str(exc).splitlines()[0]}")
        runs.sort(key=lambda run: (run.created_at, run.run_id))
        return runs, problems
