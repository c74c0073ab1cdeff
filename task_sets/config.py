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

import annotated_types
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails, PydanticCustomError

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


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _json_text(value: Any, opening: str, what: str) -> Any:
    """Amber passes lists and objects as JSON text: decode text that starts like one."""
    if isinstance(value, str) and value.strip().startswith(opening):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a valid JSON {what}: {exc}") from None
    return value


def _whole(value: Any) -> Any:
    """A whole number from a JSON number or its string form; the field's bounds apply after."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _WHOLE.match(value):
        return int(value)
    raise ValueError(f"must be a whole number, got {value!r}")


def _elsewhere(field: str, rule: str) -> PydanticCustomError:
    """An error that a check on one field finds in another (``field``)."""
    return PydanticCustomError("config_other_field", "{rule}", {"field": field, "rule": rule})


def _doc(kind: str, rule: str, default: str | None = None) -> Any:
    """The documentation of a field (the README's table): its type, rule and shown default."""
    extra = {"doc_type": kind} | ({"doc_default": default} if default is not None else {})
    return {"description": rule, "json_schema_extra": extra}


class ParticipantIds(BaseModel):
    """AgentBeats ids of the participants; the only role is ``agent``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: str = Field(pattern=AGENTBEATS_UUID_PATTERN)

    @model_validator(mode="before")
    @classmethod
    def _agent_given(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "agent" not in data:
            return {**data, "agent": None}  # reported as "not an AgentBeats UUID, got None"
        return data

    @field_validator("agent", mode="before")
    @classmethod
    def _uuid(cls, value: Any) -> str:
        if not isinstance(value, str) or not _UUID.match(value.strip()):
            raise ValueError(f"must be an AgentBeats UUID, got {value!r}")
        return value.strip().lower()


class AssessmentConfig(BaseModel):
    """A validated config; :func:`parse_config` builds it from a request and explains refusals.

    Every field is defined here once: its type and bounds, its coercion from Amber's strings
    (the ``mode="before"`` validators), and its documentation (``description`` and ``doc_*``,
    rendered by :func:`config_table` into the README).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_set: str = Field(
        default=DEFAULT_TASK_SET,
        **_doc(
            "string",
            "name of a packaged task set (not a path): `skillsbench-v1.1`, `smoke`, `examples`, …",
        ),
    )
    tasks: Literal["all"] | None = Field(
        default="all",
        **_doc('`"all"`', "exclusive with `task_ids`", '`"all"` when `task_ids` is absent'),
    )
    task_ids: list[str] | None = Field(
        default=None,
        **_doc(
            "list of strings (or a JSON string of one)",
            "non-empty, no duplicates, plain folder names; each in the task set, or excluded "
            "and allowed by `allow_excluded_tasks`",
        ),
    )
    condition: Literal["with_skills"] = Field(
        default=WITH_SKILLS,
        **_doc("string", "must be `with_skills`, the only publicly scored condition"),
    )
    allow_excluded_tasks: bool = Field(
        default=False,
        **_doc(
            "boolean",
            "lets `task_ids` name excluded tasks (loaded from their folder, so the caller must "
            "give the tasks folder)",
        ),
    )
    shard_index: int = Field(
        default=0,
        ge=0,
        **_doc(
            "integer",
            "`0 <= shard_index < num_shards`; shard *k* of *n* "
            "runs the selected tasks at positions `i % n == k`",
        ),
    )
    num_shards: int = Field(
        default=1,
        ge=1,
        validate_default=True,  # its check of shard_index runs when only shard_index is given
        **_doc("integer", "`>= 1`; the shard must select at least one task"),
    )
    num_instances: int = Field(
        default=1,
        ge=1,
        le=MAX_NUM_INSTANCES,
        **_doc("integer", f"`1 <= num_instances <= {MAX_NUM_INSTANCES}`: trials per selected task"),
    )
    participant_ids: ParticipantIds | None = Field(
        default=None,
        **_doc(
            "object `{agent: UUID}`",
            "`agent` (the only role) is the registered AgentBeats id used in the envelope: "
            "any UUID version (UUIDv7 included), case-insensitive, stored lower-case",
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _defaults_for_nulls(cls, data: Any) -> Any:
        """Unset optional values arrive as null: they take the default. task_ids unsets tasks."""
        if not isinstance(data, Mapping):
            return data
        given = {k: v for k, v in data.items() if not (v is None and k in cls.model_fields)}
        if "task_ids" in given and "tasks" not in given:
            given["tasks"] = None
        return given

    @field_validator("task_set", mode="before")
    @classmethod
    def _task_set(cls, value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError(f"must be a string, got {_kind(value)}")
        if "/" in value or "\\" in value or value.endswith(".json"):
            raise ValueError(f"must be a task set name (e.g. {DEFAULT_TASK_SET}), not a path")
        if not _TASK_SET_NAME.match(value):
            raise ValueError(f"must match {TASK_SET_NAME_PATTERN}, got {value!r}")
        return value

    @field_validator("tasks", mode="before")
    @classmethod
    def _tasks(cls, value: Any) -> str | None:
        if value is None:  # set by _defaults_for_nulls when task_ids is given
            return None
        if value != "all":
            raise ValueError(f'must be "all" (or use task_ids), got {value!r}')
        return "all"

    @field_validator("task_ids", mode="before")
    @classmethod
    def _task_ids(cls, value: Any) -> list[str]:
        value = _json_text(value, "[", "list")
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

    @field_validator("task_ids", mode="after")
    @classmethod
    def _not_with_tasks(cls, value: list[str] | None, info: ValidationInfo) -> list[str] | None:
        if info.data.get("tasks") == "all":
            raise _elsewhere("tasks", 'give either tasks: "all" or task_ids, not both')
        return value

    @field_validator("condition", mode="before")
    @classmethod
    def _condition(cls, value: Any) -> str:
        if value != WITH_SKILLS:
            raise ValueError(f'must be "with_skills" for public scoring, got {value!r}')
        return WITH_SKILLS

    @field_validator("allow_excluded_tasks", mode="before")
    @classmethod
    def _boolean(cls, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise ValueError(f"must be true or false, got {value!r}")

    _whole_numbers = field_validator("shard_index", "num_shards", "num_instances", mode="before")(
        _whole
    )

    @field_validator("num_shards", mode="after")
    @classmethod
    def _shard_in_range(cls, value: int, info: ValidationInfo) -> int:
        index = info.data.get("shard_index")  # absent when shard_index itself is refused
        if index is not None and index >= value:
            raise _elsewhere("shard_index", f"must be below num_shards ({value}), got {index}")
        return value

    @field_validator("participant_ids", mode="before")
    @classmethod
    def _participants(cls, value: Any) -> Any:
        value = _json_text(value, "{", "object")
        if not isinstance(value, Mapping):
            raise ValueError(f"must be an object like {{agent: <uuid>}}, got {_kind(value)}")
        return value

    def to_wire(self) -> dict[str, Any]:
        """The config as JSON, with only the keys that were set or matter (no nulls)."""
        return self.model_dump(mode="json", exclude_none=True)


def _shown_default(field: FieldInfo) -> str:
    extra = field.json_schema_extra
    if isinstance(extra, dict) and "doc_default" in extra:
        return str(extra["doc_default"])
    return "absent" if field.default is None else f"`{json.dumps(field.default)}`"


def _doc_type(field: FieldInfo) -> str:
    extra = field.json_schema_extra
    return str(extra["doc_type"]) if isinstance(extra, dict) else ""


# key -> (type, default, rule), read from the model; `config check --help` lists it.
CONFIG_KEYS: Final[dict[str, tuple[str, str, str]]] = {
    key: (_doc_type(field), _shown_default(field), field.description or "")
    for key, field in AssessmentConfig.model_fields.items()
}


def config_table() -> str:
    """The Markdown table of the config's keys, as the README shows it."""
    lines = ["| key | type | default | rule |", "|---|---|---|---|"]
    lines += [
        f"| `{key}` | {kind} | {default} | {rule} |"
        for key, (kind, default, rule) in CONFIG_KEYS.items()
    ]
    return "\n".join(lines) + "\n"


def parse_config(raw: Any) -> AssessmentConfig:
    """Validate and coerce a config (a mapping, or its JSON text); raise :class:`ConfigError`."""
    if isinstance(raw, str | bytes):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError("config", f"not valid JSON: {exc}") from None
    if not isinstance(raw, Mapping):
        raise ConfigError("config", f"must be a JSON object, got {_kind(raw)}")
    try:
        return AssessmentConfig.model_validate(raw)
    except ValidationError as exc:
        errors = [_explain(error) for error in exc.errors()]
    # One order for every run: the keys as given, then the checks across keys.
    order = {str(key): i for i, key in enumerate(raw)}
    fields = list(AssessmentConfig.model_fields)
    errors.sort(
        key=lambda e: (1, fields.index(e[0])) if e[2] else (0, order.get(e[0].split(".")[0], 0))
    )
    (field, rule, _), *more = errors
    raise ConfigError(field, rule, *[(f, r) for f, r, _ in more])


def _explain(error: ErrorDetails) -> tuple[str, str, bool]:
    """(dotted field, rule, whether a check across fields found it) for one pydantic error."""
    ctx = error.get("ctx") or {}
    if error["type"] == "config_other_field":
        return str(ctx["field"]), str(ctx["rule"]), True
    field = ".".join(str(part) for part in error["loc"])
    if error["type"] == "value_error":
        return field, str(ctx["error"]), False
    if error["type"] in ("extra_forbidden", "invalid_key"):
        if len(error["loc"]) == 1:
            return field, f"unknown key (known: {', '.join(AssessmentConfig.model_fields)})", False
        return field, "unknown role (the only participant role is agent)", False
    if error["type"] in ("greater_than_equal", "less_than_equal"):
        low, high = _bounds(AssessmentConfig.model_fields[field])
        bound = f">= {low}" if high is None else f"between {low} and {high}"
        return field, f"must be {bound}, got {error['input']}", False
    return field, error["msg"], False


def _bounds(field: FieldInfo) -> tuple[object, object | None]:
    low = next(m.ge for m in field.metadata if isinstance(m, annotated_types.Ge))
    high = next((m.le for m in field.metadata if isinstance(m, annotated_types.Le)), None)
    return low, high


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
