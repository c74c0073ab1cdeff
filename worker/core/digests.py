"""Content digests of files and folders, remembered per (paths, sizes, mtimes).

Per-task facts a worker learns once (the image's plantable files, its module names, what the
verifier installs on the image alone) are keyed by what the task holds, not by where it lies: a
task folder edited under a running worker is looked at again, and two copies of one task share.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

_DIGESTS: dict[tuple[object, ...], str] = {}
_MEMO_LIMIT = 4096  # stamps remembered before the memo starts over (a worker of many tasks)


def content_digest(*paths: Path) -> str:
    """A hash of every file under ``paths`` (a file or a folder each; a missing one counts as
    missing), of their relative names, modes and link targets."""
    stamp = tuple(_stamp(path) for path in paths)
    found = _DIGESTS.get(stamp)
    if found is None:
        if len(_DIGESTS) >= _MEMO_LIMIT:
            _DIGESTS.clear()
        digest = hashlib.sha256(b"v1")
        for path in paths:
            _hash_into(digest, path)
        found = _DIGESTS[stamp] = digest.hexdigest()[:24]
    return found


def _entries(path: Path) -> list[Path]:
    if path.is_dir() and not path.is_symlink():
        return sorted(path.rglob("*"))
    return []


def _stamp(path: Path) -> tuple[object, ...]:
    rows: list[object] = [str(path)]
    for entry in [path, *_entries(path)]:
        try:
            info = entry.lstat()
        except OSError:
            rows.append((str(entry), None))
            continue
        rows.append((str(entry), info.st_mode, info.st_size, info.st_mtime_ns, info.st_ino))
    return tuple(rows)


def _hash_into(digest: hashlib._Hash, path: Path) -> None:
    digest.update(b"\0P")
    for entry in [path, *_entries(path)]:
        rel = "." if entry == path else entry.relative_to(path).as_posix()
        try:
            if entry.is_symlink():
                digest.update(f"L{rel}->{os.readlink(entry)}\0".encode())
            elif entry.is_file():
                digest.update(f"F{rel}:{entry.stat().st_mode & 0o777}\0".encode())
                with entry.open("rb") as handle:  # streamed: a task's data files may be big
                    digest.update(hashlib.file_digest(handle, "sha256").digest())
            elif entry.is_dir():
                digest.update(f"D{rel}\0".encode())
            else:
                digest.update(f"M{rel}\0".encode())  # missing, or a socket or fifo
        except OSError:
            digest.update(f"E{rel}\0".encode())
