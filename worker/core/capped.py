"""Append-only files that never grow past their cap (see :mod:`worker.core.limits`).

Past the cap the file ends with one marker that counts what was dropped; the marker is rewritten
in place on every later drop, so the counts are right even if the writer dies without closing.
Each write opens and closes the file: what was written survives a crash of the writer.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Final

from worker.core.limits import ESSENTIAL_EVENT_BYTES, ESSENTIAL_RESERVE, MARKER_RESERVE, OutputCaps

STREAM_SLACK: Final = 1 << 30  # seconds of a local docker stream (more under load)
TRUNCATED_KEY: Final = "skillsbench_truncated"
TRAJECTORY_TRUNCATED: Final = "trajectory_truncated"
_KEPT_KEYS: Final = (
    "timestamp", "type", "protocol", "task_id", "participant", "turn",
    "tool_call_id", "kind", "status", "title",
)  # fmt: skip


class CappedFile:
    """Bytes appended up to ``cap`` (the marker included); the rest is counted and dropped."""

    def __init__(self, path: Path, cap: int) -> None:
        self.path = path
        self.cap = cap
        path.parent.mkdir(parents=True, exist_ok=True)
        self.written = path.stat().st_size if path.exists() else 0
        self.dropped_bytes = 0
        self.dropped_writes = 0
        self._marker_at: int | None = None
        self.reserve = 0  # kept back from ordinary appends for :meth:`append_essential`

    def append_essential(self, data: bytes) -> bool:
        """Append ``data`` whole, into the reserve if need be, before the marker if there is
        one already (records the worker relies on, such as the usage a turn reported)."""
        if self.written + len(data) > self.cap - MARKER_RESERVE:
            return self.append(data, whole=True)
        with self.path.open("r+b" if self.path.exists() else "w+b") as out:
            out.seek(self.written)
            out.write(data)
            self.written += len(data)
            if self._marker_at is not None:
                self._marker_at = self.written
                out.truncate()
                out.write(self.marker())
        return True

    @property
    def truncated(self) -> bool:
        return self._marker_at is not None

    def room(self, reserve: int = 0) -> int:
        return 0 if self.truncated else max(0, self.cap - MARKER_RESERVE - reserve - self.written)

    def append(self, data: bytes, *, whole: bool = False) -> bool:
        """Append ``data``; past the cap keep what fits (nothing when ``whole``: a record is
        kept entirely or not at all). True when all of it was written."""
        room = self.room(self.reserve)
        if len(data) <= room:
            if data:
                with self.path.open("ab") as out:
                    out.write(data)
                self.written += len(data)
            return True
        kept = 0 if whole else room
        with self.path.open("r+b" if self.path.exists() else "w+b") as out:
            if self._marker_at is None:
                out.seek(self.written)
                out.write(data[:kept])
                self.written += kept
                self._marker_at = self.written
            self.dropped_bytes += len(data) - kept
            self.dropped_writes += 1
            out.seek(self._marker_at)
            out.truncate()
            out.write(self.marker())
        return False

    def marker(self) -> bytes:
        return (
            f"\n[skillsbench: cap of {self.cap} bytes reached: {self.dropped_bytes} more bytes "
            f"in {self.dropped_writes} writes dropped]\n"
        ).encode()


class CappedJsonl(CappedFile):
    """A JSON-lines file: each event shortened to ``event_cap`` bytes, the file to ``cap``.

    A shortened event keeps its identifying keys and says what was cut under
    ``skillsbench_truncated``; past the file's cap, whole events are dropped and the last line is a
    ``trajectory_truncated`` event counting them.
    """

    def __init__(self, path: Path, cap: int, event_cap: int) -> None:
        super().__init__(path, cap)
        self.event_cap = event_cap
        self.shortened_events = 0
        self.reserve = ESSENTIAL_RESERVE

    def write(self, record: dict[str, Any], *, essential: bool = False) -> bool:
        """One event; an ``essential`` one (few and small, written by the worker itself: the
        end of a prompt with its usage, a cancel, a timeout) may use the reserve kept back
        from the others, so a flood of events can never push it out."""
        event_cap = min(self.event_cap, ESSENTIAL_EVENT_BYTES) if essential else self.event_cap
        data = _line(record)
        if len(data) > event_cap:
            data = shorten(record, len(data), event_cap)
            self.shortened_events += 1
        return self.append_essential(data) if essential else self.append(data, whole=True)

    def marker(self) -> bytes:
        return _line(
            {
                "type": TRAJECTORY_TRUNCATED,
                "cap_bytes": self.cap,
                "dropped_events": self.dropped_writes,
                "dropped_bytes": self.dropped_bytes,
            }
        )


def _line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode()


def shorten(record: dict[str, Any], size: int, cap: int) -> bytes:
    """``record`` as one line of at most ``cap`` bytes: long strings clipped first; if that is not
    enough, the identifying keys plus a prefix of the serialized event."""
    limit = max(64, cap // 8)
    clipped = _clip(record, limit)
    clipped[TRUNCATED_KEY] = {"original_bytes": size, "strings_clipped_to": limit}
    data = _line(clipped)
    if len(data) <= cap:
        return data
    head = {k: record[k] for k in _KEPT_KEYS if isinstance(record.get(k), str | int | float)}
    head = {k: v[:200] if isinstance(v, str) else v for k, v in head.items()}
    raw = _line(record)
    keep = max(0, cap - len(_line(head)) - 256)
    while True:
        preview = raw[:keep].decode("utf-8", errors="ignore")
        info = {"original_bytes": size, "kept_bytes": keep, "preview": preview}
        data = _line({**head, TRUNCATED_KEY: info})
        if len(data) <= cap or keep == 0:
            return data
        keep = max(0, keep - (len(data) - cap) - 16)


def clip_text(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` bytes (UTF-8), ending with a marker counting the rest."""
    encoded = text.encode("utf-8", errors="replace")
    if len(encoded) <= limit:
        return text
    kept = encoded[:limit].decode("utf-8", errors="ignore")
    return f"{kept}[skillsbench: {len(encoded) - limit} more bytes dropped]"


def _clip(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return clip_text(value, limit)
    if isinstance(value, dict):
        return {str(k)[:limit]: _clip(v, limit) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clip(v, limit) for v in value]
    return value


class CopyBudget:
    """Caps for copying files a participant could fill out of a sandbox (``/logs``): bytes per
    file, bytes and entries (files and folders) per trial. A file over its share is copied up to
    it and ends with a marker; one past the trial's caps is skipped. Both are recorded
    (:meth:`report`). Only the kept bytes are ever read, so a sparse file is never expanded."""

    MAX_LISTED: Final = 50

    def __init__(self, file_bytes: int, total_bytes: int, max_entries: int) -> None:
        self.file_bytes = file_bytes
        self.total_bytes = total_bytes
        self.max_entries = max_entries
        self.used_bytes = 0
        self.entries = 0
        self.truncated: list[dict[str, Any]] = []
        self.skipped: list[dict[str, Any]] = []
        self.n_truncated = 0
        self.n_skipped = 0

    def stream_limit(self) -> int:
        """How much of an archive stream a backend may read (tar headers and the tails of files
        over their cap, read and thrown away: an archive holds sparse files expanded). Bounds the
        time a collection takes; past it the rest is skipped, recorded."""
        return 2 * self.total_bytes + self.file_bytes + STREAM_SLACK

    def admit_entry(self, shown: str) -> bool:
        """One more file or folder; False (recorded) past the entry cap."""
        if self.entries >= self.max_entries:
            self.skip(shown, f"more than {self.max_entries} files and folders")
            return False
        self.entries += 1
        return True

    def skip(self, shown: str, reason: str) -> None:
        self.n_skipped += 1
        if len(self.skipped) < self.MAX_LISTED:
            self.skipped.append({"path": shown, "reason": reason})

    def copy_file(self, source: Any, size: int, target: Path, shown: str) -> None:
        """Copy from the readable ``source`` (``size`` bytes long) to ``target`` within the caps."""
        if not self.admit_entry(shown):
            return
        allowed = min(self.file_bytes, self.total_bytes - self.used_bytes)
        if size > 0 and allowed <= MARKER_RESERVE:
            self.skip(shown, f"the trial's {self.total_bytes} bytes of /logs were used up")
            return
        cut = size > allowed
        keep = allowed - MARKER_RESERVE if cut else size
        written = 0
        if target.is_symlink():
            target.unlink()
        with open(target, "wb") as out:
            while written < keep:
                chunk = source.read(min(1 << 20, keep - written))
                if not chunk:
                    break
                out.write(chunk)
                written += len(chunk)
            if cut:
                out.write(
                    f"\n[skillsbench: file cap reached: {size - written} more bytes of "
                    f"{size} dropped]\n".encode()
                )
        self.used_bytes += target.stat().st_size
        if cut:
            self.n_truncated += 1
            if len(self.truncated) < self.MAX_LISTED:
                self.truncated.append({"path": shown, "size": size, "kept_bytes": written})

    @classmethod
    def default(cls) -> CopyBudget:
        caps = OutputCaps()
        return cls(caps.log_file_bytes, caps.logs_bytes, caps.logs_files)

    def report(self) -> dict[str, Any]:
        return {
            "files_and_folders": self.entries,
            "bytes": self.used_bytes,
            "caps": {
                "file_bytes": self.file_bytes,
                "total_bytes": self.total_bytes,
                "entries": self.max_entries,
            },
            "truncated": self.truncated,
            "n_truncated": self.n_truncated,
            "skipped": self.skipped,
            "n_skipped": self.n_skipped,
        }


class StreamTooLong(Exception):
    pass


class ChunkReader(io.RawIOBase):
    """An iterable of byte chunks (an archive streamed by a sandbox backend) as a readable
    file that raises :class:`StreamTooLong` past ``limit`` bytes."""

    def __init__(self, chunks: Any, limit: int) -> None:
        self._chunks = iter(chunks)
        self._pending = memoryview(b"")
        self.limit = limit
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            try:
                self._pending = memoryview(next(self._chunks))
            except StopIteration:
                return 0
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        self.read_bytes += n
        if self.read_bytes > self.limit:
            raise StreamTooLong
        return n
