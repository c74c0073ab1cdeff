"""Which task ids are well-formed, and which are excluded from public task sets.

A task id is the name of a direct child folder of ``tasks/``: it must not look like a path.

A task id is *excluded* when either

- it is one of :data:`KNOWN_EXCLUDED_TASK_IDS`, the SkillsBench tasks kept out of every public set
  (they live in SkillsBench's ``tasks_excluded/``), or
- a folder of that name exists in an excluded folder next to the tasks folder
  (``tasks-extra/`` or ``tasks_excluded/``, see :data:`EXCLUDED_DIR_NAMES`), and none in ``tasks/``.

Public task sets never contain excluded ids; an assessment may select one only with
``allow_excluded_tasks: true``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

TASK_ID_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
_TASK_ID = re.compile(TASK_ID_PATTERN)

EXCLUDED_DIR_NAMES: Final = ("tasks-extra", "tasks_excluded")
KNOWN_EXCLUDED_TASK_IDS: Final = frozenset(
    {
        "diff-transformer_impl",
        "mhc-layer-impl",
        "scheduling-email-assistant",
        "speaker-diarization-subtitles",
    }
)


def task_id_problem(task_id: object) -> str | None:
    """Why ``task_id`` is not a plain task folder name, or None when it is one."""
    if not isinstance(task_id, str):
        return f"task id must be a string, got {type(task_id).__name__}"
    if not task_id:
        return "task id is empty"
    if any(sep in task_id for sep in ("/", "\\")) or task_id in {".", ".."}:
        return f"task id {task_id!r} is path-like (a task id is a folder name, not a path)"
    if not _TASK_ID.match(task_id):
        return (
            f"task id {task_id!r} is not a folder name of the form {TASK_ID_PATTERN} "
            "(letters, digits, '.', '_', '-'; starts with a letter or digit)"
        )
    return None


def excluded_reason(task_id: str, tasks_dir: Path | None = None) -> str | None:
    """Why ``task_id`` is excluded from public sets, or None when it is not excluded."""
    if task_id in KNOWN_EXCLUDED_TASK_IDS:
        return f"{task_id!r} is a SkillsBench task excluded from public task sets"
    if tasks_dir is not None:
        found = excluded_folder(task_id, tasks_dir)
        if found is not None and not (tasks_dir / task_id).is_dir():
            return f"{task_id!r} lives in {found.parent.name}/, which is never public"
    return None


def excluded_folder(task_id: str, tasks_dir: Path) -> Path | None:
    """The folder of ``task_id`` in an excluded folder next to ``tasks_dir``, if there is one."""
    for name in EXCLUDED_DIR_NAMES:
        candidate = tasks_dir.parent / name / task_id
        if candidate.is_dir():
            return candidate
    return None
