"""The executors by name: :func:`make_executor` (``--executor``) and :func:`executor_names`."""

from __future__ import annotations

from collections.abc import Mapping

from worker.executors.base import EXECUTORS, Executor


def executor_names() -> list[str]:
    _load_builtin()
    return sorted(EXECUTORS)


def make_executor(name: str, options: Mapping[str, str] | None = None) -> Executor:
    """The executor ``name`` with ``options``; ValueError naming an unknown one."""
    _load_builtin()
    try:
        factory = EXECUTORS[name]
    except KeyError:
        known = ", ".join(sorted(EXECUTORS))
        raise ValueError(f"unknown executor {name!r} (known: {known})") from None
    return factory(options or {})


def _load_builtin() -> None:
    # The ray executor's module imports no ray at import time: registering it is free.
    from worker.executors import _ray, inprocess  # noqa: F401
