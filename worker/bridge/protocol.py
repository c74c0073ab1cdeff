"""The bridge's view of ``skillsbench-shell/v1``: the shared models live in
:mod:`purple_agent.protocol` (one owner); this adds what only the bridge needs."""

from __future__ import annotations

from typing import Any

from purple_agent.protocol import (
    PROTOCOL,
    Action,
    ActionResult,
    ExecAction,
    FileContent,
    FinishAction,
    Limits,
    ReadFileAction,
    ShellContext,
    WriteFileAction,
)
from purple_agent.protocol import find_action as _find_action

__all__ = [
    "PROTOCOL",
    "Action",
    "ActionError",
    "ExecAction",
    "FileContent",
    "FinishAction",
    "Limits",
    "ReadFileAction",
    "ShellContext",
    "WriteFileAction",
    "find_action",
    "result_data",
]


class ActionError(ValueError):
    """A DataPart that names an action but does not validate."""


def find_action(data_parts: list[Any]) -> Action | None:
    try:
        return _find_action(data_parts)
    except ValueError as exc:
        raise ActionError(str(exc)) from None


def result_data(turn: int, result: dict[str, Any]) -> dict[str, Any]:
    """The DataPart answering one action: the shared :class:`ActionResult` fields, plus the
    bridge's extras (``action``, ``path``, ``timed_out``…) which v1 readers ignore."""
    shared = ActionResult.model_validate(result).to_data()
    # No "protocol" key here: readers tell the turn-1 context apart by it.
    return {"turn": turn, "action_result": {**result, **shared}}
