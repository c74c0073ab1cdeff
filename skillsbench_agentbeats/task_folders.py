"""Which tasks folder ``run --task-set`` uses: the fetched copy of a published set when there is
one (``task-set fetch``), and, before anything runs, a refusal that names the missing tasks and
says how to get them (the tasks of the SkillsBench sets are not in this repository)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from serving.invocation import command_prefix
from task_sets.manifest import load_task_set
from task_sets.task_cache import fetched_tasks_dir
from worker.runs.catalog import TASKS_DIR_VAR

SHOWN_IDS = 5


def fetched_tasks(task_set: str, task_cache: Path | None) -> Path | None:
    """The fetched tasks folder of ``task_set``; None when it was not fetched or
    ``$SKILLSBENCH_TASKS_DIR`` chooses the folder."""
    if os.environ.get(TASKS_DIR_VAR):
        return None
    manifest = load_task_set(task_set)
    return fetched_tasks_dir(manifest.task_set, manifest.task_set_digest, task_cache)


def check_task_folders(manifest: dict[str, Any], folder: Path, task_set: str) -> None:
    """Refuse (ValueError, one line) a selection whose tasks have no folder in ``folder``."""
    ids = [str(entry["task_id"]) for entry in manifest["tasks"]]
    missing = [tid for tid in ids if not (folder / tid / "task.toml").is_file()]
    if not missing:
        return
    shown = ", ".join(missing[:SHOWN_IDS])
    more = f" and {len(missing) - SHOWN_IDS} more" if len(missing) > SHOWN_IDS else ""
    if manifest.get("source_registry"):
        how = (
            f"get them with `{command_prefix()} task-set fetch {shlex.quote(task_set)}` "
            "(or give --tasks-dir)"
        )
    else:
        how = "give the --tasks-dir that holds them"
    raise ValueError(
        f"task set {manifest['task_set']!r}: {len(missing)} of its {len(ids)} tasks have no "
        f"task folder in {folder}: {shown}{more}; {how}"
    )
