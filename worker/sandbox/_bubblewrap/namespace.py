"""The init namespace of a bubblewrap sandbox: one long-lived process in its own user and PID
namespaces per sandbox; every command runs in a child PID namespace of it, so killing this init
kills every process ever started in the sandbox, background ones included."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import signal
import subprocess
from collections.abc import Callable, Sequence

from worker.sandbox._bubblewrap.host import CLEAN_PATH, NAMESPACE_FLAGS, system_args
from worker.sandbox._bubblewrap.process import Pidfd
from worker.sandbox.base import SandboxError

CLONE_NEWUSER = 0x10000000
_libc = ctypes.CDLL(None, use_errno=True)  # loaded here, never after a fork


def joins_by_setns() -> bool:
    """Whether commands enter the sandbox's user namespace before bwrap starts.

    bwrap joins a PID namespace (``--pidns``) before its ``--userns``; that needs CAP_SYS_ADMIN
    in the caller's own user namespace, which only root on the host has. Anyone else enters the
    user namespace first (where it is root, see the init's ``--uid 0``) and gives bwrap only
    ``--pidns``.
    """
    return os.geteuid() != 0


def enter_user_namespace(user_fd: int) -> Callable[[], None]:
    """A ``preexec_fn``: in the forked child, join the user namespace ``user_fd``."""

    def enter() -> None:  # after fork, before exec: one system call, nothing else
        if _libc.setns(user_fd, CLONE_NEWUSER) != 0:
            raise OSError(ctypes.get_errno(), "setns into the sandbox's user namespace")

    return enter


class InitNamespace:
    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.pid = 0  # the init's pid (its namespace's leader)
        self._handle: Pidfd | None = None
        self.fds: list[int] = []  # its user and PID namespaces, for bwrap --userns/--pidns

    def start(
        self,
        bwrap: str,
        name: str,
        wrapper: Sequence[str] = (),
        preexec: Callable[[], None] | None = None,
    ) -> None:
        """Start a new init (blocking); ``name`` shows on the host's process list; ``wrapper``
        (an argv that ends by executing its arguments) and ``preexec`` put it under the trial's
        limits."""
        read_fd, write_fd = os.pipe()
        argv = [
            *wrapper,
            bwrap,
            *NAMESPACE_FLAGS,
            "--unshare-user",
            # Root inside, whoever starts it: a command joins this user namespace as its root,
            # with the rights to join the PID namespace (see enter_user_namespace).
            "--uid",
            "0",
            "--gid",
            "0",
            "--unshare-pid",
            "--unshare-net",
            *system_args(),
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--info-fd",
            str(write_fd),
            "--",
            "/bin/sh",
            "-c",
            "echo ready; exec sleep infinity",
            name,  # $0 only: names the sandbox on the host's process list
        ]
        try:
            self.process = subprocess.Popen(
                argv,
                pass_fds=[write_fd],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env={"PATH": CLEAN_PATH},
                preexec_fn=preexec,
            )
        finally:
            os.close(write_fd)
        with os.fdopen(read_fd, "rb") as info:
            raw = info.read()  # EOF once bwrap closes it after setup (or dies)
        assert self.process.stdout is not None
        ready = self.process.stdout.readline()
        if ready.strip() != b"ready":
            self.process.kill()
            _, err = self.process.communicate()
            raise SandboxError(f"local sandbox init failed: {err.decode(errors='replace').strip()}")
        try:
            self.pid = int(json.loads(raw)["child-pid"])
            self._handle = Pidfd.open(self.pid)  # alive: it said "ready"
            self.fds = [
                os.open(f"/proc/{self.pid}/ns/user", os.O_RDONLY),
                os.open(f"/proc/{self.pid}/ns/pid", os.O_RDONLY),
            ]
        except (ValueError, KeyError, OSError) as exc:
            self.process.kill()
            raise SandboxError(f"local sandbox init failed: {exc}") from None

    def gone(self) -> bool:
        """Whether this init ended, or is ending, though nobody here killed it (:meth:`kill`
        forgets the process): nothing inside can end it, so only the host or the engine did.

        Its namespace's processes are killed while its leader exits, before the leader is a
        zombie: a command that just died of that is seen with the leader still "alive", so a
        leader that is exiting (``PF_EXITING``) counts as gone too."""
        if self.process is None:
            return False
        if self.process.poll() is not None:
            return True
        handle = self._handle
        if handle is None:
            return False
        exiting = _exiting(self.pid)
        # Read after the look at /proc: a leader still alive then was the process looked at.
        return exiting or not handle.alive()

    async def kill(self) -> None:
        """Kill the init and with it everything in its namespace; idempotent."""
        if self.process is not None and self.process.poll() is None:
            # 0 until bwrap reported its child: a stop during start must not kill(0), which
            # would kill the worker's own process group.
            if self._handle is not None:  # never a later process given the same pid
                self._handle.kill()
            elif self.pid > 0 and not Pidfd.supported():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            await asyncio.to_thread(self.process.wait)
        if self.process is not None:
            for pipe in (self.process.stdout, self.process.stderr):
                if pipe is not None:
                    pipe.close()
        self.process = None
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = []


PF_EXITING = 0x4  # include/linux/sched.h: the task is getting shut down


def _exiting(pid: int) -> bool:
    """Whether process ``pid`` is exiting (the kernel's ``PF_EXITING`` flag, ``/proc/<pid>/stat``
    field 9); False when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return bool(int(fields[6]) & PF_EXITING)
    except (OSError, IndexError, ValueError):
        return False
