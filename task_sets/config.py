"""The assessment config: what an AgentBeats request's ``config`` may hold, and the tasks it selects.

Shared by the green agent (which validates requests) and the worker (which runs the selection).
Values arrive from JSON, or as strings when Amber interpolates config (``"14400"``, ``"false"``),
so whole numbers and booleans are also read from their string forms. Every problem is reported as
a :class:`ConfigError` naming the field and the rule it breaks.

Selection (:func:`select_tasks`): the task set's tasks in manifest order (``tasks: "all"``) or the
given ``task_ids`` in the given order, then shard ``k`` of ``n`` keeps positions ``i % n == k``.
Each selected task appears once in :attr:`TaskSelection.tasks`; the worker runs
``num_instances`` trials of it (:meth:`TaskSelection.trials`), so all instances of a task land on
the same shard.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from task_sets.excluded import excluded_folder, excluded_reason, task_id_problem
from task_sets.manifest import (
    TASK_SET_NAME_PATTERN,
    WITH_SKILLS,
    TaskEntry,
    TaskSetError,
    TaskSetManifest,
    entry_for_task,
    load_task_set,
    shard,
)
from task_sets.task import TaskError

DEFAULT_TASK_SET: Final = "skillsbench-v1.1"
MAX_NUM_INSTANCES: Final = 100
# AgentBeats' participant UUID rule (any version, RFC 4122 variant), case-insensitive.
AGENTBEATS_UUID_PATTERN: Final = (
    r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
)
_UUID = re.compile(AGENTBEATS_UUID_PATTERN, re.IGNORECASE)
_TASK_SET_NAME = re.compile(TASK_SET_NAME_PATTERN)
_WHOLE = re.compile(r"^\s*[+-]?[0-9]+\s*$")
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


class ConfigError(ValueError):
    """An invalid assessment config. ``field`` is the first offending key (dotted for nesting)."""

    def __init__(self, field: str, rule: str, *more: tuple[str, str]) -> None:
        self.field = field
        self.rule = rule
        self.errors: list[tuple[str, str]] = [(field, rule), *more]
        super().__init__("; ".join(f"{_show(f)}: {r}" for f, r in self.errors))


def _show(field: str) -> str:
    """A field name fit for a one-line message (odd unknown keys are quoted)."""
    return field if re.fullmatch(r"[A-Za-z0-9_.-]+", field) else repr(field)


class ParticipantIds(BaseModel):
    """AgentBeats ids of the participants; the only role is ``agent``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: str = Field(pattern=AGENTBEATS_UUID_PATTERN)


class AssessmentConfig(BaseModel):
    """A validated config; build it with :func:`parse_config` (which coerces and explains)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_set: str = DEFAULT_TASK_SET
    tasks: Literal["all"] | None = "all"
    task_ids: list[str] | None = None
    condition: Literal["with_skills"] = WITH_SKILLS
    allow_excluded_tasks: bool = False
    shard_index: int = Field(default=0, ge=0)
    num_shards: int = Field(default=1, ge=1)
    num_instances: int = Field(default=1, ge=1, le=MAX_NUM_INSTANCES)
    participant_ids: ParticipantIds | None = None

    def to_wire(self) -> dict[str, Any]:
        """The config as JSON, with only the keys that were set or matter (no nulls)."""
        return self.model_dump(mode="json", exclude_none=True)


# key -> (type, default, rule); the docs table and `config check --help` read this.
CONFIG_KEYS: Final[dict[str, tuple[str, str, str]]] = {
    "task_set": (
        "string",
        f'"{DEFAULT_TASK_SET}"',
        "name of a packaged task set (not a path)",
    ),
    "tasks": ('"all"', '"all" when task_ids is absent', "exclusive with task_ids"),
    "task_ids": (
        "list of strings (or a JSON string of one)",
        "absent",
        "non-empty, no duplicates, plain folder names; each in the task set, or excluded and "
        "allowed by allow_excluded_tasks",
    ),
    "condition": (
        "string",
        '"with_skills"',
        'must be "with_skills" (the only publicly scored one)',
    ),
    "allow_excluded_tasks": ("boolean", "false", "lets task_ids name excluded tasks"),
    "shard_index": ("integer", "0", "0 <= shard_index < num_shards"),
    "num_shards": ("integer", "1", ">= 1; the shard must select at least one task"),
    "num_instances": (
        "integer",
        "1",
        f"1 <= num_instances <= {MAX_NUM_INSTANCES}; trials per task",
    ),
    "participant_ids": (
        "object {agent: UUID}",
        "absent",
        "agent is an AgentBeats UUID (any version, e.g. UUIDv7; case-insensitive)",
    ),
}


def parse_config(raw: Any) -> AssessmentConfig:
    """Validate and coerce a config (a mapping, or its JSON text); raise :class:`ConfigError`."""
    if isinstance(raw, str | bytes):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError("config", f"not valid JSON: {exc}") from None
    if not isinstance(raw, Mapping):
        raise ConfigError("config", f"must be a JSON object, got {_kind(raw)}")
    errors: list[tuple[str, str]] = []
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in CONFIG_KEYS:
            errors.append((str(key), f"unknown key (known: {', '.join(CONFIG_KEYS)})"))
            continue
        if value is None:  # unset optional values arrive as null: take the default
            continue
        try:
            values[key] = _COERCE[key](value)
        except ValueError as exc:
            field, _, rule = str(exc).partition("\0")
            errors.append((f"{key}.{field}", rule) if rule else (key, field))
    if "tasks" in values and "task_ids" in values:
        errors.append(("tasks", 'give either tasks: "all" or task_ids, not both'))
    elif "task_ids" in values:
        values["tasks"] = None
    shard_index, num_shards = values.get("shard_index", 0), values.get("num_shards", 1)
    bad_fields = {field for field, _ in errors}
    if not bad_fields & {"shard_index", "num_shards"} and shard_index >= num_shards:
        errors.append(
            ("shard_index", f"must be below num_shards ({num_shards}), got {shard_index}")
        )
    if errors:
        raise ConfigError(errors[0][0], errors[0][1], *errors[1:])
    return AssessmentConfig.model_validate(values)


def _task_set(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"must be a string, got {_kind(value)}")
    if "/" in value or "\\" in value or value.endswith(".json"):
        raise ValueError(f"must be a task set name (e.g. {DEFAULT_TASK_SET}), not a path")
    if not _TASK_SET_NAME.match(value):
        raise ValueError(f"must match {TASK_SET_NAME_PATTERN}, got {value!r}")
    return value


def _tasks(value: Any) -> str:
    if value != "all":
        raise ValueError(f'must be "all" (or use task_ids), got {value!r}')
    return "all"


def _task_ids(value: Any) -> list[str]:
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a valid JSON list: {exc}") from None
    if not isinstance(value, list):
        raise ValueError(f"must be a list of task ids, got {_kind(value)}")
    if not value:
        raise ValueError('must name at least one task (or use tasks: "all")')
    seen: set[str] = set()
    for item in value:
        problem = task_id_problem(item)
        if problem is not None:
            raise ValueError(problem)
        if item in seen:
            raise ValueError(f"lists {item!r} twice")
        seen.add(item)
    return list(value)


def _condition(value: Any) -> str:
    if value != WITH_SKILLS:
        raise ValueError(f'must be "with_skills" for public scoring, got {value!r}')
    return WITH_SKILLS


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"must be true or false, got {value!r}")


def _whole(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"must be a whole number, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _WHOLE.match(value):
        return int(value)
    raise ValueError(f"must be a whole number, got {value!r}")


def _bounded(low: int, high: int | None = None) -> Any:
    def coerce(value: Any) -> int:
        number = _whole(value)
        if number < low or (high is not None and number > high):
            bound = f">= {low}" if high is None else f"between {low} and {high}"
            raise ValueError(f"must be {bound}, got {number}")
        return number

    return coerce


def _participant_ids(value: Any) -> dict[str, str]:
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a valid JSON object: {exc}") from None
    if not isinstance(value, Mapping):
        raise ValueError(f"must be an object like {{agent: <uuid>}}, got {_kind(value)}")
    extra = sorted(str(key) for key in value if key != "agent")
    if extra:
        raise ValueError(f"{extra[0]}\0unknown role (the only participant role is agent)")
    agent = value.get("agent")
    if not isinstance(agent, str) or not _UUID.match(agent.strip()):
        raise ValueError(f"agent\0must be an AgentBeats UUID, got {agent!r}")
    return {"agent": agent.strip().lower()}


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


_COERCE: Final = {
    "task_set": _task_set,
    "tasks": _tasks,
    "task_ids": _task_ids,
    "condition": _condition,
    "allow_excluded_tasks": _boolean,
    "shard_index": _bounded(0),
    "num_shards": _bounded(1),
    "num_instances": _bounded(1, MAX_NUM_INSTANCES),
    "participant_ids": _participant_ids,
}


class TaskSelection(BaseModel):
    """The tasks one shard of an assessment runs, with the set's identity for public rows."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_set: str
    task_set_digest: str
    condition: str
    shard_index: int
    num_shards: int
    num_instances: int
    tasks: list[TaskEntry] = Field(min_length=1)

    @property
    def task_ids(self) -> list[str]:
        return [entry.task_id for entry in self.tasks]

    def trials(self) -> list[tuple[TaskEntry, int]]:
        """(task, instance index) for every trial: task order first, then instances."""
        return [(entry, i) for entry in self.tasks for i in range(self.num_instances)]


def select_tasks(
    config: AssessmentConfig,
    *,
    manifest: TaskSetManifest | None = None,
    tasks_dir: str | Path | None = None,
) -> TaskSelection:
    """The tasks of ``config``'s shard. ``tasks_dir`` is needed only to load excluded tasks."""
    if manifest is None:
        try:
            manifest = load_task_set(config.task_set)
        except TaskSetError as exc:
            raise ConfigError("task_set", str(exc)) from None
    elif manifest.task_set != config.task_set:
        raise ConfigError(
            "task_set", f"is {config.task_set!r} but the manifest given is {manifest.task_set!r}"
        )
    if manifest.condition != config.condition:
        raise ConfigError(
            "condition",
            f"task set {manifest.task_set!r} is for {manifest.condition!r}, not {config.condition!r}",
        )
    if config.task_ids is None:
        entries = list(manifest.tasks)
    else:
        root = Path(tasks_dir) if tasks_dir is not None else None
        entries = [_entry(tid, manifest, config, root) for tid in config.task_ids]
    selected = shard(entries, config.shard_index, config.num_shards)
    if not selected:
        raise ConfigError(
            "num_shards",
            f"shard {config.shard_index} of {config.num_shards} selects no task "
            f"({len(entries)} tasks selected in all)",
        )
    return TaskSelection(
        task_set=manifest.task_set,
        task_set_digest=manifest.task_set_digest,
        condition=config.condition,
        shard_index=config.shard_index,
        num_shards=config.num_shards,
        num_instances=config.num_instances,
        tasks=selected,
    )


def _entry(
    task_id: str, manifest: TaskSetManifest, config: AssessmentConfig, root: Path | None
) -> TaskEntry:
    entry = manifest.entry(task_id)
    if entry is not None:
        return entry
    reason = excluded_reason(task_id, root)
    if reason is None:
        raise ConfigError(
            "task_ids", f"unknown task id {task_id!r}: not in task set {manifest.task_set!r}"
        )
    if not config.allow_excluded_tasks:
        raise ConfigError("task_ids", f"{reason}; set allow_excluded_tasks: true to select it")
    folder = None
    if root is not None:
        folder = root / task_id if (root / task_id).is_dir() else excluded_folder(task_id, root)
    if folder is None:
        raise ConfigError(
            "task_ids", f"excluded task {task_id!r} has no folder here to load it from"
        )
    try:
        return entry_for_task(folder)
    except (TaskError, TaskSetError) as exc:
        raise ConfigError("task_ids", str(exc)) from None
