"""The sandbox extension point: one protocol, a registry, and the data each backend receives.

Adding a backend means one new module that subclasses :class:`Sandbox` and registers it with
``@sandbox_backend("name")``. Every backend passes the shared contract tests in
``tests/sandbox/test_contract.py``.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, TypeVar

from task_sets.task import Task
from worker.capped import CopyBudget

# Where things live inside every sandbox, whatever the backend.
LOGS_DIR = "/logs"
AGENT_LOGS_DIR = "/logs/agent"
VERIFIER_LOGS_DIR = "/logs/verifier"
ARTIFACTS_DIR = "/logs/artifacts"
TESTS_DIR = "/tests"
SOLUTION_DIR = "/solution"
INSTRUCTION_PATH = "/instruction.md"
DEFAULT_WORKDIR = "/root"
# Root by number: a user *name* is looked up in the sandbox's /etc/passwd, which a root agent can
# rewrite (root renumbered to a uid that can kill nothing, or removed so the exec fails), and so
# is the HOME that lookup gives (a python user site the hardening does not scan).
ROOT_USER = "0:0"
ROOT_ENV = {"HOME": "/root"}


class SandboxError(RuntimeError):
    """The sandbox could not be started or driven (an infrastructure failure, not the agent's)."""


class SandboxUnsupported(SandboxError):
    """The task or host needs something this backend cannot give (e.g. "needs the docker environment")."""


@dataclass(frozen=True)
class SandboxSpec:
    """What a backend needs to build one trial's sandbox."""

    task: Task
    run_id: str
    trial_id: str
    # Host folder the backend may use for its own state (workspace copies, logs, overlays).
    state_dir: Path
    with_skills: bool = True
    internet: bool = False
    env: Mapping[str, str] = field(default_factory=dict)
    # Override of the image to use (docker: a digest-pinned prebuilt image).
    image: str | None = None
    # Host files or folders in place before start() returns: sandbox path -> host path, each as
    # upload() would put it (the instruction, the oracle's solution). Given up front so that a
    # backend can bring them in with its setup instead of a round trip each.
    files: Mapping[str, Path] = field(default_factory=dict)


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False


class SandboxProcess(abc.ABC):
    """A long-running process in the sandbox with streaming stdio (for ACP agents over stdio)."""

    stdin: asyncio.StreamWriter
    stdout: asyncio.StreamReader
    stderr: asyncio.StreamReader

    @abc.abstractmethod
    async def wait(self) -> int:
        """Wait for exit and return the exit code."""

    @abc.abstractmethod
    async def kill(self) -> None:
        """Kill the process and everything it started; idempotent."""

    @property
    @abc.abstractmethod
    def returncode(self) -> int | None: ...


class Sandbox(abc.ABC):
    """One trial's isolated environment."""

    name: ClassVar[str]

    def __init__(self, spec: SandboxSpec) -> None:
        self.spec = spec

    @property
    @abc.abstractmethod
    def workdir(self) -> str:
        """The agent's working folder inside the sandbox (the Dockerfile's WORKDIR, else /root)."""

    @abc.abstractmethod
    async def start(self) -> None:
        """Bring the sandbox up, ``spec.files`` included; raise SandboxError (or
        SandboxUnsupported) when it cannot."""

    async def _upload_spec_files(self) -> None:
        """``spec.files`` one upload each: what a backend's start() calls unless it does better."""
        for target, source in self.spec.files.items():
            await self.upload(source, target)

    @abc.abstractmethod
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
        """Run a command to completion. A string runs under ``sh -c``.

        The environment is explicit: a clean ``PATH``/``HOME``, then the image's ``ENV``, then
        ``spec.env``, then ``env``. ``cwd`` defaults to :attr:`workdir`. At ``timeout_sec`` the
        command and everything it started are killed and the result has ``timed_out=True`` and
        exit code 124. ``max_output_bytes`` bounds each of stdout and stderr (``truncated=True``
        when output was dropped).
        """

    @abc.abstractmethod
    async def open_process(
        self,
        command: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        user: str | None = None,
    ) -> SandboxProcess:
        """Start a long-running process with streaming stdin/stdout/stderr."""

    @abc.abstractmethod
    async def upload(self, host_path: Path, sandbox_path: str) -> None:
        """Copy a host file or folder to ``sandbox_path`` (created with parents).

        A folder's contents are merged into ``sandbox_path``; a file becomes ``sandbox_path``.
        """

    @abc.abstractmethod
    async def download(
        self, sandbox_path: str, host_path: Path, *, budget: CopyBudget | None = None
    ) -> None:
        """Copy a sandbox file or folder to ``host_path``.

        Only regular files and folders are copied: symbolic links (and devices, FIFOs) are
        skipped, and a ``sandbox_path`` that is itself a link raises SandboxError, so a planted
        link can never make the host read one of its own files. Files go through ``budget``
        (default: the default caps of :class:`worker.limits.OutputCaps`): never more than its
        caps are read or written, whatever the files' apparent sizes (sparse files too).
        """

    @abc.abstractmethod
    async def kill_processes(self) -> None:
        """Kill every process started in the sandbox (the trial calls it before verifying).

        Files stay; later ``exec`` calls work. Defeats background processes left by the agent.
        """

    async def kill_upload_exec(
        self,
        command: str,
        *,
        upload: Path,
        target: str,
        stdin: bytes | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout_sec: float | None = None,
    ) -> ExecResult:
        """:meth:`kill_processes`, :meth:`upload` of ``upload`` to ``target``, then :meth:`exec`
        of ``command`` as root (uid 0, HOME=/root unless ``env`` says otherwise): the verifier's
        first step, in this order so that nothing the agent left running can touch what is
        uploaded.

        One call so that a backend with costly round trips can fuse the three. A fused upload
        may *replace* ``target`` instead of merging into it; then every entry of the old
        ``target`` that the upload does not replace, and every link there, is reported on stdout
        as a ``removed <path>`` line (the hardening script's format) before ``command`` runs.
        """
        await self.kill_processes()
        await self.upload(upload, target)
        return await self.exec(
            command,
            cwd=cwd,
            env={**ROOT_ENV, **(env or {})},
            user=ROOT_USER,
            timeout_sec=timeout_sec,
            stdin=stdin,
        )

    @abc.abstractmethod
    async def stop(self) -> None:
        """Kill every process and release everything; idempotent and safe after a failed start."""

    async def __aenter__(self) -> Sandbox:
        try:
            await self.start()
        except BaseException:
            await self.stop()  # a failed start may have made a container or processes
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


_REGISTRY: dict[str, type[Sandbox]] = {}
S = TypeVar("S", bound=type[Sandbox])


def sandbox_backend(name: str) -> Callable[[S], S]:
    """Register a sandbox class under ``name`` (as used by ``--environment``)."""

    def register(cls: S) -> S:
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return register


def sandbox_class(name: str) -> type[Sandbox]:
    """The registered backend called ``name``; imports the built-in backends on first use."""
    _load_builtin_backends()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise ValueError(f"unknown environment {name!r} (known: {known})") from None


def _load_builtin_backends() -> None:
    import importlib

    for module in ("worker.sandbox.local", "worker.sandbox.docker"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
