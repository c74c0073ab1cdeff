"""Where fetched task sets live: one folder per task set and manifest digest, complete or absent.

``task-set fetch`` fills an entry in a temporary folder and renames it into place, so an entry
that exists is whole: ``run --task-set`` may use it without checking it again. The entry is named
by the set's ``task_set_digest`` too, so a changed manifest never picks up another's tasks.

Layout: ``<cache>/<task_set>-<first 16 hex of task_set_digest>/{tasks/<task-id>/…, fetched.json}``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

CACHE_DIR_VAR: Final = "SKILLSBENCH_TASK_CACHE"
RECORD_NAME: Final = "fetched.json"
RECORD_SCHEMA: Final = "skillsbench.agentbeats.fetched_task_set.v1"
TASKS_DIRNAME: Final = "tasks"


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$SKILLSBENCH_TASK_CACHE``, else ``$XDG_CACHE_HOME`` (or ``~/.cache``) +
    ``skillsbench-agentbeats/task-sets``."""
    env = os.environ if environ is None else environ
    explicit = env.get(CACHE_DIR_VAR)
    if explicit:
        return Path(explicit)
    xdg = env.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "skillsbench-agentbeats" / "task-sets"


def entry_dir(cache_dir: Path, task_set: str, task_set_digest: str) -> Path:
    """The cache entry of one task set at one manifest digest."""
    return cache_dir / f"{task_set}-{task_set_digest.removeprefix('sha256:')[:16]}"


def fetched_tasks_dir(
    task_set: str, task_set_digest: str, cache_dir: Path | None = None
) -> Path | None:
    """The tasks folder of a fetched task set, or None when it was not fetched."""
    entry = entry_dir(cache_dir or default_cache_dir(), task_set, task_set_digest)
    tasks = entry / TASKS_DIRNAME
    return tasks if (entry / RECORD_NAME).is_file() and tasks.is_dir() else None
