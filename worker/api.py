"""Wire models of the worker's HTTP API, shared with the green agent's HTTP adapter.

Kept free of heavy imports on purpose: the green agent imports this module (and only this one)
from the worker package. Routes: ``POST /runs``, ``GET /runs/{id}``, ``GET /runs/{id}/events``
(server-sent events), ``POST /runs/{id}/cancel``, ``GET /healthz``.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

SCHEMA_VERSION: Final = "skillsbench.agentbeats.worker_api.v1"

# The worker service's setting (``--script-dir``): the folder ``script:<file>`` agents may come
# from over the API; unset, script agents are refused there.
SCRIPT_DIR_VAR: Final = "SKILLSBENCH_WORKER_SCRIPT_DIR"

RunState = Literal["queued", "running", "completed", "failed", "cancelled"]
TERMINAL_STATES: frozenset[str] = frozenset({"completed", "failed", "cancelled"})


# Names that mean "this machine" (besides any ``*.localhost``): the worker listens without a token
# only on a loopback host, and the green agent reroutes loopback participant URLs.
LOOPBACK_NAMES: frozenset[str] = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def is_loopback_host(host: str, *, unspecified: bool = False) -> bool:
    """A loopback name or address (``[::1]`` brackets allowed). With ``unspecified``, the
    unspecified address (``0.0.0.0``, ``::``) counts too: as a destination it reaches this machine
    (as a listening address it means every interface, so it does not by default)."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):  # a bracketed IPv6 address, as in a URL
        host = host[1:-1]
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or (unspecified and address.is_unspecified)


class ParticipantEndpoint(BaseModel):
    """How the worker reaches one participant role."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, description="A2A URL as reachable from the worker's process")
    sandbox_url: str | None = Field(
        default=None, description="A2A URL as reachable from inside task sandboxes, when different"
    )


class RunTask(BaseModel):
    """One selected task with its manifest metadata (what public rows carry)."""

    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(min_length=1)
    task_digest: str | None = None
    category: str | None = None
    difficulty: str | None = None
    tags: list[str] = Field(default_factory=list)


class UsageSettings(BaseModel):
    """Model route, caps and usage tracking of every trial of a run (see docs/usage.md)."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(default=None, description="litellm model name (-m/--model)")
    max_tokens: int | None = Field(default=None, gt=0, description="Per-trial token cap")
    max_cost_usd: float | None = Field(default=None, gt=0, description="Per-trial cost cap")
    usage_tracking: Literal["auto", "required", "off"] = "auto"
    agent_env: dict[str, str] = Field(
        default_factory=dict, description="--agent-env: extra variables for the agent's process"
    )


class RunRequest(BaseModel):
    """``POST /runs`` body."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal["skillsbench.agentbeats.worker_api.v1"] = SCHEMA_VERSION
    participants: dict[str, ParticipantEndpoint] = Field(default_factory=dict)
    config: dict[str, Any] = Field(description="The validated assessment config")
    task_set: str = Field(min_length=1)
    task_set_digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    tasks: list[RunTask] = Field(min_length=1)
    agent: str | None = Field(
        default=None,
        description="Agent spec (oracle, nop, script:F, a2a:URL, a manifest name); "
        "default: the a2a bridge to participants['agent']",
    )
    usage: UsageSettings | None = Field(
        default=None, description="Model, caps and usage tracking (manifest agents)"
    )
    manifest: dict[str, Any] | None = Field(
        default=None,
        description="The task-set manifest the tasks were selected from (kept in the run's "
        "reproducibility metadata and private proof); rebuilt from the task list when absent",
    )

    @field_validator("tasks")
    @classmethod
    def _unique_tasks(cls, tasks: list[RunTask]) -> list[RunTask]:
        seen: set[str] = set()
        for task in tasks:
            if task.task_id in seen:
                raise ValueError(f"task {task.task_id!r} is listed twice")
            seen.add(task.task_id)
        return tasks

    @property
    def condition(self) -> str:
        return str(self.config.get("condition") or "with_skills")

    @property
    def num_instances(self) -> int:
        value = self.config.get("num_instances")
        return value if isinstance(value, int) and value > 0 else 1


class RunCreated(BaseModel):
    run_id: str
    status: RunState


class Progress(BaseModel):
    total: int = 0
    finished: int = 0
    running: int = 0
    passed: int = 0


# What a trial with an attempt does now (``RunStatus.phases``, the ``phase`` event). A newer worker
# may add names: readers show an unknown one as it is.
TRIAL_PHASES: Final = (
    "started",  # the attempt started; its executor reports nothing finer (e.g. ray)
    "building",  # the task's image is built or checked (or another trial's build awaited)
    "starting_sandbox",
    "agent_setup",  # the task's files and skills put in place
    "agent_running",
    "verifying",
    "regrading",  # a pass graded again on a fresh sandbox (docs/sandboxes.md)
    "tearing_down",
    "waiting_to_retry",  # an infrastructure failure: tried again after a backoff
    "waiting_for_space",  # the jobs folder is full: tried again once space returns
)


class TrialPhase(BaseModel):
    """What one trial does now, since when (UTC, ISO 8601), in which attempt (1-based)."""

    phase: str
    since: str
    attempt: int = 1


class RunStatus(BaseModel):
    """``GET /runs/{id}``: the run as stored. ``rows`` are worker rows (normalized before publishing)."""

    model_config = ConfigDict(populate_by_name=True)

    schema_version: Literal["skillsbench.agentbeats.worker_api.v1"] = SCHEMA_VERSION
    run_id: str
    status: RunState
    created_at: str
    updated_at: str
    progress: Progress = Field(default_factory=Progress)
    tasks: dict[str, str] = Field(
        default_factory=dict, description="trial key -> state (queued|running|finished)"
    )
    rows: list[dict[str, Any]] = Field(default_factory=list)
    phases: dict[str, TrialPhase] = Field(
        default_factory=dict,
        description="trial key -> what it does now, for the trials between their first attempt "
        "and their row (absent: as `tasks` says; an older worker sends none)",
    )
    worker_meta: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    # Worker-private: where the run's private proof bundle lives. Serialized under the
    # underscore names (``model_dump(by_alias=True)``); the public-row normalizer strips them.
    private_proof_refs: list[dict[str, Any]] | None = Field(
        default=None, alias="_private_proof_refs"
    )
    private_proof_manifest: str | None = Field(default=None, alias="_private_proof_manifest")


# Server-sent events on GET /runs/{id}/events: `event: <name>` with a JSON `data:` line.
EVENT_STATUS = "status"  # data: RunStatus without rows (sent first, and on every state change)
EVENT_ROW = "row"  # data: {"run_id", "row", "progress"} once per finished trial
EVENT_END = "end"  # data: final RunStatus; the stream closes after it
# data: {"run_id", "trial_key", "phase", "since", "attempt"} whenever a trial's phase changes
EVENT_PHASE = "phase"
