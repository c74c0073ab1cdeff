"""Sandbox errors that say which failure kind they are (the failure table decides the rest).

A plain :class:`~worker.sandbox.base.SandboxError` at start is transient (``sandbox_start``,
retried): the engine answered 5xx, timed out or went away. A backend raises one of these
subclasses where it knows the failure is deterministic, so the trial ends after one try:

* :class:`ImageBuildFailed`: the task's image build failed (a failing ``RUN``, a base image that
  is not there, an unreadable build context, the build ran past ``build_timeout_sec``).
* :class:`SandboxConfigRefused`: the engine refused the task's configuration (a 4xx answer, e.g.
  more CPUs than the host has).
"""

from __future__ import annotations

from typing import ClassVar

from worker.core.failures import FailureKind
from worker.sandbox.base import SandboxError


class DeterministicSandboxError(SandboxError):
    """A sandbox start failure that a retry would repeat."""

    kind: ClassVar[FailureKind]


class ImageBuildFailed(DeterministicSandboxError):
    kind = FailureKind.SANDBOX_BUILD


class SandboxConfigRefused(DeterministicSandboxError):
    kind = FailureKind.SANDBOX_CONFIG
