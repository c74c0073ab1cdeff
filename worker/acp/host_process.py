"""An agent process on the worker host (the a2a bridge), shaped like a sandbox process so one
ACP session runner serves both.

It dies with the worker: the process is started through a short Python prelude that asks the
kernel for SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``, kept across ``execve``),
then checks that the worker is still its parent (it may have died before the request took
effect) and only then execs the real command. The signal is tied to the thread that started the
process: the worker starts them from its event loop thread, which lives as long as the worker.

Each start is also told to :data:`started_hook` (the engine records it in the run store), so a
worker restarted after a crash can kill what is left, identified by pid, start time and boot.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from worker.sandbox.base import SandboxProcess

STREAM_LIMIT = 50 << 20

# argv: -c PRELUDE <worker pid> <command...>. Exits 125 without running the command when the
# worker is already gone.
_PRELUDE = """\
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(1, signal.SIGKILL, 0, 0, 0) != 0:
    sys.exit("cannot set the parent-death signal: " + os.strerror(ctypes.get_errno()))
if os.getppid() != int(sys.argv[1]):
    sys.exit(125)
os.execvp(sys.argv[2], sys.argv[2:])
"""


@dataclass(frozen=True)
class ProcessIdentity:
    """A process, told apart from a later one that reuses its pid."""

    pid: int
    start_ticks: int  # /proc/<pid>/stat field 22: start time after boot, in clock ticks
    boot_id: str


def process_identity(pid: int) -> ProcessIdentity | None:
    """The identity of live process ``pid``; None when it is gone (or this is not Linux)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # the name may hold spaces and parentheses
    return ProcessIdentity(pid, int(fields[19]), boot_id)


def kill_if_same(identity: ProcessIdentity) -> bool:
    """SIGKILL the process (and its process group, which it leads) if it is still the one
    recorded; says whether it was."""
    if process_identity(identity.pid) != identity:
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.getpgid(identity.pid) == identity.pid:
            os.killpg(identity.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(identity.pid, signal.SIGKILL)
    return True


# Called with every host process started in this context (the engine sets it per attempt).
started_hook: ContextVar[Callable[[ProcessIdentity], None] | None] = ContextVar(
    "host_process_started_hook", default=None
)


def die_with_parent_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` wrapped so that it is killed when this process dies (Linux only)."""
    if not sys.platform.startswith("linux"):
        return list(argv)
    return [sys.executable, "-I", "-S", "-c", _PRELUDE, str(os.getpid()), *argv]


class HostProcess(SandboxProcess):
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process
        assert process.stdin and process.stdout and process.stderr
        self.stdin = process.stdin
        self.stdout = process.stdout
        self.stderr = process.stderr

    @property
    def pid(self) -> int:
        return self._process.pid

    @classmethod
    async def start(
        cls, argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None = None
    ) -> HostProcess:
        """Start with exactly ``env`` (nothing inherited implicitly) in its own process group,
        bound to die with the worker."""
        process = await asyncio.create_subprocess_exec(
            *die_with_parent_argv(argv),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            limit=STREAM_LIMIT,
            start_new_session=True,
        )
        hook = started_hook.get()
        identity = process_identity(process.pid)
        if hook is not None and identity is not None:
            hook(identity)
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
