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
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RequestError(field, f"must be an absolute http(s) URL, got {value!r}")
    return value.strip()


def parse_request(text: str) -> AssessmentRequest:
    """Parse and check the shape of the request text (the config itself is checked later)."""
    if not text.strip():
        raise RequestError("request", "the message has no text part holding the request JSON")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RequestError("request", f"is not valid JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(data, dict):
        raise RequestError("request", "must be a JSON object with 'participants' and 'config'")
    participants = data.get("participants")
    if not isinstance(participants, dict):
        raise RequestError("participants", "must be an object mapping role to A2A URL")
    for role in REQUIRED_ROLES:
        if role not in participants:
            raise RequestError(f"participants.{role}", f"the '{role}' role is required")
    checked = {
        str(role): _check_url(f"participants.{role}", url) for role, url in participants.items()
    }
    config = data.get("config")
    if not isinstance(config, dict):
        raise RequestError("config", "must be a JSON object")
    return AssessmentRequest(participants=checked, config=config)
