"""Bounded capture of a process's output, shared by the sandbox backends."""

from __future__ import annotations

import asyncio

# Without a limit from the caller, keep at most this much of each stream.
DEFAULT_MAX_OUTPUT_BYTES = 16 * 1024 * 1024
# Exit code reported for a command killed at its timeout (the convention of timeout(1)).
TIMEOUT_EXIT_CODE = 124


class OutputBuffer:
    """Keeps the first ``limit`` bytes of a stream and remembers whether more came."""

    def __init__(self, limit: int | None) -> None:
        self.limit = DEFAULT_MAX_OUTPUT_BYTES if limit is None else max(0, limit)
        self._chunks: list[bytes] = []
        self._size = 0
        self.truncated = False

    def feed(self, data: bytes) -> None:
        room = self.limit - self._size
        if len(data) > room:
            self.truncated = True
            data = data[: max(room, 0)]
        if data:
            self._chunks.append(data)
            self._size += len(data)

    def text(self) -> str:
        return b"".join(self._chunks).decode("utf-8", errors="replace")


async def drain(reader: asyncio.StreamReader, buffer: OutputBuffer) -> None:
    """Read ``reader`` to EOF into ``buffer`` (reading on past the limit so the writer never blocks)."""
    while chunk := await reader.read(65536):
        buffer.feed(chunk)
