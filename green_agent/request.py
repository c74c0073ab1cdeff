"""The assessment request: one TextPart holding ``{"participants":{...},"config":{...}}``.

Every problem is a :class:`RequestError` naming the field, which the executor turns into an A2A
InvalidParams error.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

REQUIRED_ROLES: tuple[str, ...] = ("agent",)
# SkillsBench scores one participant; any other role would be forwarded to the worker unread.
KNOWN_ROLES: tuple[str, ...] = REQUIRED_ROLES
TOP_LEVEL_KEYS: tuple[str, ...] = ("participants", "config")
MAX_URL_LENGTH = 2048  # a participant URL longer than this is no URL a gateway sends
MAX_JSON_DEPTH = 32  # the request is three levels deep; past this nothing is a valid request


def json_depth_problem(text: str, limit: int = MAX_JSON_DEPTH) -> str | None:
    """Why ``text`` nests too deeply to parse safely, or None. One pass, no recursion."""
    depth = 0
    in_string = False
    escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return f"nests deeper than {limit} levels of arrays and objects"
        elif char in "]}":
            depth -= 1
    return None


class RequestError(ValueError):
    """An invalid assessment request; ``field`` is the dotted path of the offending value."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


class AssessmentRequest(BaseModel):
    model_config = ConfigDict(frozen=True)

    participants: dict[str, str]
    config: dict[str, Any]


def _check_url(field: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise RequestError(field, "must be an http(s) URL string")
    if len(value) > MAX_URL_LENGTH:
        raise RequestError(field, f"is {len(value)} characters long (at most {MAX_URL_LENGTH})")
    if any(ord(char) < 0x20 or char.isspace() for char in value.strip()):
        raise RequestError(field, "must not contain spaces or control characters")
    try:
        parts = urlsplit(value.strip())
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as exc:
        raise RequestError(field, f"is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RequestError(field, f"must be an absolute http(s) URL, got {value!r}")
    return value.strip()


def parse_request(text: str) -> AssessmentRequest:
    """Parse and check the shape of the request text (the config itself is checked later)."""
    if not text.strip():
        raise RequestError("request", "the message has no text part holding the request JSON")
    problem = json_depth_problem(text)
    if problem is not None:
        raise RequestError("request", problem)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RequestError("request", f"is not valid JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(data, dict):
        raise RequestError("request", "must be a JSON object with 'participants' and 'config'")
    for key in data:
        if key not in TOP_LEVEL_KEYS:
            raise RequestError(
                str(key)[:64], f"is not a request key (the keys are {', '.join(TOP_LEVEL_KEYS)})"
            )
    participants = data.get("participants")
    if not isinstance(participants, dict):
        raise RequestError("participants", "must be an object mapping role to A2A URL")
    for role in REQUIRED_ROLES:
        if role not in participants:
            raise RequestError(f"participants.{role}", f"the '{role}' role is required")
    for role in participants:
        if role not in KNOWN_ROLES:
            raise RequestError(
                f"participants.{str(role)[:64]}",
                f"is not a SkillsBench role (the roles are {', '.join(KNOWN_ROLES)})",
            )
    checked = {
        str(role): _check_url(f"participants.{role}", url) for role, url in participants.items()
    }
    config = data.get("config")
    if not isinstance(config, dict):
        raise RequestError("config", "must be a JSON object")
    return AssessmentRequest(participants=checked, config=config)
