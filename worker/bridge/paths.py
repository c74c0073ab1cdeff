"""Where a purple agent may read and write: lexical checks done by the bridge before asking the
worker, which re-checks after resolving symlinks inside the sandbox."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

# One refusal for both checks: the bridge's lexical one here (absolute elsewhere, ``..``, empty,
# NUL) and the worker's after resolving symlinks in the sandbox.
from worker.acp.sandbox_fs import PathRefused

__all__ = ["PathRefused", "resolve"]


def resolve(path: str, workspace: str, allowed_roots: Sequence[str]) -> str:
    """The absolute sandbox path for ``path`` (relative paths are taken from the workspace)."""
    if not path or "\x00" in path:
        raise PathRefused(f"{path!r}: empty path or NUL byte")
    if ".." in path.split("/"):
        raise PathRefused(f"{path}: '..' is not allowed")
    absolute = posixpath.normpath(path if path.startswith("/") else posixpath.join(workspace, path))
    for root in allowed_roots:
        root = posixpath.normpath(root)
        if absolute == root or absolute.startswith(root.rstrip("/") + "/"):
            return absolute
    raise PathRefused(f"{path}: outside the allowed folders ({', '.join(allowed_roots)})")
