"""What a trial's sandbox is given: the task's ``cpus`` and ``memory_mb`` fitted to the host (or
to the operator's overrides) and a process cap, with a record of every change.

A request above what the host (or the Docker Engine) can give would never start (Docker answers
``400 Range of CPUs is from 0.01 to 2.00``): it is capped to the host instead, and the trial's
``result.json`` (``resources``) and the run's metadata say so. The operator may also override
both for every task (``--override-cpus`` / ``--override-memory-mb``, as BenchFlow's
``override_cpus``); an override is capped to the host like a request.

The process cap (``pids_limit``) counts processes *and threads* of one trial, the agent's and the
verifier's together. Its default, :data:`DEFAULT_PIDS_LIMIT`, leaves room for what real tasks
run (a browser, a JVM or a parallel build use hundreds of threads) while eight trials at the cap
stay under Linux's default ``pid_max`` of 32,768: a fork bomb fails its trial, never the host.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

DEFAULT_PIDS_LIMIT: Final = 4096
PIDS_LIMIT_VAR: Final = "SKILLSBENCH_PIDS_LIMIT"
OVERRIDE_CPUS_VAR: Final = "SKILLSBENCH_OVERRIDE_CPUS"
OVERRIDE_MEMORY_VAR: Final = "SKILLSBENCH_OVERRIDE_MEMORY_MB"
MIN_MEMORY_MB: Final = 16  # below this nothing starts (Docker refuses under 6 MB)
LIMITS: Final = ("memory", "cpus", "pids")  # the limits a backend reports mechanisms for


@dataclass(frozen=True)
class ResourceSettings:
    """The operator's settings (worker CLI, ``run``, or the ``SKILLSBENCH_*`` variables)."""

    pids_limit: int = DEFAULT_PIDS_LIMIT
    override_cpus: float | None = None
    override_memory_mb: int | None = None

    def __post_init__(self) -> None:
        if self.pids_limit < 16:
            raise ValueError(f"pids_limit must be at least 16, not {self.pids_limit}")
        if self.override_cpus is not None and not (
            math.isfinite(self.override_cpus) and self.override_cpus > 0
        ):
            raise ValueError(f"override_cpus must be above 0, not {self.override_cpus}")
        if self.override_memory_mb is not None and self.override_memory_mb < MIN_MEMORY_MB:
            raise ValueError(
                f"override_memory_mb must be at least {MIN_MEMORY_MB}, not {self.override_memory_mb}"
            )

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        pids_limit: int | None = None,
        override_cpus: float | None = None,
        override_memory_mb: int | None = None,
    ) -> ResourceSettings:
        """The settings: each argument given, else its variable, else the default; ValueError
        naming the variable when one is not a number."""
        env = os.environ if env is None else env

        def number(var: str, kind: type[int] | type[float]) -> Any:
            raw = (env.get(var) or "").strip()
            if not raw:
                return None
            try:
                return kind(raw)
            except ValueError:
                raise ValueError(f"{var}={raw!r} is not a number") from None

        pids = pids_limit if pids_limit is not None else number(PIDS_LIMIT_VAR, int)
        return cls(
            pids_limit=DEFAULT_PIDS_LIMIT if pids is None else pids,
            override_cpus=override_cpus
            if override_cpus is not None
            else number(OVERRIDE_CPUS_VAR, float),
            override_memory_mb=override_memory_mb
            if override_memory_mb is not None
            else number(OVERRIDE_MEMORY_VAR, int),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "pids_limit": self.pids_limit,
            "override_cpus": self.override_cpus,
            "override_memory_mb": self.override_memory_mb,
        }


@dataclass(frozen=True)
class HostCapacity:
    """What the sandbox's host (the engine's, for docker) can give one sandbox."""

    cpus: float
    memory_mb: int

    @classmethod
    def of_this_host(cls) -> HostCapacity:
        """The CPUs this process may run on and the host's memory (/proc/meminfo)."""
        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cpus = os.cpu_count() or 1
        memory_mb = 0
        try:
            with open("/proc/meminfo", encoding="ascii") as info:
                for line in info:
                    if line.startswith("MemTotal:"):
                        memory_mb = int(line.split()[1]) // 1024
                        break
        except (OSError, ValueError):
            pass
        return cls(cpus=float(cpus), memory_mb=memory_mb or 1 << 20)

    def as_dict(self) -> dict[str, Any]:
        return {"cpus": self.cpus, "memory_mb": self.memory_mb}


@dataclass(frozen=True)
class Resources:
    """One trial's resources: what the task asked for and what its sandbox gets."""

    requested_cpus: float
    requested_memory_mb: int
    cpus: float
    memory_mb: int
    pids_limit: int
    changes: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "requested": {"cpus": self.requested_cpus, "memory_mb": self.requested_memory_mb},
            "given": {"cpus": self.cpus, "memory_mb": self.memory_mb, "pids": self.pids_limit},
            "changes": list(self.changes),
        }

    def summary(self) -> str:
        """One line of what changed (empty when nothing did)."""
        return "; ".join(
            f"{c['limit']} {c['from']:g} -> {c['to']:g} ({c['why']})" for c in self.changes
        )


def fit(cpus: float, memory_mb: int, settings: ResourceSettings, host: HostCapacity) -> Resources:
    """The task's request, overridden by the operator's settings, then capped to ``host``."""
    changes: list[dict[str, Any]] = []

    def change(limit: str, old: float, new: float, why: str) -> float:
        if new != old:
            changes.append({"limit": limit, "from": old, "to": new, "why": why})
        return new

    given_cpus = float(cpus)
    if settings.override_cpus is not None:
        given_cpus = change("cpus", given_cpus, float(settings.override_cpus), "override")
    if given_cpus > host.cpus:
        given_cpus = change("cpus", given_cpus, host.cpus, f"host has {host.cpus:g} CPUs")
    given_memory = int(memory_mb)
    if settings.override_memory_mb is not None:
        given_memory = int(
            change("memory_mb", given_memory, settings.override_memory_mb, "override")
        )
    if given_memory > host.memory_mb:
        given_memory = int(
            change("memory_mb", given_memory, host.memory_mb, f"host has {host.memory_mb} MB")
        )
    return Resources(
        requested_cpus=float(cpus),
        requested_memory_mb=int(memory_mb),
        cpus=given_cpus,
        memory_mb=given_memory,
        pids_limit=settings.pids_limit,
        changes=changes,
    )


def unenforced_line(environment: str, mechanisms: Mapping[str, str | None]) -> str | None:
    """The one line a run prints at its start when a limit cannot be enforced, or only
    approximately (None: all are)."""
    missing = [limit for limit in LIMITS if not mechanisms.get(limit)]
    rough = [limit for limit in LIMITS if (mechanisms.get(limit) or "").startswith("approximate")]
    parts = []
    if missing:
        parts.append(f"cannot enforce the task's {', '.join(missing)} limit(s)")
    if rough:
        parts.append(f"enforces the {', '.join(rough)} limit(s) only approximately")
    if not parts:
        return None
    return (
        f"the {environment} sandbox {' and '.join(parts)} on this host "
        "(see docs/sandboxes.md, 'Resource limits')"
    )
