"""``skillsbench-shell/v1``: the messages between the bridge and a purple agent (DESIGN.md §3).

Numbers may arrive as floats (a2a-sdk 1.x carries DataPart values as protobuf doubles), so
integral floats are turned back into ints before validation.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

PROTOCOL = "skillsbench-shell/v1"
ACTIONS = ("exec", "read_file", "write_file", "finish")


class Limits(BaseModel):
    max_turns: int
    deadline_sec: float
    max_output_bytes: int


class ShellContext(BaseModel):
    """The DataPart of turn 1."""

    protocol: Literal["skillsbench-shell/v1"] = "skillsbench-shell/v1"
    task_id: str
    workspace: str
    skills_dir: str | None
    actions: list[str] = Field(default_factory=lambda: list(ACTIONS))
    limits: Limits


class _Action(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ExecAction(_Action):
    action: Literal["exec"]
    command: str = Field(min_length=1)
    timeout_sec: float = Field(default=60.0, gt=0)


class ReadFileAction(_Action):
    action: Literal["read_file"]
    path: str = Field(min_length=1)


class FileContent(_Action):
    path: str = Field(min_length=1)
    content: str
    encoding: Literal["utf-8", "base64"] = "utf-8"


class WriteFileAction(FileContent):
    action: Literal["write_file"]


class FinishAction(_Action):
    action: Literal["finish"]
    message: str | None = None
    files: list[FileContent] = Field(default_factory=list)


Action = Annotated[
    ExecAction | ReadFileAction | WriteFileAction | FinishAction, Field(discriminator="action")
]
_ACTION = TypeAdapter(Action)


class ActionError(ValueError):
    """A DataPart that names an action but does not validate."""


def integral(value: Any) -> Any:
    """Undo protobuf's int→float: 60.0 → 60, recursively."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [integral(v) for v in value]
    return value


def find_action(
    data_parts: list[Any],
) -> ExecAction | ReadFileAction | WriteFileAction | FinishAction | None:
    """The first DataPart carrying an ``action``; None when the reply holds no action."""
    for data in data_parts:
        if isinstance(data, dict) and "action" in data:
            try:
                return _ACTION.validate_python(integral(data))
            except ValidationError as exc:
                raise ActionError(_describe(exc)) from None
    return None


def _describe(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'action'}: {err['msg']}" for err in exc.errors()
    )
