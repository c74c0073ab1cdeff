"""Crash-safe file writes: a whole document replaced atomically, one line appended (both fsynced),
and what a full disk looks like to the worker (:func:`disk_full`, :func:`has_space`)."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import tempfile
from pathlib import Path

# ENOSPC (no space left on the device) and EDQUOT (the user's quota): the disk's fault, not the
# writer's; a write may succeed once space returns.
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_DISK_FULL_TEXTS = ("No space left on device", "Disk quota exceeded")
# What :func:`has_space` writes to tell whether a folder takes writes again: enough for a few
# journal lines and a result.json, small enough to fit on any disk with room to work.
SPACE_PROBE_BYTES = 64 * 1024


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
    """Append one journal line (one ``write``, fsynced). A write that fails or is cut short (a
    full disk) is taken back: the file is truncated to where it was, so the next line never
    lands after a torn one (a reader would skip both)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        try:
            written = os.write(fd, line)
            if written != len(line):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
            os.fsync(fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def disk_full(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or what it was raised from or during) is a full disk or quota."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS:
            return True
        if any(text in str(exc) for text in _DISK_FULL_TEXTS):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def has_space(folder: Path, size: int = SPACE_PROBE_BYTES) -> bool:
    """Whether ``folder`` takes a write of ``size`` bytes now (written, fsynced and removed: the
    only answer that holds for quotas and reserved blocks too, where free counts mislead)."""
    probe = folder / f".space-probe-{secrets.token_hex(4)}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        if exc.errno in DISK_FULL_ERRNOS:
            return False
        raise
    try:
        chunk = b"\0" * size
        written = os.write(fd, chunk)
        if written != size:
            return False
        os.fsync(fd)
        return True
    except OSError as exc:
        if exc.errno in DISK_FULL_ERRNOS:
            return False
        raise
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(probe)
