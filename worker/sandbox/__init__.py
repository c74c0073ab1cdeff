"""Sandboxes: the ``Sandbox`` base class with its lifecycle hooks, its registry and the data a
backend receives. The built-in backends live in private packages (``_bubblewrap``, registered as
``local``, and ``_docker``), loaded on first use of the registry."""

from worker.sandbox.base import (
    DEFAULT_BACKEND,
    ExecResult,
    Sandbox,
    SandboxConfig,
    SandboxError,
    SandboxProcess,
    SandboxSpec,
    SandboxUnsupported,
    backend_names,
    sandbox_backend,
    sandbox_class,
    unregister_backend,
)

__all__ = [
    "DEFAULT_BACKEND",
    "ExecResult",
    "Sandbox",
    "SandboxConfig",
    "SandboxError",
    "SandboxProcess",
    "SandboxSpec",
    "SandboxUnsupported",
    "backend_names",
    "sandbox_backend",
    "sandbox_class",
    "unregister_backend",
]
