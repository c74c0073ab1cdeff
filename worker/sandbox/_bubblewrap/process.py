"""Processes in a bubblewrap sandbox: one bwrap invocation per command, its status read from
``--json-status-fd``, and everything the command left killed with its PID namespace."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import signal
from collections.abc import Callable

from worker.sandbox.base import SandboxProcess

STREAM_LIMIT = 64 * 1024 * 1024  # longest line an open_process reader accepts (ACP JSON lines)
# How long bwrap may take to report the exit of a command it has already reaped.
REPORT_GRACE_SEC = 15.0
DYING_GRACE_SEC = 5.0  # for a bwrap that closed its status pipe without a report


class Spawned:
    """One bwrap invocation: its process and what bwrap reports on ``--json-status-fd``.

    bwrap reparents the command into the sandbox's init namespace, so the outer bwrap is not
    the command's parent: it reports the command's namespace leader ("child-pid") and, once the
    command exits, its "exit-code". We then kill that namespace, so nothing the command left
    behind lives on or holds our pipes open.
    """

    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        status_fd: int,
        sandbox_gone: Callable[[], bool] = lambda: False,
    ) -> None:
        self.proc = proc
        # Whether the sandbox's init is gone: then a command's namespace died with it, and bwrap,
        # not the parent of a command it placed in the init's namespace, never reports its exit.
        self._sandbox_gone = sandbox_gone
        self.child_pid: int | None = None
        self.exit_code: int | None = None
        self.has_pid = asyncio.Event()
        self.finished = asyncio.Event()
        # Signals go through pidfds: a pid is free for reuse once reaped (bwrap reaps the
        # command, asyncio's watcher reaps bwrap), and on a host that forks thousands of
        # processes a kill by number then hits another sandbox's command.
        self._bwrap = Pidfd.open(proc.pid) if proc.returncode is None else None
        self._child: Pidfd | None = None
        self._killed = False  # by us (kill()): a timeout, a kill-all, the sandbox's stop
        # bwrap died of a signal nobody here sent, before it reported the command's exit: the
        # host killed the sandbox's own process (nothing inside sees it), not the command.
        self.killed_from_outside = False
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
                        # Reported at its clone, before the command runs: still this child.
                        if self.exit_code is None:
                            self._child = Pidfd.open(self.child_pid)
                        self.has_pid.set()
                    if isinstance(doc, dict) and "exit-code" in doc:
                        self.exit_code = int(doc["exit-code"])
        finally:
            transport.close()
            self.has_pid.set()
            self.finished.set()

    def kill(self) -> None:
        """SIGKILL the command's namespace leader (and with it its namespace) and bwrap."""
        self._killed = True
        if self._child is not None:
            self._child.kill()
        elif self.child_pid is not None and self.exit_code is None and not Pidfd.supported():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.child_pid, signal.SIGKILL)
        if self._bwrap is not None:
            self._bwrap.kill()
        elif not Pidfd.supported():
            kill_group(self.proc)

    def close(self) -> None:
        """Release the pidfds (once the command is waited for or abandoned)."""
        for handle in (self._child, self._bwrap):
            if handle is not None:
                handle.close()
        self._child = self._bwrap = None

    def _child_alive(self) -> bool:
        if self._child is not None:
            return self._child.alive()
        if self.child_pid is None or Pidfd.supported():
            return False  # gone before we could hold it
        return alive(self.child_pid)

    async def _reported_or_exited(self) -> None:
        """After the command is gone: until bwrap reports its exit or exits itself (then its
        report, if any, is already in the pipe), at most REPORT_GRACE_SEC."""
        reported = asyncio.ensure_future(self.finished.wait())
        exited = asyncio.ensure_future(self.proc.wait())
        deadline = asyncio.get_running_loop().time() + REPORT_GRACE_SEC
        try:
            while not (reported.done() or exited.done() or self._sandbox_gone()):
                left = deadline - asyncio.get_running_loop().time()
                if left <= 0:
                    break
                await asyncio.wait(
                    {reported, exited}, timeout=min(left, 0.5), return_when=asyncio.FIRST_COMPLETED
                )
            if exited.done() and not reported.done():
                await asyncio.wait({reported}, timeout=1.0)
        finally:
            reported.cancel()
            exited.cancel()

    async def wait(self) -> int:
        """Wait for the command, then kill what it left behind; its exit code."""
        while True:
            try:
                await asyncio.wait_for(self.finished.wait(), 0.5)
                break
            except TimeoutError:
                # bwrap whose setup failed after reporting the child may never report an exit.
                # A child that is gone was reaped by bwrap, whose report follows: on a loaded
                # host seconds later, and killing bwrap before it turns a clean exit into 137.
                if self.child_pid is not None and not self._child_alive():
                    await self._reported_or_exited()
                    break
        if not self._killed and self.exit_code is None and self._bwrap is not None:
            # No report: bwrap itself may be dying. Its status pipe closes before the kernel
            # marks it exited, so on a loaded host it still looks alive for a moment: let it
            # finish dying before asking who ended it (a live bwrap that never reported is
            # killed below after the grace).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.proc.wait()), DYING_GRACE_SEC)
        exited_alone = not self._killed and self._bwrap is not None and not self._bwrap.alive()
        self.kill()
        code = await self.proc.wait()
        self.close()
        if exited_alone and self.exit_code is None and code < 0:
            self.killed_from_outside = True
        # Without a report, bwrap's own status: the command's, unless we had to kill bwrap.
        return self.exit_code if self.exit_code is not None else exit_code(code)


class BubblewrapProcess(SandboxProcess):
    """A long-running process; ``running`` is its sandbox's set of live invocations."""

    def __init__(
        self, spawned: Spawned, running: set[Spawned], on_exit: Callable[[Spawned], None]
    ) -> None:
        self._spawned = spawned
        self._running = running
        self._on_exit = on_exit  # the sandbox's look at how it ended
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
        self._on_exit(self._spawned)
        return self._code

    async def kill(self) -> None:
        self._spawned.kill()
        await self.wait()

    @property
    def returncode(self) -> int | None:
        if self._code is None and self._spawned.finished.is_set():
            return self._spawned.exit_code
        return self._code


class Pidfd:
    """A process held by a pidfd (Linux >= 5.3): its signals never reach a later process that
    was given the same pid."""

    def __init__(self, fd: int) -> None:
        self.fd: int | None = fd

    @staticmethod
    def supported() -> bool:
        return _PIDFD_SUPPORTED

    @classmethod
    def open(cls, pid: int) -> Pidfd | None:
        """None when the process is gone already (or pidfds are not supported)."""
        if not _PIDFD_SUPPORTED:
            return None
        try:
            return cls(os.pidfd_open(pid))
        except OSError:
            return None

    def alive(self) -> bool:
        """Not yet exited (a zombie counts as exited)."""
        if self.fd is None:
            return False
        poller = select.poll()  # not select(): a busy worker's descriptors pass FD_SETSIZE
        poller.register(self.fd, select.POLLIN)
        return not poller.poll(0)

    def kill(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
                signal.pidfd_send_signal(self.fd, signal.SIGKILL)

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


def _pidfd_supported() -> bool:
    if not (hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return True


_PIDFD_SUPPORTED = _pidfd_supported()


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
