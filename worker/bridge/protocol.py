"""The ``skillsbench-shell/v1`` participant protocol: the data both sides of an A2A trial exchange.

A purple agent has no shell in the task sandbox; the bridge lends it one. The worker owns this
published contract; it is a leaf (stdlib and pydantic only, no a2a-sdk import) so the bridge in the
worker and the purple agents share one definition.

Conversation (one A2A ``context_id`` per trial):

1. bridge → purple: a user message with a TextPart (the task instruction) and a DataPart
   :class:`ShellContext`.
2. purple → bridge: a reply carrying at most one DataPart :class:`Action` (``exec``, ``read_file``,
   ``write_file`` or ``finish``). A reply without an action ends the trial like ``finish``.
3. bridge → purple (same context): a user message with a DataPart :class:`ActionResultMessage`.
   Repeat from 2.

Parsing is lenient where the transport is lossy: A2A DataPart numbers arrive as floats (``3.0``),
which pydantic's lax mode turns back into ints, and unknown keys are ignored so either side can
add fields within v1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

PROTOCOL: Final = "skillsbench-shell/v1"

ActionName = Literal["exec", "read_file", "write_file", "finish"]
ALL_ACTIONS: tuple[ActionName, ...] = ("exec", "read_file", "write_file", "finish")
Encoding = Literal["utf-8", "base64"]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    def to_data(self) -> dict[str, Any]:
        """The JSON object to put in an A2A DataPart."""
        return self.model_dump(mode="json")


class Limits(_Wire):
    """What the bridge allows in this trial; ``None`` means no limit announced."""

    max_turns: int | None = None
    deadline_sec: float | None = None
    max_output_bytes: int | None = None


class ShellContext(_Wire):
    """Turn-1 DataPart: where the agent works and what it may do."""

    protocol: Literal["skillsbench-shell/v1"] = PROTOCOL
    task_id: str
    workspace: str = "/root"
    skills_dir: str | None = None
    actions: list[ActionName] = Field(default_factory=lambda: list(ALL_ACTIONS))
    limits: Limits = Field(default_factory=Limits)


class ExecAction(_Wire):
    """Run a shell command in the workspace (``bash -lc``-style, cwd = workspace)."""

    action: Literal["exec"] = "exec"
    command: str
    timeout_sec: float = 60


class ReadFileAction(_Wire):
    action: Literal["read_file"] = "read_file"
    path: str


class WriteFileAction(_Wire):
    action: Literal["write_file"] = "write_file"
    path: str
    content: str
    encoding: Encoding = "utf-8"


class FileContent(_Wire):
    """A file returned with ``finish``; ``path`` is relative to the workspace (or inside it)."""

    path: str
    content: str
    encoding: Encoding = "utf-8"


class FinishAction(_Wire):
    """End the trial; ``files`` are written into the workspace by the bridge (with containment)."""

    action: Literal["finish"] = "finish"
    message: str = ""
    files: list[FileContent] = Field(default_factory=list)


Action = Annotated[
    ExecAction | ReadFileAction | WriteFileAction | FinishAction,
    Field(discriminator="action"),
]
_ACTION = TypeAdapter[Action](Action)


class ActionResult(_Wire):
    """The bridge's answer to one action.

    ``exec`` fills ``exit_code``/``stdout``/``stderr``/``truncated``; ``read_file`` fills
    ``content``/``encoding``; a refused or failed action fills ``error`` (and nothing ran).
    """

    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    truncated: bool = False
    content: str | None = None
    encoding: Encoding | None = None
    error: str | None = None


class ActionResultMessage(_Wire):
    """DataPart of every bridge message after turn 1."""

    action_result: ActionResult


class ParticipantUsage(_Wire):
    """Optional ``usage`` object on any purple reply: the model calls made since its last reply.

    Reported by the participant, so the bridge records it with ``usage_source`` saying so and never
    mixes it with usage the worker measured. Every field is optional: unknown stays ``None``, never 0.
    """

    model: str | None = None
    calls: int | None = Field(default=None, ge=0)
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)


class ActionError(ValueError):
    """A DataPart that names an action but does not validate."""


def parse_action(data: Mapping[str, Any]) -> Action:
    """Validate one DataPart object as an action; raises :class:`ActionError` naming the problem."""
    try:
        return _ACTION.validate_python(dict(data))
    except ValidationError as exc:
        raise ActionError(f"malformed {PROTOCOL} action: {_first_error(exc)}") from exc


def find_action(data_parts: Iterable[Any]) -> Action | None:
    """The action among a reply's DataPart objects (the first one with an ``action`` key), if any.

    Returns ``None`` when there is none (the trial ends); raises :class:`ActionError` (a
    ``ValueError``) when one is present but malformed.
    """
    for data in data_parts:
        if isinstance(data, Mapping) and "action" in data:
            return parse_action(data)
    return None


def find_usage(data_parts: Iterable[Any]) -> ParticipantUsage | None:
    """The ``usage`` object of a reply: the first DataPart object with a ``usage`` key (the action's
    own DataPart or one of its own); raises ``ValueError`` when it is present but malformed."""
    for data in data_parts:
        if isinstance(data, Mapping) and "usage" in data:
            raw = data["usage"]
            if raw is None:
                return None
            if not isinstance(raw, Mapping):
                raise ValueError(f"malformed {PROTOCOL} usage: must be an object")
            try:
                return ParticipantUsage.model_validate(dict(raw))
            except ValidationError as exc:
                raise ValueError(f"malformed {PROTOCOL} usage: {_first_error(exc)}") from exc
    return None


def find_context(data_parts: Iterable[Any]) -> ShellContext | None:
    """The :class:`ShellContext` among a message's DataPart objects, if any.

    Result messages may also carry ``"protocol"``; an object with ``action_result`` (or
    ``action``) is never a context.
    """
    for data in data_parts:
        if (
            isinstance(data, Mapping)
            and data.get("protocol") == PROTOCOL
            and "action_result" not in data
            and "action" not in data
        ):
            try:
                return ShellContext.model_validate(dict(data))
            except ValidationError as exc:
                raise ValueError(f"malformed {PROTOCOL} context: {_first_error(exc)}") from exc
    return None


def find_action_result(data_parts: Iterable[Any]) -> ActionResult | None:
    """The :class:`ActionResult` among a message's DataPart objects, if any."""
    for data in data_parts:
        if isinstance(data, Mapping) and "action_result" in data:
            try:
                return ActionResultMessage.model_validate(dict(data)).action_result
            except ValidationError as exc:
                raise ValueError(
                    f"malformed {PROTOCOL} action_result: {_first_error(exc)}"
                ) from exc
    return None


def result_data(turn: int, result: dict[str, Any]) -> dict[str, Any]:
    """The DataPart answering one action: the shared :class:`ActionResult` fields, plus the
    bridge's extras (``action``, ``path``, ``timed_out``…) which v1 readers ignore."""
    shared = ActionResult.model_validate(result).to_data()
    # No "protocol" key here: readers tell the turn-1 context apart by it.
    return {"turn": turn, "action_result": {**result, **shared}}


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "(root)"
    return f"{where}: {err['msg']}"
