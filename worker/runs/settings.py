"""What an :class:`~worker.runs.engine.Engine` is configured with (the ``worker`` command's
options, or ``skillsbench-agentbeats run``'s)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from worker.core.failures import RetryPolicy
from worker.core.limits import OutputCaps
from worker.executors import DEFAULT_EXECUTOR
from worker.runs.meta import ProofSettings
from worker.sandbox.base import DEFAULT_BACKEND
from worker.sandbox.resources import ResourceSettings
from worker.sandbox.settings import ParticipantProxies, PrebuiltImages


@dataclass
class EngineSettings:
    jobs_dir: Path
    tasks_dir: Path
    environment: str = DEFAULT_BACKEND
    concurrency: int = field(default_factory=lambda: os.cpu_count() or 1)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    proof: ProofSettings | None = None  # default: from the environment, under the jobs dir
    env: Mapping[str, str] | None = None  # where revisions/images are read (default os.environ)
    prebuilt: PrebuiltImages = field(default_factory=PrebuiltImages)  # backends running images
    proxies: ParticipantProxies = field(default_factory=ParticipantProxies)
    caps: OutputCaps = field(default_factory=OutputCaps.from_env)  # worker/core/limits.py
    # The process cap and the CPU/memory overrides (worker/sandbox/resources.py).
    resources: ResourceSettings = field(default_factory=ResourceSettings.from_env)
    # Where attempts run (worker/executors): "inprocess" (this host) or "ray" ({"address": ..})
    executor: str = DEFAULT_EXECUTOR
    executor_options: Mapping[str, str] = field(default_factory=dict)
