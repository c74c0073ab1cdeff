"""An agent process on the worker host (the a2a bridge), shaped like a sandbox process so one
ACP session runner serves both."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence

from worker.sandbox.base import SandboxProcess

STREAM_LIMIT = 50 << 20


class HostProcess(SandboxProcess):
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process
        assert process.stdin and process.stdout and process.stderr
        self.stdin = process.stdin
        self.stdout = process.stdout
        self.stderr = process.stderr

    @classmethod
    async def start(
        cls, argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None = None
    ) -> HostProcess:
        """Start with exactly ``env`` (nothing inherited implicitly) in its own process group."""
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            limit=STREAM_LIMIT,
            start_new_session=True,
        )
        return cls(process)

    async def wait(self) -> int:
        return await self._process.wait()

    async def kill(self) -> None:
        if self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()
        await self._process.wait()

    @property
    def returncode(self) -> int | None:
        return self._process.returncode
