"""The agent extension point: what runs in a trial between "sandbox up" and "verifier".

Built-in kinds: ``oracle``, ``nop``, ``script:<file>``; ACP kinds (manifest agents, ``a2a:<url>``)
plug in through the same registry. An agent reports every action it takes as an ACP-style
``tool_call`` event through ``AgentContext.record``.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar

from task_sets.task import Task
from worker.core.failures import FailureKind
from worker.core.limits import OutputCaps
from worker.core.registry import Registry
from worker.sandbox.base import Sandbox, SandboxError, SandboxUnsupported
from worker.trial_record.trajectory import Recorder


@dataclass
class AgentContext:
    """Everything an agent may use for one trial."""

    sandbox: Sandbox
    task: Task
    prompt: str  # the instruction as given to the agent (skills location appended when relevant)
    trial_dir: Path  # host folder of this trial (agent/ and trajectory/ live here)
    timeout_sec: float  # the task's [agent].timeout_sec (or an override)
    record: Recorder  # appends one event to trajectory/acp_trajectory.jsonl
    env: Mapping[str, str] = field(
        default_factory=dict
    )  # extra agent env (secrets: process env only)
    participant_url: str | None = None  # a2a: purple agent URL as reachable from the worker
    participant_sandbox_url: str | None = None  # ... and from inside the sandbox
    skills_dir: str | None = None  # sandbox path of the skills, when placed
    # Argv put before an in-sandbox agent's launch command (the model proxy's forwarder).
    launch_prefix: list[str] = field(default_factory=list)
    caps: OutputCaps = field(default_factory=OutputCaps)  # what the agent's outputs may fill
    # The run's model (a litellm route: -m, else the manifest's default_model), None when none.
    model: str | None = None


async def agent_user_problem(ctx: AgentContext) -> str | None:
    """Why the sandbox cannot act as the task's ``[agent].user`` (``None``: it can, or no user is
    set). Checked up front by agents whose commands come later (through ACP): a backend that
    cannot switch users (the local sandbox) raises :class:`SandboxUnsupported` here, once."""
    user = ctx.task.config.agent.user
    if user is None:
        return None
    try:
        probe = await ctx.sandbox.exec(["true"], user=user, timeout_sec=60)
    except SandboxUnsupported:
        raise
    except SandboxError as exc:
        return f"cannot run as [agent].user {user!r}: {exc}"
    if probe.exit_code != 0:
        detail = probe.stderr.strip() or f"exit code {probe.exit_code}"
        return f"cannot run as [agent].user {user!r}: {detail}"
    return None


AgentStatus = Literal["completed", "timeout", "cancelled", "failed"]


@dataclass
class AgentOutcome:
    """How the agent's turn ended. ``failure`` is set only for infrastructure/participant failures."""

    status: AgentStatus = "completed"
    failure: FailureKind | None = None
    message: str | None = None
    n_tool_calls: int = 0
    details: dict[str, Any] = field(default_factory=dict)


class Agent(abc.ABC):
    kind: ClassVar[str]
    # The oracle alone may see solution/; the trial uploads it only when this is True.
    needs_solution: ClassVar[bool] = False

    def __init__(self, spec: str) -> None:
        self.spec = spec

    @property
    def name(self) -> str:
        return self.spec

    def check_ready(self, agent_env: Mapping[str, str]) -> None:
        """Before a run is accepted (no trial started): ValueError naming what this agent lacks
        to start at all (a manifest's unset ``requires_env``). ``agent_env`` is the run's
        ``--agent-env``."""
        return None

    @abc.abstractmethod
    async def run(self, ctx: AgentContext) -> AgentOutcome:
        """Work in the sandbox until done; must return (not hang) when cancelled."""


A = TypeVar("A", bound=type[Agent])
# The built-in agent kinds (worker/core/registry.py): imported when first named.
AGENT_KINDS: Registry[type[Agent]] = Registry(
    "agent kind",
    {
        "nop": "worker.agents.builtin:NopAgent",
        "oracle": "worker.agents.builtin:OracleAgent",
        "script": "worker.agents.builtin:ScriptAgent",
        "acp": "worker.agents.acp:ManifestAgent",
        "a2a": "worker.agents.a2a:A2AAgent",
    },
)


def agent_kind(kind: str) -> Callable[[A], A]:
    """Register an agent class; ``spec`` strings ``kind`` or ``kind:<arg>`` resolve to it. A
    kind is taken once (a built-in's own class finds its entry already there)."""

    def register(cls: A) -> A:
        AGENT_KINDS.register(kind, cls)
        cls.kind = kind
        return cls

    return register
