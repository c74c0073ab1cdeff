"""The executors by name: :func:`make_executor` (``--executor``) and :func:`executor_names`."""

from __future__ import annotations

from collections.abc import Mapping

from worker.executors.base import EXECUTORS, Executor


def executor_names() -> list[str]:
    return EXECUTORS.names()


def make_executor(name: str, options: Mapping[str, str] | None = None) -> Executor:
    """The executor ``name`` with ``options``; ValueError naming an unknown one."""
    cls = EXECUTORS.get(name)
    return cls.from_options(options or {})  # type: ignore[attr-defined]
