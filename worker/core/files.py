"""Crash-safe file writes: a whole document replaced atomically, one line appended (both fsynced)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes | list[str], *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new bytes, never a mix.

    ``data``: bytes, or text parts written one after the other (UTF-8): a big document is then
    never joined and encoded in one piece, which holds the GIL (and so the event loop) long.
    ``durable`` also fsyncs, so the new bytes survive a power loss, not only a process kill.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            if isinstance(data, bytes):
                handle.write(data)
            else:
                for part in data:
                    handle.write(part.encode())
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


def append_line(path: Path, line: bytes) -> None:
    """Append one journal line (one ``write``, fsynced)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
