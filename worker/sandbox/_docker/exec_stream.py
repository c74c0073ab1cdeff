"""One exec over Docker's hijacked socket, demultiplexed onto asyncio streams on the event loop
(Docker's 8-byte stream frames), so a long-running ACP agent does not hold a thread."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from worker.sandbox._docker.client import docker_client, errors
from worker.sandbox.base import SandboxError

STREAM_LIMIT = 64 * 1024 * 1024
# How long a kill waits for the pid the exec's wrapper reports (its start may lag under load).
PID_WAIT_SEC = 30.0
T = TypeVar("T")
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

    # A cancel while the exec starts must not leave its command running unseen: the start is
    # finished first (the command may already run), then the caller kills the command.
    started, cancelled = await finish(asyncio.to_thread(start))
    try:
        exec_id, raw = started.result()
    except errors().DockerException as exc:
        if cancelled:
            raise asyncio.CancelledError from None
        raise SandboxError(f"exec failed: {exc}") from None
    sock: socket.socket = getattr(raw, "_sock", raw)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STREAM_LIMIT)
    protocol = asyncio.StreamReaderProtocol(reader)
    connected, cancelled_now = await finish(loop.create_connection(lambda: protocol, sock=sock))
    cancelled = cancelled or cancelled_now
    try:
        transport, _ = connected.result()
    except BaseException:
        sock.close()
        if cancelled:
            raise asyncio.CancelledError from None
        raise
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
    if cancelled:
        raise CancelledDuringStart(session)
    return session


class CancelledDuringStart(asyncio.CancelledError):
    """A cancel came while the exec started: its session, whose command the caller must kill."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session


async def finish(awaitable: Awaitable[T]) -> tuple[asyncio.Future[T], bool]:
    """Run ``awaitable`` to its end even if the caller is cancelled meanwhile; its future (done)
    and whether a cancel arrived (the caller then cleans up and raises ``CancelledError``)."""
    future = asyncio.ensure_future(awaitable)
    cancelled = False
    while not future.done():
        try:
            await asyncio.wait({future})
        except asyncio.CancelledError:
            cancelled = True
    return future, cancelled


async def exit_code(exec_id: str, wait: float = 30.0) -> int:
    """The exec's exit code once the engine reports it ended; -1 after ``wait`` seconds;
    SandboxError when the engine no longer knows the exec."""
    client = await asyncio.to_thread(docker_client)
    deadline = asyncio.get_running_loop().time() + wait
    while True:
        try:
            info = await asyncio.to_thread(client.api.exec_inspect, exec_id)
        except errors().DockerException as exc:  # e.g. its container was removed meanwhile
            raise SandboxError(f"exec lost: {exc}") from None
        if not info.get("Running") and info.get("ExitCode") is not None:
            return int(info["ExitCode"])
        if asyncio.get_running_loop().time() > deadline:
            return -1
        await asyncio.sleep(0.02)
