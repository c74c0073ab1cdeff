"""Sandboxes: the ``Sandbox`` protocol, its registry and the built-in backends."""

from worker.sandbox.base import (
    ExecResult,
    Sandbox,
    SandboxError,
    SandboxProcess,
    SandboxSpec,
    SandboxUnsupported,
    sandbox_backend,
    sandbox_class,
)

__all__ = [
    "ExecResult",
    "Sandbox",
    "SandboxError",
    "SandboxProcess",
    "SandboxSpec",
    "SandboxUnsupported",
    "sandbox_backend",
    "sandbox_class",
]
