"""Which failure kind a sandbox start error is, and a deterministic one once per task per run.

:func:`failure_kind_of` maps any sandbox start error to its kind (the deterministic ones are the
subclasses in :mod:`worker.sandbox.errors`); :class:`FirstStarts` makes a deterministic start
failure happen once per task in a run, not once per trial.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from worker.core.failures import FailureKind
from worker.sandbox.base import SandboxError, SandboxUnsupported
from worker.sandbox.errors import DeterministicSandboxError


def failure_kind_of(exc: SandboxError) -> FailureKind:
    """The failure kind of an error raised while a sandbox starts."""
    if isinstance(exc, SandboxUnsupported):
        return FailureKind.SANDBOX_UNSUPPORTED
    if isinstance(exc, DeterministicSandboxError):
        return exc.kind
    return FailureKind.SANDBOX_START


class FirstStarts:
    """One run's record of which tasks' sandboxes could start.

    The first trial of a task starts its sandbox alone (later ones wait: they would build the
    same image); after a success the others start freely, after a deterministic failure they
    fail at once with the same error, so a broken image is built once per run. A transient
    failure records nothing: the next trial tries for itself.
    """

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._started: set[str] = set()
        self._failed: dict[str, DeterministicSandboxError] = {}

    async def start(self, key: str, start: Callable[[], Awaitable[None]]) -> None:
        if key not in self._started and key not in self._failed:
            async with self._locks.setdefault(key, asyncio.Lock()):
                if key not in self._started and key not in self._failed:
                    try:
                        await start()
                    except DeterministicSandboxError as exc:
                        self._failed[key] = exc
                        raise
                    self._started.add(key)
                    return
        failed = self._failed.get(key)
        if failed is not None:
            raise type(failed)(f"{failed} (as for an earlier trial of this task in this run)")
        await start()
