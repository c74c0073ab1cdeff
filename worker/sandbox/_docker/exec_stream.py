"""One exec over Docker's hijacked socket, demultiplexed onto asyncio streams on the event loop
(Docker's 8-byte stream frames), so a long-running ACP agent does not hold a thread."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from worker.sandbox._docker.client import docker_client, errors
from worker.sandbox.base import SandboxError

STREAM_LIMIT = 64 * 1024 * 1024
# Prints the shell's pid (the exec's process group) on stderr, then becomes the command.
PID_WRAPPER = 'echo "$$" >&2 && exec "$@"'


class StdinWriter(asyncio.StreamWriter):
    """The exec's stdin: ``close()`` half-closes (EOF to the process) so output still flows."""

    def close(self) -> None:
        if not self.transport.is_closing():
            with contextlib.suppress(OSError, RuntimeError):
                self.transport.write_eof()


@dataclass(eq=False)
class Session:
    """One exec over the hijacked socket, demultiplexed onto asyncio streams."""

    exec_id: str
    sock: socket.socket
    writer: StdinWriter
    stdout: asyncio.StreamReader
    stderr: asyncio.StreamReader
    pid: asyncio.Future[int]
    pump: asyncio.Task[None] = field(init=False)

    def close(self) -> None:
        self.pump.cancel()
        self.writer.transport.close()


async def pump(reader: asyncio.StreamReader, session: Session) -> None:
    stderr_head = b""
    try:
        while True:
            try:
                header = await reader.readexactly(8)
            except asyncio.IncompleteReadError:
                return
            size = int.from_bytes(header[4:8], "big")
            data = await reader.readexactly(size) if size else b""
            if header[0] == 2:
                if not session.pid.done():
                    stderr_head += data
                    if b"\n" not in stderr_head:
                        continue
                    line, _, data = stderr_head.partition(b"\n")
                    try:
                        session.pid.set_result(int(line))
                    except ValueError:
                        session.pid.set_result(0)
                        data = stderr_head
                if data:
                    session.stderr.feed_data(data)
            else:
                session.stdout.feed_data(data)
    except (ConnectionError, OSError, asyncio.IncompleteReadError):
        return
    finally:
        if not session.pid.done():
            session.pid.set_result(0)
        session.stdout.feed_eof()
        session.stderr.feed_eof()


async def open_session(
    container: str,
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None,
    workdir: str,
    user: str | None,
    stdin: bool,
) -> Session:
    """Start ``argv`` in ``container`` (under :data:`PID_WRAPPER`, so the session learns the
    exec's process group) and pump its output."""
    wrapped = ["/bin/sh", "-c", PID_WRAPPER, "sh", *argv]
    client = await asyncio.to_thread(docker_client)

    def start() -> tuple[str, Any]:
        created = client.api.exec_create(
            container,
            wrapped,
            stdout=True,
            stderr=True,
            stdin=stdin,
            environment=dict(env or {}),
            workdir=workdir,
            user=user or "",
        )
        return created["Id"], client.api.exec_start(created["Id"], socket=True)

    try:
        exec_id, raw = await asyncio.to_thread(start)
    except errors().DockerException as exc:
        raise SandboxError(f"exec failed: {exc}") from None
    sock: socket.socket = getattr(raw, "_sock", raw)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STREAM_LIMIT)
    protocol = asyncio.StreamReaderProtocol(reader)
    transport, _ = await loop.create_connection(lambda: protocol, sock=sock)
    writer = StdinWriter(transport, protocol, reader, loop)
    session = Session(
        exec_id=exec_id,
        sock=sock,
        writer=writer,
        stdout=asyncio.StreamReader(limit=STREAM_LIMIT),
        stderr=asyncio.StreamReader(limit=STREAM_LIMIT),
        pid=loop.create_future(),
    )
    session.pump = asyncio.create_task(pump(reader, session))
    if not stdin:
        writer.close()
    return session


async def exit_code(exec_id: str, wait: float = 30.0) -> int:
    """The exec's exit code once the engine reports it ended; -1 after ``wait`` seconds."""
    client = await asyncio.to_thread(docker_client)
    deadline = asyncio.get_running_loop().time() + wait
    while True:
        info = await asyncio.to_thread(client.api.exec_inspect, exec_id)
        if not info.get("Running") and info.get("ExitCode") is not None:
            return int(info["ExitCode"])
        if asyncio.get_running_loop().time() > deadline:
            return -1
        await asyncio.sleep(0.02)
