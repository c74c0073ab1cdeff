"""Admission: a run request is checked at the door with the rules its rows will meet later.

A run that is accepted can always finish: every task is probed through
:class:`leaderboard.rows.PublicRow` (the very row a cancelled trial of it would publish), so a task
set, task id, category, difficulty or tag that no public row may carry is refused with the
request field that holds it (``tasks[0].category``), not found when the first row is built.
``config.num_instances`` follows the green agent's rule (:data:`task_sets.config.MAX_NUM_INSTANCES`).

:func:`check_script_agent` is the HTTP service's rule for ``script:<file>`` agents (the ``run``
CLI, in-process and trusted, does not apply it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from leaderboard.rows import is_safe_label
from task_sets.config import MAX_NUM_INSTANCES
from worker.api import SCRIPT_DIR_VAR, RunRequest
from worker.core.failures import FailureKind
from worker.trial_record.public_row import MAX_TASK_ID_LENGTH, build_row, new_trial_id

# Deepest JSON nesting a request may have (the deepest legitimate one, config.participant_ids
# .agent or tasks[i].tags[j], is 3 below the body).
MAX_DEPTH = 32
# Longest participant URL (they are passed to sandboxes and agents on command lines).
MAX_URL_LENGTH = 2048
SCRIPT_NOT_ALLOWED = (
    "script agents over the HTTP API run only from a file in the worker's script folder "
    f"({SCRIPT_DIR_VAR})"
)


class Rejected(ValueError):
    """A request refused at the door: ``field`` is where (``tasks[0].category``), and why."""

    def __init__(self, field: str, detail: str) -> None:
        self.field = field
        self.detail = detail
        super().__init__(f"{field}: {detail}")


def field_path(loc: tuple[int | str, ...] | list[int | str]) -> str:
    """``("tasks", 0, "category")`` -> ``tasks[0].category``; the empty path is ``(body)``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(body)"


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True when ``value`` nests lists/objects deeper than ``limit`` (checked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def parse_request(payload: Any) -> RunRequest:
    """The request model of a decoded JSON body, or :class:`Rejected` naming the first problem."""
    if not isinstance(payload, dict):
        raise Rejected("(body)", "body must be a JSON object")
    if too_deep(payload):
        raise Rejected("(body)", f"JSON nested deeper than {MAX_DEPTH} levels")
    try:
        request = RunRequest.model_validate(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = field_path(first["loc"])
        raise Rejected(where, f"{first['msg']}") from None
    check_request(request)
    return request


def check_request(request: RunRequest) -> None:
    """The rules beyond the wire model: instances, participant URLs, and one probe row per task."""
    check_num_instances(request.config.get("num_instances", 1))
    for role, endpoint in request.participants.items():
        for name, url in (("url", endpoint.url), ("sandbox_url", endpoint.sandbox_url)):
            if url is not None:
                _check_url(f"participants.{role}.{name}", url)
    for index, task in enumerate(request.tasks):
        where = f"tasks[{index}]"
        if len(task.task_id) > MAX_TASK_ID_LENGTH:
            raise Rejected(f"{where}.task_id", f"at most {MAX_TASK_ID_LENGTH} characters")
        try:
            build_row(
                request,
                task,
                trial_id=new_trial_id(task.task_id),
                agent_transport="a2a",
                reward=None,
                failure=FailureKind.WORKER_CANCELLED,
                time_used=None,
            )
        except ValidationError as exc:
            first = exc.errors()[0]
            name = str(first["loc"][0]) if first["loc"] else ""
            raise Rejected(_request_field(where, name, task.tags), _reason(first)) from None


def check_num_instances(value: Any) -> int:
    """The green agent's rule: a whole number in ``1..MAX_NUM_INSTANCES``."""
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_NUM_INSTANCES:
        raise Rejected(
            "config.num_instances",
            f"must be a whole number between 1 and {MAX_NUM_INSTANCES}, got {str(value)[:40]!r}",
        )
    return value


def check_script_agent(spec: str | None, allowed: Path | None) -> None:
    """``script:<file>`` only from ``allowed`` (none when it is None). One answer for every refusal,
    whether the file exists or not: the API must not tell which host files exist."""
    if spec is None or spec.strip().split(":", 1)[0] != "script":
        return
    path_text = spec.strip().split(":", 1)[1] if ":" in spec else ""
    if allowed is None or not path_text:
        raise Rejected("agent", SCRIPT_NOT_ALLOWED)
    try:
        root = allowed.resolve()
        path = Path(path_text).resolve()
        inside = path.is_relative_to(root) and path != root and path.is_file()
    except (OSError, ValueError, RuntimeError):
        inside = False
    if not inside:
        raise Rejected("agent", SCRIPT_NOT_ALLOWED)


def _check_url(where: str, url: str) -> None:
    if len(url) > MAX_URL_LENGTH:
        raise Rejected(where, f"at most {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(url)
        host = parts.hostname
        _ = parts.port  # raises ValueError on a malformed port
    except ValueError:
        raise Rejected(where, "must be an http(s) URL with a host") from None
    if parts.scheme not in ("http", "https") or not host or any(c.isspace() for c in url):
        raise Rejected(where, "must be an http(s) URL with a host")


# Probe-row field -> the request field it comes from (per task unless global).
_TASK_FIELDS = {"task_id", "task_digest", "category", "difficulty", "tags"}
_GLOBAL_FIELDS = {"task_set": "task_set", "task_set_digest": "task_set_digest"}


def _request_field(where: str, row_field: str, tags: list[str]) -> str:
    if row_field == "trial_id":  # made from the task id
        return f"{where}.task_id"
    if row_field == "tags":
        bad = next((i for i, tag in enumerate(tags) if not is_safe_label(tag)), None)
        return f"{where}.tags" if bad is None else f"{where}.tags[{bad}]"
    if row_field in _TASK_FIELDS:
        return f"{where}.{row_field}"
    return _GLOBAL_FIELDS.get(row_field, "(body)")


def _reason(error: Any) -> str:
    message = str(error.get("msg", "invalid"))
    return message.removeprefix("Value error, ")
