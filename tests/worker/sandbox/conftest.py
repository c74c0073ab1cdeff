"""Sandbox test fixtures (defined in support.py so test modules can import its helpers)."""

from tests.worker.sandbox.support import backend, make_task, open_sandbox, sandbox

__all__ = ["backend", "make_task", "open_sandbox", "sandbox"]
