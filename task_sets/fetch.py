"""``task-set fetch``: a published task set's tasks from its source registry into the cache.

The pinned ref is shallow-fetched into a temporary folder inside the cache dir, only the
manifest's tasks are checked out, and they are checked against the manifest (every id present
as a task folder; each ``task_digest`` when the manifest names an algorithm we know). Only then
is the folder renamed into place, so a failure never leaves a half-written entry
(:mod:`task_sets.task_cache`). A complete entry is checked again and kept (re-fetching is a
no-op) unless ``force``.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from task_sets.digest import TASK_DIGEST_ALGORITHM, task_digest
from task_sets.manifest import TaskSetManifest
from task_sets.task_cache import RECORD_NAME, RECORD_SCHEMA, TASKS_DIRNAME, entry_dir
from task_sets.task_source import (
    FetchError,
    TaskSource,
    check_out,
    fetch_commit,
    task_folders,
    task_source,
)

SHOWN_IDS = 10
STAGING_PREFIX = ".fetch-"
OLD_PREFIX = ".old-"
STALE_AFTER_SEC = 24 * 3600  # a temporary folder this old was left by a killed fetch
LFS_POINTER_HEAD = b"version https://git-lfs.github.com/spec/"
LFS_POINTER_MAX = 1024


@dataclass(frozen=True)
class FetchResult:
    tasks_dir: Path
    source: TaskSource
    commit: str
    fetched: bool  # False: a complete entry was already there
    digests_checked: bool


def fetch_task_set(
    manifest: TaskSetManifest,
    cache_dir: Path,
    *,
    url: str | None = None,
    force: bool = False,
) -> FetchResult:
    """Fetch ``manifest``'s tasks into ``cache_dir`` (or find them there); :class:`FetchError`."""
    source = task_source(manifest.task_set, manifest.source_registry, url)
    target = entry_dir(cache_dir, manifest.task_set, manifest.task_set_digest)
    if not force and (target / RECORD_NAME).is_file():
        kept = _kept(target, manifest, source)
        if kept is not None:
            return kept
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        _sweep(cache_dir)
        staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=cache_dir))
    except OSError as exc:
        raise FetchError(f"cannot write the cache dir {cache_dir}: {exc}") from None
    try:
        commit = _fill(staging, manifest, source)
        _install(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return FetchResult(target / TASKS_DIRNAME, source, commit, True, source.digests_known)


def _sweep(cache_dir: Path) -> None:
    """Remove the temporary folders a killed fetch left (a live one is younger than a day)."""
    limit = time.time() - STALE_AFTER_SEC
    for path in cache_dir.iterdir():
        if path.name.startswith((STAGING_PREFIX, OLD_PREFIX)) and path.is_dir():
            with contextlib.suppress(OSError):
                if path.lstat().st_mtime < limit:
                    shutil.rmtree(path)


def _fill(staging: Path, manifest: TaskSetManifest, source: TaskSource) -> str:
    """Fetch, check out and check the tasks into ``staging/tasks``; write the record."""
    repo = staging / "repo"
    commit = fetch_commit(source, repo)
    ids = manifest.task_ids
    present = task_folders(repo, commit, source.tasks_path)
    _refuse("the source has no folder for", [tid for tid in ids if tid not in present], source)
    check_out(repo, commit, [f"{source.tasks_path}/{tid}" for tid in ids])
    tasks = staging / TASKS_DIRNAME
    tasks.mkdir()
    for tid in ids:
        (repo / source.tasks_path / tid).rename(tasks / tid)
    shutil.rmtree(repo)
    _refuse("no task.toml in", [t for t in ids if not (tasks / t / "task.toml").is_file()], source)
    _refuse(
        "Git LFS pointers instead of files (install git-lfs, then fetch again) in",
        [tid for tid in ids if _has_lfs_pointer(tasks / tid)],
        source,
    )
    digests = {tid: task_digest(tasks / tid) for tid in ids}
    if source.digests_known:
        differ = [e.task_id for e in manifest.tasks if digests[e.task_id] != e.task_digest]
        _refuse("task_digest differs from the manifest's for", differ, source)
    record = _record(manifest, source, commit, digests)
    (staging / RECORD_NAME).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return commit


def _has_lfs_pointer(folder: Path) -> bool:
    """Whether a file of ``folder`` is a Git LFS pointer (git-lfs was not there to smudge it)."""
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.stat().st_size <= LFS_POINTER_MAX:
            with path.open("rb") as file:
                if file.read(len(LFS_POINTER_HEAD)) == LFS_POINTER_HEAD:
                    return True
    return False


def _refuse(what: str, ids: list[str], source: TaskSource) -> None:
    if not ids:
        return
    shown = ", ".join(ids[:SHOWN_IDS])
    more = f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else ""
    raise FetchError(
        f"{source.url} at {source.pin}: {what} {len(ids)} task(s): {shown}{more}; nothing fetched"
    )


def _record(
    manifest: TaskSetManifest, source: TaskSource, commit: str, digests: dict[str, str]
) -> dict[str, Any]:
    return {
        "schema_version": RECORD_SCHEMA,
        "task_set": manifest.task_set,
        "task_set_digest": manifest.task_set_digest,
        "source": {
            "url": source.url,
            "git_tag": source.tag,
            "git_commit": commit,
            "tasks_path": source.tasks_path,
        },
        "task_digests_checked": source.digests_known,
        "task_digest_algorithm": TASK_DIGEST_ALGORITHM,
        "task_digests": digests,
    }


def _install(staging: Path, target: Path) -> None:
    """Rename the finished entry into place; an old entry goes only once the new one is in."""
    old: Path | None = None
    try:
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=OLD_PREFIX, dir=target.parent)) / "entry"
            target.rename(old)
        try:
            staging.rename(target)
        except OSError:
            if old is not None:
                old.rename(target)
            raise
    except OSError as exc:
        raise FetchError(f"cannot put the fetched tasks at {target}: {exc}") from None
    finally:
        if old is not None:
            shutil.rmtree(old.parent, ignore_errors=True)


def _kept(target: Path, manifest: TaskSetManifest, source: TaskSource) -> FetchResult | None:
    """The existing entry when it still holds exactly what was fetched; None to fetch again."""
    try:
        record = json.loads((target / RECORD_NAME).read_text(encoding="utf-8"))
        digests = record["task_digests"]
        tasks = target / TASKS_DIRNAME
        if record.get("task_set_digest") != manifest.task_set_digest or set(digests) != set(
            manifest.task_ids
        ):
            return None
        if any(task_digest(tasks / tid) != digests[tid] for tid in manifest.task_ids):
            return None
        commit = str(record["source"]["git_commit"])
        checked = bool(record.get("task_digests_checked"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return FetchResult(tasks, source, commit, False, checked)
