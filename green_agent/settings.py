"""The green agent's environment: one place that names every variable it reads.

Values arrive as Amber renders them (strings such as ``"14400"`` or ``"1.0"``), so numbers are
parsed here with a clear error naming the variable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

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


class GreenSettings(BaseModel):
    """What the green agent needs from its environment, parsed once at start.

    The field defaults are the only place the defaults are written; everything else reads them.
    """

    model_config = ConfigDict(frozen=True)

    worker_url: str | None = None
    worker_slot_url: str | None = None
    worker_token: str | None = Field(default=None, repr=False)
    worker_timeout_sec: float = Field(default=14400.0, gt=0)
    worker_poll_interval_sec: float = Field(default=1.0, gt=0)
    worker_retry_sec: float = Field(
        default=300.0, gt=0, description="how long transient worker connection errors are retried"
    )
    proxy_url: str | None = None
    worker_participant_proxy_url: str | None = None
    sandbox_participant_proxy_url: str | None = None
    heartbeat_sec: float = Field(default=30.0, gt=0, le=HEARTBEAT_MAX_SEC)

    @property
    def effective_worker_url(self) -> str | None:
        """``SKILLSBENCH_WORKER_URL``, else the Amber worker-slot fallback, else None (mock)."""
        return self.worker_url or self.worker_slot_url or None


def _text(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def _seconds(env: Mapping[str, str], name: str, *, maximum: float | None = None) -> float | None:
    raw = _text(env, name)
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, got {raw!r}") from None
    if not value > 0 or value != value:
        raise ValueError(f"{name} must be a positive number of seconds, got {raw!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum:g} seconds, got {raw!r}")
    return value


def load_settings(env: Mapping[str, str] | None = None) -> GreenSettings:
    """Read the environment; a bad value raises ValueError naming the variable."""
    env = os.environ if env is None else env
    seconds = {
        "worker_timeout_sec": _seconds(env, WORKER_TIMEOUT_SEC),
        "worker_poll_interval_sec": _seconds(env, WORKER_POLL_INTERVAL_SEC),
        "worker_retry_sec": _seconds(env, WORKER_RETRY_SEC),
        "heartbeat_sec": _seconds(env, HEARTBEAT_SEC, maximum=HEARTBEAT_MAX_SEC),
    }
    return GreenSettings(
        worker_url=_text(env, WORKER_URL),
        worker_slot_url=_text(env, WORKER_SLOT_URL),
        worker_token=_text(env, WORKER_TOKEN),
        proxy_url=_text(env, PROXY_URL),
        worker_participant_proxy_url=_text(env, WORKER_PARTICIPANT_PROXY_URL),
        sandbox_participant_proxy_url=_text(env, WORKER_SANDBOX_PARTICIPANT_PROXY_URL),
        # unset variables keep the field defaults
        **{name: value for name, value in seconds.items() if value is not None},
    )
