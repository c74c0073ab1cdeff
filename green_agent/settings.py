"""The green agent's environment: one place that names every variable it reads.

:class:`GreenSettings` declares each setting once: its variable (``validation_alias``), type,
default and bounds; values arrive as Amber renders them (strings such as ``"14400"`` or ``"1.0"``)
and pydantic parses them. :func:`load_settings` reads an environment into it and turns a refusal
into one line naming the variable.

Not pydantic-settings, though it does this: importing it costs 0.25-0.4 s (its package imports
every source provider), and this module is on the path of the green agent's first answer (the card,
served before the rest is imported). Reading the variables named by the model's aliases is all
that its environment source would do here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from serving.urls import check_url

WORKER_URL = "SKILLSBENCH_WORKER_URL"
WORKER_SLOT_URL = "SKILLSBENCH_WORKER_SLOT_URL"
WORKER_TOKEN = "SKILLSBENCH_WORKER_TOKEN"
WORKER_TIMEOUT_SEC = "SKILLSBENCH_WORKER_TIMEOUT_SEC"
WORKER_POLL_INTERVAL_SEC = "SKILLSBENCH_WORKER_POLL_INTERVAL_SEC"
PROXY_URL = "SKILLSBENCH_AGENTBEATS_PROXY_URL"
WORKER_PARTICIPANT_PROXY_URL = "SKILLSBENCH_WORKER_PARTICIPANT_PROXY_URL"
WORKER_SANDBOX_PARTICIPANT_PROXY_URL = "SKILLSBENCH_WORKER_SANDBOX_PARTICIPANT_PROXY_URL"
HEARTBEAT_SEC = "SKILLSBENCH_GREEN_HEARTBEAT_SEC"
WORKER_RETRY_SEC = "SKILLSBENCH_WORKER_RETRY_SEC"

HEARTBEAT_MAX_SEC = 60.0  # below the gateway's read timeout, with room to spare


def _env(name: str) -> Any:
    """The field reads variable ``name``; code may still set it by field name."""
    return Field(validation_alias=name)


class GreenSettings(BaseModel):
    """What the green agent needs from its environment, parsed once at start.

    The field defaults are the only place the defaults are written; everything else reads them.
    Built directly (``GreenSettings(worker_url=...)``) it reads no environment: that is
    :func:`load_settings`' job.
    """

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    worker_url: Annotated[str | None, _env(WORKER_URL)] = None
    worker_slot_url: Annotated[str | None, _env(WORKER_SLOT_URL)] = None
    worker_token: Annotated[str | None, _env(WORKER_TOKEN), Field(repr=False)] = None
    worker_timeout_sec: Annotated[float, _env(WORKER_TIMEOUT_SEC), Field(gt=0)] = 14400.0
    worker_poll_interval_sec: Annotated[float, _env(WORKER_POLL_INTERVAL_SEC), Field(gt=0)] = 1.0
    worker_retry_sec: Annotated[
        float,
        _env(WORKER_RETRY_SEC),
        Field(gt=0, description="how long transient worker connection errors are retried"),
    ] = 300.0
    proxy_url: Annotated[str | None, _env(PROXY_URL)] = None
    worker_participant_proxy_url: Annotated[str | None, _env(WORKER_PARTICIPANT_PROXY_URL)] = None
    sandbox_participant_proxy_url: Annotated[
        str | None, _env(WORKER_SANDBOX_PARTICIPANT_PROXY_URL)
    ] = None
    heartbeat_sec: Annotated[float, _env(HEARTBEAT_SEC), Field(gt=0, le=HEARTBEAT_MAX_SEC)] = 30.0

    @model_validator(mode="before")
    @classmethod
    def _blank_is_unset(cls, data: Any) -> Any:
        """Values are trimmed; a blank one is unset (Amber renders an absent value as "")."""
        if not isinstance(data, Mapping):
            return data
        trimmed = {k: v.strip() if isinstance(v, str) else v for k, v in data.items()}
        return {k: v for k, v in trimmed.items() if v != ""}

    @field_validator("worker_url", "worker_slot_url")
    @classmethod
    def _worker_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        """A worker URL that no request could reach is refused at start, not at the first
        assessment (minutes of retries later). ``0.0.0.0`` is this machine: allowed."""
        if value is not None and info.field_name is not None:
            variable = str(cls.model_fields[info.field_name].validation_alias)
            check_url(value, variable, wildcard_ok=True)
        return value

    @property
    def effective_worker_url(self) -> str | None:
        """``SKILLSBENCH_WORKER_URL``, else the Amber worker-slot fallback, else None (mock)."""
        return self.worker_url or self.worker_slot_url or None


def variables() -> dict[str, str]:
    """Variable name -> field name, from the model."""
    return {str(f.validation_alias): name for name, f in GreenSettings.model_fields.items()}


def load_settings(env: Mapping[str, str] | None = None) -> GreenSettings:
    """Read the environment; a bad value raises ValueError naming the variable."""
    env = os.environ if env is None else env
    values = {name: env[name] for name in variables() if name in env}  # case-sensitive
    try:
        return GreenSettings.model_validate(values)
    except ValidationError as exc:
        raise ValueError(_explain(exc.errors()[0], env)) from None


def _explain(error: Any, env: Mapping[str, str]) -> str:
    """One line naming the variable, e.g. ``SKILLSBENCH_WORKER_TIMEOUT_SEC must be ...``."""
    name = str(error["loc"][0])
    raw = env.get(name, "").strip()
    if error["type"] == "greater_than":
        return f"{name} must be a positive number of seconds, got {raw!r}"
    if error["type"] == "less_than_equal":
        return f"{name} must be at most {error['ctx']['le']:g} seconds, got {raw!r}"
    if error["type"].startswith("float"):
        return f"{name} must be a number of seconds, got {raw!r}"
    if error["type"] == "value_error":  # our own check: its message names the variable
        return str(error["ctx"]["error"])
    return f"{name}: {error['msg']}, got {raw!r}"
