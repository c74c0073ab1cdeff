"""Processes in a bubblewrap sandbox: one bwrap invocation per command, its status read from
``--json-status-fd``, and everything the command left killed with its PID namespace."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal

from worker.sandbox.base import SandboxProcess

STREAM_LIMIT = 64 * 1024 * 1024  # longest line an open_process reader accepts (ACP JSON lines)


class Spawned:
    """One bwrap invocation: its process and what bwrap reports on ``--json-status-fd``.

    bwrap reparents the command into the sandbox's init namespace, so the outer bwrap is not
    the command's parent: it reports the command's namespace leader ("child-pid") and, once the
    command exits, its "exit-code". We then kill that namespace, so nothing the command left
    behind lives on or holds our pipes open.
    """

    def __init__(self, proc: asyncio.subprocess.Process, status_fd: int) -> None:
        self.proc = proc
        self.child_pid: int | None = None
        self.exit_code: int | None = None
        self.has_pid = asyncio.Event()
        self.finished = asyncio.Event()
        self._task = asyncio.create_task(self._read_status(status_fd))

    async def _read_status(self, fd: int) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", 0)
        )
        decoder = json.JSONDecoder()
        buffer = ""
        try:
            while chunk := await reader.read(4096):
                buffer += chunk.decode(errors="replace")
                while buffer.strip():
                    try:
                        doc, end = decoder.raw_decode(buffer.lstrip())
                    except ValueError:
                        break
                    buffer = buffer.lstrip()[end:]
                    if isinstance(doc, dict) and "child-pid" in doc:
                        self.child_pid = int(doc["child-pid"])
                        self.has_pid.set()
                    if isinstance(doc, dict) and "exit-code" in doc:
                        self.exit_code = int(doc["exit-code"])
        finally:
            transport.close()
            self.has_pid.set()
            self.finished.set()

    def kill(self) -> None:
        if self.child_pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.child_pid, signal.SIGKILL)
            self.child_pid = None
        kill_group(self.proc)

    async def wait(self) -> int:
        """Wait for the command, then kill what it left behind; its exit code."""
        while True:
            try:
                await asyncio.wait_for(self.finished.wait(), 0.5)
                break
            except TimeoutError:
                # bwrap whose setup failed after reporting the child may never report an exit.
                if self.child_pid is not None and not alive(self.child_pid):
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.finished.wait(), 0.5)
                    break
        self.kill()
        code = await self.proc.wait()
        return self.exit_code if self.exit_code is not None else exit_code(code)


class BubblewrapProcess(SandboxProcess):
    """A long-running process; ``running`` is its sandbox's set of live invocations."""

    def __init__(self, spawned: Spawned, running: set[Spawned]) -> None:
        self._spawned = spawned
        self._running = running
        proc = spawned.proc
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        self.stdin = proc.stdin
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self._code: int | None = None

    async def wait(self) -> int:
        try:
            self._code = await self._spawned.wait()
        finally:
            self._running.discard(self._spawned)
        return self._code

    async def kill(self) -> None:
        self._spawned.kill()
        await self.wait()

    @property
    def returncode(self) -> int | None:
        if self._code is None and self._spawned.finished.is_set():
            return self._spawned.exit_code
        return self._code


def kill_group(proc: asyncio.subprocess.Process) -> None:
    # The outer bwrap leads its own session; with --die-with-parent its namespace goes with it.
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


def reader(reader: asyncio.StreamReader | None) -> asyncio.StreamReader:
    assert reader is not None
    return reader


async def feed(proc: asyncio.subprocess.Process, data: bytes | None) -> None:
    if data is None or proc.stdin is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        proc.stdin.write(data)
        await proc.stdin.drain()
    proc.stdin.close()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def exit_code(code: int | None) -> int:
    if code is None:
        return -1
    return 128 - code if code < 0 else code
