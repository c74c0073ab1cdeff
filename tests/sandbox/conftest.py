"""Sandbox test fixtures (defined in conftest_sandbox so test modules can import its helpers)."""

from conftest_sandbox import backend, make_task, open_sandbox, sandbox

__all__ = ["backend", "make_task", "open_sandbox", "sandbox"]
