"""ACP ``terminal/*`` served by the trial's sandbox: each terminal is one sandbox process whose
output is collected with a byte limit (oldest bytes dropped first, as ACP specifies)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from worker.sandbox.base import Sandbox, SandboxProcess

DEFAULT_OUTPUT_LIMIT = 1 << 20
DRAIN_GRACE_SEC = 0.5


@dataclass
class _Tail:
    """Keeps the last ``limit`` bytes written to it."""

    limit: int
    data: bytearray = field(default_factory=bytearray)
    truncated: bool = False

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > self.limit:
            del self.data[: len(self.data) - self.limit]
            self.truncated = True

    def text(self) -> str:
        # A cut may split a UTF-8 sequence at the start; drop the partial character.
        return self.data.decode("utf-8", errors="replace").lstrip("\ufffd")


class Terminal:
    """One command running in the sandbox."""

    def __init__(self, process: SandboxProcess, limit: int) -> None:
        self.process = process
        self.combined = _Tail(limit)
        self.streams = {"stdout": _Tail(limit), "stderr": _Tail(limit)}
        self._readers = [
            asyncio.create_task(self._pump(process.stdout, "stdout")),
            asyncio.create_task(self._pump(process.stderr, "stderr")),
        ]
        self.killed = False

    async def _pump(self, stream: asyncio.StreamReader, name: str) -> None:
        while chunk := await stream.read(65536):
            self.combined.add(chunk)
            self.streams[name].add(chunk)

    async def wait(self) -> int:
        code = await self.process.wait()
        # Let the last output arrive, but do not wait for EOF: a background job started by the
        # command (`server &`) may keep the pipes open long after the command itself exited.
        await asyncio.wait(self._readers, timeout=DRAIN_GRACE_SEC)
        return code

    @property
    def exit_code(self) -> int | None:
        return self.process.returncode

    async def kill(self) -> None:
        self.killed = True
        await self.process.kill()

    async def close(self) -> None:
        if self.process.returncode is None:
            await self.kill()
        for reader in self._readers:
            reader.cancel()
        for reader in self._readers:
            with contextlib.suppress(BaseException):
                await reader


class Terminals:
    """The terminals of one ACP connection, by id."""

    def __init__(self, sandbox: Sandbox, user: str | None = None) -> None:
        self.sandbox = sandbox
        self.user = user
        self._ids = itertools.count(1)
        self._terminals: dict[str, Terminal] = {}

    async def create(
        self,
        command: str,
        args: Sequence[str],
        *,
        cwd: str | None,
        env: Mapping[str, str],
        output_limit: int | None,
    ) -> str:
        argv = [command, *args] if args else ["sh", "-c", command]
        process = await self.sandbox.open_process(
            argv, cwd=cwd, env=dict(env) or None, user=self.user
        )
        terminal_id = f"term-{next(self._ids)}"
        self._terminals[terminal_id] = Terminal(process, output_limit or DEFAULT_OUTPUT_LIMIT)
        return terminal_id

    def get(self, terminal_id: str) -> Terminal:
        try:
            return self._terminals[terminal_id]
        except KeyError:
            raise KeyError(f"unknown terminal {terminal_id!r}") from None

    async def release(self, terminal_id: str) -> None:
        terminal = self._terminals.pop(terminal_id, None)
        if terminal is not None:
            await terminal.close()

    async def close_all(self) -> None:
        for terminal_id in list(self._terminals):
            await self.release(terminal_id)
