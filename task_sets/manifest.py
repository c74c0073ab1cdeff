"""Task-set manifests (``skillsbench.agentbeats.task_set.v1``): model, load, build, verify, shard.

A manifest pins an ordered list of tasks with the metadata public rows carry (``task_id``,
``task_digest``, ``category``, ``difficulty``, ``tags``) and a ``task_set_digest`` over the whole
document (rule in :mod:`task_sets.digest`). Manifests are written the way the published ones are:
``json.dumps(document, indent=2) + "\\n"`` with keys in the published order.

Named sets ship as JSON files next to this module (``skillsbench-v1.1``, ``smoke``, ``examples``,
...); :func:`load_task_set` takes such a name or a path. Loading checks the stored digest, so a
manifest that was edited by hand without re-digesting is refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from task_sets.digest import task_digest, task_set_digest
from task_sets.excluded import EXCLUDED_DIR_NAMES, excluded_reason, task_id_problem
from task_sets.task import Task, TaskError, discover_tasks, load_task

SCHEMA_VERSION: Final = "skillsbench.agentbeats.task_set.v1"
WITH_SKILLS: Final = "with_skills"
Condition = Literal["with_skills", "without_skills"]
DIGEST_PATTERN: Final = r"^sha256:[0-9a-f]{64}$"
TASK_SET_NAME_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
PACKAGED_DIR: Final = Path(__file__).resolve().parent

T = TypeVar("T")


class TaskSetError(ValueError):
    """A manifest that cannot be read, built or trusted; the message names the file or set."""


class TaskEntry(BaseModel):
    """One task of a set, with the metadata public rows carry."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: StrictStr
    task_digest: StrictStr = Field(pattern=DIGEST_PATTERN)
    category: StrictStr | None
    difficulty: StrictStr | None
    tags: list[StrictStr]

    @field_validator("task_id")
    @classmethod
    def _plain_id(cls, value: str) -> str:
        problem = task_id_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value


class TaskSetManifest(BaseModel):
    """The manifest document; field order is the published key order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal["skillsbench.agentbeats.task_set.v1"]
    task_set: StrictStr = Field(pattern=TASK_SET_NAME_PATTERN)
    condition: Condition
    allow_excluded_tasks: StrictBool
    shard_index: StrictInt = Field(ge=0)
    num_shards: StrictInt = Field(ge=1)
    task_count: StrictInt = Field(ge=0)
    tasks: list[TaskEntry]
    task_set_digest: StrictStr = Field(pattern=DIGEST_PATTERN)
    source_registry: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> TaskSetManifest:
        if self.task_count != len(self.tasks):
            raise ValueError(f"task_count is {self.task_count} but tasks lists {len(self.tasks)}")
        if self.shard_index >= self.num_shards:
            raise ValueError(
                f"shard_index {self.shard_index} must be below num_shards {self.num_shards}"
            )
        seen: set[str] = set()
        for entry in self.tasks:
            if entry.task_id in seen:
                raise ValueError(f"task {entry.task_id!r} is listed twice")
            seen.add(entry.task_id)
        return self

    @classmethod
    def create(
        cls,
        *,
        task_set: str,
        tasks: Sequence[TaskEntry],
        condition: Condition = WITH_SKILLS,
        allow_excluded_tasks: bool = False,
        source_registry: dict[str, Any] | None = None,
    ) -> TaskSetManifest:
        """A new whole-set manifest (shard 0 of 1) with its digest computed."""
        body: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "task_set": task_set,
            "condition": condition,
            "allow_excluded_tasks": allow_excluded_tasks,
            "shard_index": 0,
            "num_shards": 1,
            "task_count": len(tasks),
            "tasks": [entry.model_dump() for entry in tasks],
        }
        if source_registry is not None:
            body["source_registry"] = source_registry
        body["task_set_digest"] = task_set_digest(body)
        return parse_manifest(body, source=f"task set {task_set!r}")

    def document(self) -> dict[str, Any]:
        """The JSON document, keys in the published order."""
        data = self.model_dump(mode="json")
        if data["source_registry"] is None:
            del data["source_registry"]
        return data

    def computed_digest(self) -> str:
        return task_set_digest(self.document())

    @property
    def task_ids(self) -> list[str]:
        return [entry.task_id for entry in self.tasks]

    def entry(self, task_id: str) -> TaskEntry | None:
        return next((entry for entry in self.tasks if entry.task_id == task_id), None)


def dumps_manifest(manifest: TaskSetManifest) -> str:
    """The manifest as written to disk (the published formatting)."""
    return json.dumps(manifest.document(), indent=2) + "\n"


def parse_manifest(data: Any, *, source: str) -> TaskSetManifest:
    """Validate a manifest document and check its stored digest against its content."""
    if not isinstance(data, Mapping):
        raise TaskSetError(f"{source}: a task-set manifest must be a JSON object")
    try:
        manifest = TaskSetManifest.model_validate(dict(data))
    except ValidationError as exc:
        raise TaskSetError(f"{source}: {_describe(exc)}") from None
    computed = task_set_digest(data)
    if manifest.task_set_digest != computed:
        raise TaskSetError(
            f"{source}: stored task_set_digest {manifest.task_set_digest} does not match "
            f"the content ({computed})"
        )
    return manifest


def read_json(path: str | Path) -> Any:
    """A JSON file's content; unreadable or invalid files raise :class:`TaskSetError`."""
    file = Path(path)
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TaskSetError(f"{file}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskSetError(f"{file}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise TaskSetError(f"{file}: not valid JSON: {exc}") from None


def read_manifest(path: str | Path) -> TaskSetManifest:
    return parse_manifest(read_json(path), source=str(path))


def packaged_task_sets() -> dict[str, Path]:
    """Names of the task sets shipped with the package, mapped to their files."""
    return {file.stem: file for file in sorted(PACKAGED_DIR.glob("*.json"))}


def is_path(name_or_path: str) -> bool:
    return name_or_path.endswith(".json") or "/" in name_or_path or "\\" in name_or_path


def load_task_set(name_or_path: str | Path) -> TaskSetManifest:
    """A packaged task set by name (``skillsbench-v1.1``, ``smoke``, ``examples``) or a file."""
    if isinstance(name_or_path, Path) or is_path(name_or_path):
        return read_manifest(name_or_path)
    packaged = packaged_task_sets()
    file = packaged.get(name_or_path)
    if file is None:
        raise TaskSetError(
            f"unknown task set {name_or_path!r} (known: {', '.join(packaged)}; "
            "or give a path to a manifest .json)"
        )
    manifest = read_manifest(file)
    if manifest.task_set != name_or_path:
        raise TaskSetError(f"{file}: names task set {manifest.task_set!r}, not {name_or_path!r}")
    return manifest


def shard(items: Sequence[T], shard_index: int, num_shards: int) -> list[T]:
    """Items at positions ``i`` with ``i % num_shards == shard_index``, order kept."""
    if num_shards < 1:
        raise ValueError(f"num_shards must be at least 1, got {num_shards}")
    if not 0 <= shard_index < num_shards:
        raise ValueError(f"shard_index must be in [0, {num_shards}), got {shard_index}")
    return [item for i, item in enumerate(items) if i % num_shards == shard_index]


LEADERBOARD_METADATA: Final = ("category", "difficulty")


def missing_metadata(task: Task) -> list[str]:
    """The ``[metadata]`` fields the leaderboard groups by that ``task`` lacks."""
    meta = task.config.metadata
    return [key for key in LEADERBOARD_METADATA if not getattr(meta, key)]


@dataclass
class BuildReport:
    """What :func:`build_manifest` left out and noticed, when asked to build what loads."""

    refused: dict[str, str] = field(default_factory=dict)  # task id -> one-line reason
    warnings: dict[str, list[str]] = field(default_factory=dict)  # task id -> warnings


def entry_for_task(
    folder: Path, *, require_metadata: bool = True, warnings: list[str] | None = None
) -> TaskEntry:
    """The manifest entry of one task folder: its digest and ``[metadata]`` fields.

    Entering a task set needs ``category`` and ``difficulty`` (the leaderboard's by-category
    and by-difficulty queries group by them); a plain run does not (``require_metadata=False``:
    a missing one is recorded as null, unknown, as BenchFlow runs such a task)."""
    task = load_task(folder)
    if warnings is not None:
        warnings.extend(task.warnings)
    meta = task.config.metadata
    missing = missing_metadata(task)
    if missing and require_metadata:
        raise TaskSetError(
            f"{folder}: task.toml [metadata] needs {' and '.join(missing)} to enter a task set"
        )
    return TaskEntry(
        task_id=task.task_id,
        task_digest=task_digest(folder),
        category=meta.category,
        difficulty=meta.difficulty,
        tags=list(meta.tags),
    )


def build_manifest(
    tasks_dir: str | Path,
    task_set: str,
    *,
    task_ids: Sequence[str] | None = None,
    condition: Condition = WITH_SKILLS,
    allow_excluded_tasks: bool = False,
    source_registry: dict[str, Any] | None = None,
    require_metadata: bool = True,
    report: BuildReport | None = None,
) -> TaskSetManifest:
    """A manifest of the direct child tasks of ``tasks_dir`` (all, sorted, or ``task_ids`` in order).

    Excluded ids are skipped when selecting all tasks and refused when named, unless
    ``allow_excluded_tasks`` (which the manifest then records). ``require_metadata=False`` is
    for the ad-hoc ``local`` set of a plain run (see :func:`entry_for_task`). With ``report``,
    a task folder that does not load (or lacks metadata) is left out and recorded there with
    its reason instead of failing the whole set, and each task's warnings are recorded too.
    """
    root = Path(tasks_dir)
    if root.name in EXCLUDED_DIR_NAMES:
        raise TaskSetError(f"{root}: tasks in {root.name}/ are never part of a task set")
    found = discover_tasks(root)
    if task_ids is None:
        selected = [
            tid for tid in found if allow_excluded_tasks or excluded_reason(tid, root) is None
        ]
    else:
        selected = list(task_ids)
        for tid in selected:
            problem = task_id_problem(tid)
            if problem is not None:
                raise TaskSetError(problem)
            reason = excluded_reason(tid, root)
            if reason is not None and not allow_excluded_tasks:
                raise TaskSetError(f"{reason}; allow_excluded_tasks is off")
            if tid not in found:
                raise TaskSetError(
                    f"{root}: no task folder {tid!r} (a direct child holding task.toml)"
                )
        if len(set(selected)) != len(selected):
            raise TaskSetError("task ids are listed twice")
    if not selected:
        raise TaskSetError(f"{root}: no tasks to put in task set {task_set!r}")
    entries: list[TaskEntry] = []
    for tid in selected:
        if report is None:
            entries.append(entry_for_task(found[tid], require_metadata=require_metadata))
            continue
        warnings: list[str] = []
        try:
            entries.append(
                entry_for_task(found[tid], require_metadata=require_metadata, warnings=warnings)
            )
        except (TaskError, TaskSetError) as exc:
            report.refused[tid] = str(exc).removeprefix(f"{found[tid]}: ")
        if warnings:
            report.warnings[tid] = warnings
    if not entries:
        assert report is not None  # without a report the first refusal raised
        reasons = "; ".join(f"{tid}: {why}" for tid, why in report.refused.items())
        raise TaskSetError(
            f"{root}: no task folder loads ({reasons}); nothing to put in task set {task_set!r}"
        )
    return TaskSetManifest.create(
        task_set=task_set,
        tasks=entries,
        condition=condition,
        allow_excluded_tasks=allow_excluded_tasks,
        source_registry=source_registry,
    )


def verify_manifest(
    data: Any,
    *,
    source: str,
    tasks_dir: str | Path | None = None,
    check_task_digests: bool = False,
) -> list[str]:
    """Every problem of a manifest document (empty when it is sound); ``source`` names it in
    schema errors, callers put it in front of the list.

    Always: schema, digest, no path-like ids, no excluded ids (unless the manifest itself allows
    them). With ``tasks_dir``: every id is a direct child task folder of it. With
    ``check_task_digests`` too: each folder's digest and metadata equal the manifest's.
    """
    problems: list[str] = []
    try:
        manifest: TaskSetManifest | None = parse_manifest(data, source=source)
    except TaskSetError as exc:
        problems.append(str(exc).removeprefix(f"{source}: "))
        manifest = None
    raw_tasks = data.get("tasks") if isinstance(data, Mapping) else None
    ids = [t.get("task_id") for t in raw_tasks or [] if isinstance(t, Mapping)]
    allow_excluded = manifest.allow_excluded_tasks if manifest is not None else False
    root = Path(tasks_dir) if tasks_dir is not None else None
    if root is not None and root.name in EXCLUDED_DIR_NAMES:
        problems.append(f"{root}: tasks in {root.name}/ are never part of a task set")
    absent: list[str] = []
    for tid in ids:
        problem = task_id_problem(tid)
        if problem is not None:
            if manifest is not None:  # else the schema error above already names it
                problems.append(problem)
            continue
        assert isinstance(tid, str)
        reason = excluded_reason(tid, root)
        if reason is not None and not allow_excluded:
            problems.append(reason)
            continue
        if root is None:
            continue
        folder = root / tid
        if not folder.is_dir() or folder.is_symlink() or not (folder / "task.toml").is_file():
            absent.append(tid)
        elif check_task_digests and manifest is not None:
            problems.extend(_compare_entry(manifest, tid, folder))
    if absent:
        shown = ", ".join(absent[:5]) + (f" and {len(absent) - 5} more" if len(absent) > 5 else "")
        problems.append(
            f"{len(absent)} task ids are not direct child task folders of {root}: {shown}"
        )
    return problems


def _compare_entry(manifest: TaskSetManifest, tid: str, folder: Path) -> list[str]:
    stored = manifest.entry(tid)
    assert stored is not None
    try:
        actual = entry_for_task(folder)
    except (TaskError, TaskSetError) as exc:
        return [str(exc)]
    problems = []
    for key in ("task_digest", "category", "difficulty", "tags"):
        if getattr(stored, key) != getattr(actual, key):
            problems.append(
                f"{tid}: {key} is {getattr(stored, key)!r} in the manifest "
                f"but {getattr(actual, key)!r} in {folder}"
            )
    return problems


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "manifest"
        parts.append(f"{where}: {str(err['msg']).removeprefix('Value error, ')}")
    return "; ".join(parts)
