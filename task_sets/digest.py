"""The two digests of the task-set contract.

``task_set_digest`` is the published rule, reproduced byte for byte::

    "sha256:" + sha256(json.dumps(manifest minus "task_set_digest",
                                  sort_keys=True, separators=(",", ":"))).hexdigest()

(``json.dumps`` with its default ``ensure_ascii=True``; published manifests are ASCII only.)

``task_digest`` is ours (the published algorithm is not public), version-tagged so that it can
change without silently colliding with older values. Algorithm ``skillsbench.agentbeats.task_digest.v1``:

1. Walk the task folder recursively without following symlinks. Skip ``__pycache__`` folders and
   their content, files ending in ``.pyc``/``.pyo``, and ``.DS_Store`` files. Empty folders do
   not count.
2. For every remaining entry take its path relative to the task folder, ``/``-separated, encoded
   as UTF-8. A regular file contributes ``b"F\\0" + path + b"\\0" + sha256(content).hexdigest() + b"\\n"``;
   a symlink contributes ``b"L\\0" + path + b"\\0" + sha256(link target).hexdigest() + b"\\n"``.
   Anything else (socket, FIFO, device) is an error.
3. Sort the records by path bytes, and hash ``b"skillsbench.agentbeats.task_digest.v1\\n"``
   followed by the records: ``"sha256:" + hexdigest``.

File bytes are hashed as stored (no newline conversion) and file modes, owners and times are
ignored, so the digest is the same on every machine and for every directory listing order. The
folder's own name is not hashed: the task id sits next to the digest in the manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

TASK_DIGEST_ALGORITHM: Final = "skillsbench.agentbeats.task_digest.v1"
DIGEST_FIELD: Final = "task_set_digest"
IGNORED_DIR_NAMES: Final = frozenset({"__pycache__"})
IGNORED_FILE_NAMES: Final = frozenset({".DS_Store"})
IGNORED_SUFFIXES: Final = (".pyc", ".pyo")


def task_set_digest(manifest: Mapping[str, Any]) -> str:
    """Digest of a task-set manifest as published: every key but ``task_set_digest`` is hashed."""
    body = {key: value for key, value in manifest.items() if key != DIGEST_FIELD}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def is_ignored(name: str, *, is_dir: bool) -> bool:
    """Files that tools leave behind and that must not change a task's digest."""
    if is_dir:
        return name in IGNORED_DIR_NAMES
    return name in IGNORED_FILE_NAMES or name.endswith(IGNORED_SUFFIXES)


def task_digest(folder: str | Path) -> str:
    """``task_digest`` of one task folder (algorithm in the module docstring)."""
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"{root}: cannot digest, not a folder")
    records: list[tuple[bytes, bytes]] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False, onerror=_raise):
        here = Path(dirpath)
        # os.walk lists symlinks to folders under dirnames; they are links, not folders to enter.
        for name in list(dirnames):
            if (here / name).is_symlink():
                dirnames.remove(name)
                filenames.append(name)
            elif is_ignored(name, is_dir=True):
                dirnames.remove(name)
        for name in filenames:
            if is_ignored(name, is_dir=False):
                continue
            path = here / name
            rel = path.relative_to(root).as_posix().encode("utf-8", "surrogateescape")
            records.append((rel, _record(path, rel)))
    records.sort(key=lambda item: item[0])
    digest = hashlib.sha256(TASK_DIGEST_ALGORITHM.encode() + b"\n")
    for _, record in records:
        digest.update(record)
    return "sha256:" + digest.hexdigest()


def _record(path: Path, rel: bytes) -> bytes:
    mode = path.lstat().st_mode
    if stat.S_ISLNK(mode):
        kind, content = b"L", os.fsencode(os.readlink(path))
    elif stat.S_ISREG(mode):
        kind, content = b"F", path.read_bytes()
    else:
        raise ValueError(f"{path}: cannot digest a special file (not a regular file or symlink)")
    return kind + b"\0" + rel + b"\0" + hashlib.sha256(content).hexdigest().encode() + b"\n"


def _raise(exc: OSError) -> None:
    raise exc
