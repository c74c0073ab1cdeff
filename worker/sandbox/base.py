"""The sandbox extension point: one base class with its lifecycle hooks, a registry of backends
by name, and the data each backend receives.

Adding a backend means one new module that subclasses :class:`Sandbox` and registers it with
``@sandbox_backend("name")``; the built-in ones live in private packages
(``worker.sandbox._bubblewrap``, registered as ``local``, and ``worker.sandbox._docker``). Every
backend passes the shared contract tests in ``tests/worker/sandbox/test_contract.py``. Nothing outside
``worker/sandbox/`` names a backend: the rest of the worker asks the class.

The lifecycle, as the worker drives it (after Inspect AI's ``SandboxEnvironment``):

* :meth:`Sandbox.reap` once at worker start: remove what an earlier process of the same worker
  (``owner``) left behind a crash, sparing the runs about to resume;
* :meth:`Sandbox.run_cleanup` for each run resumed after a restart;
* per trial: :meth:`Sandbox.task_init` (per-task work such as an image build; cheap once done),
  then ``start()`` ... ``stop()`` of one instance;
* after the agent, before the verifier: :meth:`Sandbox.tamper_evidence` (changes to what the
  verifier runs), part of :meth:`Sandbox.kill_upload_exec`;
* :meth:`Sandbox.reaches_host_sockets` and :meth:`Sandbox.host_address`: how a process in the
  sandbox reaches a service of the worker's host (the model proxy).
"""

from __future__ import annotations

import abc
import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar

from task_sets.task import Task
from worker.core.capped import CopyBudget
from worker.core.failures import SandboxEnd
from worker.core.registry import Registry
from worker.sandbox.archive import ExportReport
from worker.sandbox.resources import DEFAULT_PIDS_LIMIT, LIMITS, HostCapacity
from worker.sandbox.scripts import shell_script
from worker.sandbox.tamper import Change

if TYPE_CHECKING:
    from worker.sandbox.settings import PrebuiltImages

# Where things live inside every sandbox, whatever the backend.
LOGS_DIR = "/logs"
AGENT_LOGS_DIR = "/logs/agent"
VERIFIER_LOGS_DIR = "/logs/verifier"
ARTIFACTS_DIR = "/logs/artifacts"
TESTS_DIR = "/tests"
SOLUTION_DIR = "/solution"
INSTRUCTION_PATH = "/instruction.md"
DEFAULT_WORKDIR = "/root"
_SCRIPTS = "worker.sandbox"
# Root by number: a user *name* is looked up in the sandbox's /etc/passwd, which a root agent can
# rewrite (root renumbered to a uid that can kill nothing, or removed so the exec fails), and so
# is the HOME that lookup gives (a python user site the hardening does not scan).
ROOT_USER = "0:0"
ROOT_ENV = {"HOME": "/root"}


class SandboxError(RuntimeError):
    """The sandbox could not be started or driven (an infrastructure failure, not the agent's)."""


class SandboxTampered(Exception):
    """The agent changed what the verifier runs or loads (:meth:`Sandbox.tamper_evidence`):
    the agent's failure, not the infrastructure's, so not a :class:`SandboxError`."""

    def __init__(self, evidence: list[dict[str, str]]) -> None:
        first = evidence[0] if evidence else {}
        more = f" and {len(evidence) - 1} more" if len(evidence) > 1 else ""
        super().__init__(
            f"the agent changed what the verifier runs: {first.get('path')} "
            f"({first.get('reason')}){more}"
        )
        self.evidence = evidence


class SandboxLimitExceeded(Exception):
    """What ran in the sandbox hit one of its limits before the verifier (the kernel's OOM kill
    under ``memory_mb``, a fork refused at ``pids_limit``): the agent's failure, not the
    infrastructure's, so not a :class:`SandboxError`. ``kind`` is ``"oom"``, ``"pids_limit"`` or
    ``"storage_limit"`` (its writable folders took more disk than the trial's storage cap: the
    local sandbox's watchdog killed everything in it)."""

    def __init__(self, kind: str, events: dict[str, int]) -> None:
        if kind == "oom":
            text = (
                f"the kernel killed {events.get('oom_kills', 0)} process(es) at the task's "
                "memory limit"
            )
        elif kind == "pids_limit":
            text = f"{events.get('pids_max_hits', 0)} fork(s) refused at the trial's process limit"
        else:
            text = (
                f"the sandbox's writable folders took {events.get('storage_used_bytes', 0)} bytes "
                f"of disk, over the trial's storage cap of {events.get('storage_cap_bytes', 0)}: "
                "everything in the sandbox was killed"
            )
        super().__init__(text)
        self.kind = kind
        self.events = events


def limit_exceeded(events: Mapping[str, int] | None) -> SandboxLimitExceeded | None:
    """The exception for ``events`` (what :meth:`Sandbox.limit_events` answered), None when no
    limit was hit; out of memory first (it is what a fork bomb usually meets first too)."""
    if not events:
        return None
    if events.get("oom_kills", 0) > 0:
        return SandboxLimitExceeded("oom", dict(events))
    if events.get("pids_max_hits", 0) > 0:
        return SandboxLimitExceeded("pids_limit", dict(events))
    if events.get("storage_hits", 0) > 0:
        return SandboxLimitExceeded("storage_limit", dict(events))
    return None


class SandboxUnsupported(SandboxError):
    """The task or host needs something this backend cannot give (e.g. "needs the docker environment")."""


@dataclass(frozen=True)
class SandboxConfig:
    """What a backend is told of the task: its environment (the Dockerfile's folder and
    ``task.toml``'s ``[environment]``) and the skills condition, never the task itself (its
    tests and solution are the trial's). A backend needing more declares a subclass as its
    :attr:`Sandbox.config_type`."""

    task_id: str
    # The build context: the Dockerfile, the files it copies, the task's skills/.
    environment_dir: Path
    workdir: str | None  # task.toml's, over the Dockerfile's WORKDIR
    env: Mapping[str, str]  # task.toml's, over the Dockerfile's ENV
    cpus: float
    memory_mb: int
    build_timeout_sec: float
    skills_dir: str  # where the skills go in the sandbox
    with_skills: bool = True

    @property
    def dockerfile(self) -> Path:
        return self.environment_dir / "Dockerfile"

    @property
    def skills_source(self) -> Path | None:
        """The host folder of the task's skills, or None when it ships none."""
        skills = self.environment_dir / "skills"
        return skills if skills.is_dir() else None

    @classmethod
    def from_task(
        cls, task: Task, *, with_skills: bool = True, prebuilt: PrebuiltImages | None = None
    ) -> Self:
        """The config of ``task``; ValueError when the deployment forbids running it here
        (``prebuilt`` requires an image the task lacks: backends that run images check). A
        task with a separate verifier is refused here too when its verifier's sandbox cannot run
        on this backend."""
        if (verifier := task.separate_verifier()) is not None:
            try:
                cls.verifier_config(verifier, prebuilt)
            except ValueError as exc:
                raise ValueError(
                    f"the separate verifier's sandbox ([verifier].environment_mode = "
                    f"'separate'): {exc}"
                ) from None
        return cls(**cls.task_fields(task, with_skills=with_skills, prebuilt=prebuilt))

    @classmethod
    def verifier_config(cls, verifier: Task, prebuilt: PrebuiltImages | None) -> Self:
        """The config of a separate verifier's sandbox (``Task.separate_verifier``): no skills,
        no deployment image of its own (the prebuilt map names the agents' images)."""
        lenient = dataclasses.replace(prebuilt, images={}, required=False) if prebuilt else None
        return cls(**cls.task_fields(verifier, with_skills=False, prebuilt=lenient))

    @classmethod
    def task_fields(
        cls, task: Task, *, with_skills: bool, prebuilt: PrebuiltImages | None
    ) -> dict[str, Any]:
        """The fields of :meth:`from_task` (a subclass adds its own to these)."""
        env = task.config.environment
        return {
            "task_id": task.task_id,
            "environment_dir": task.environment_dir,
            "workdir": env.workdir,
            "env": dict(env.env),
            "cpus": env.cpus,
            "memory_mb": env.memory_mb,
            "build_timeout_sec": env.build_timeout_sec,
            "skills_dir": env.skills_dir,
            "with_skills": with_skills,
        }


@dataclass(frozen=True)
class SandboxSpec:
    """What a backend needs to build one trial's sandbox."""

    config: SandboxConfig  # of the backend's own config_type
    run_id: str
    trial_id: str
    # Host folder the backend may use for its own state (workspace copies, logs, overlays).
    state_dir: Path
    internet: bool = False
    env: Mapping[str, str] = field(default_factory=dict)
    # Who started the sandbox (a worker's identity): a backend that can leave things behind a
    # crash tags them with it, so that the owner's :meth:`Sandbox.reap` finds them.
    owner: str = ""
    # Host files or folders in place before start() returns: sandbox path -> host path, each as
    # upload() would put it (the instruction, the oracle's solution). Given up front so that a
    # backend can bring them in with its setup instead of a round trip each.
    files: Mapping[str, Path] = field(default_factory=dict)
    # Processes and threads the sandbox may hold at once (worker.sandbox.resources).
    pids_limit: int = DEFAULT_PIDS_LIMIT


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
    """One trial's isolated environment; the class methods are the backend's lifecycle hooks."""

    name: ClassVar[str]
    config_type: ClassVar[type[SandboxConfig]] = SandboxConfig

    def __init__(self, spec: SandboxSpec) -> None:
        if not isinstance(spec.config, self.config_type):
            raise TypeError(
                f"{type(self).__name__} takes a {self.config_type.__name__}, "
                f"got {type(spec.config).__name__}"
            )
        self.spec = spec

    @classmethod
    def for_task(
        cls,
        task: Task,
        *,
        run_id: str,
        trial_id: str,
        state_dir: Path,
        with_skills: bool = True,
        prebuilt: PrebuiltImages | None = None,
        **spec: object,
    ) -> Self:
        """A sandbox for one trial of ``task`` (the config made by :attr:`config_type`);
        ``spec`` holds the other :class:`SandboxSpec` fields."""
        config = cls.config_type.from_task(task, with_skills=with_skills, prebuilt=prebuilt)
        return cls(
            SandboxSpec(config, run_id=run_id, trial_id=trial_id, state_dir=state_dir, **spec)  # type: ignore[arg-type]
        )

    @classmethod
    def unbuilt_images(cls, configs: list[SandboxConfig]) -> list[str]:
        """The task ids of ``configs`` whose sandbox would need an image built first (none for
        backends without images). Called before a run starts where builds are not allowed."""
        return []

    # -- lifecycle hooks (class level: no sandbox exists yet) ------------------------------

    @classmethod
    async def task_init(cls, spec: SandboxSpec) -> None:
        """Per-task work before the sandbox of ``spec`` starts (an image build), called before
        each trial: cheap when already done. SandboxError (or SandboxUnsupported) when it fails."""
        return None

    @classmethod
    async def run_cleanup(cls, run_id: str) -> int:
        """Remove whatever sandboxes of ``run_id`` a killed worker left (before the run resumes);
        how many things were removed."""
        return 0

    @classmethod
    async def attempt_cleanup(cls, run_id: str, trial_id: str) -> int:
        """Remove what one attempt's sandbox left after the attempt ended without stopping it
        (the Ray node running it was lost; on an engine several nodes share, its containers
        live on); how many things were removed. Never touches the run's other attempts."""
        return 0

    @classmethod
    async def reap(cls, owner: str, active_run_ids: Collection[str]) -> int:
        """At worker start: remove what sandboxes tagged with ``owner`` (this worker) left behind
        a crash, except what belongs to ``active_run_ids`` (runs about to resume); how many
        things were removed. Never touches what another owner made."""
        return 0

    @classmethod
    def limit_mechanisms(cls) -> dict[str, str | None]:
        """How this backend enforces each limit of :data:`~worker.sandbox.resources.LIMITS`
        (``memory``, ``cpus``, ``pids``) on this host, in a few words; None for a limit it
        cannot enforce here (the run says so once at its start)."""
        return dict.fromkeys(LIMITS)

    @classmethod
    async def host_capacity(cls) -> HostCapacity:
        """The most one sandbox can be given here: requests above it are capped."""
        return HostCapacity.of_this_host()

    async def limit_events(self) -> dict[str, int] | None:
        """How often what ran in the sandbox hit its limits so far: ``oom_kills`` (processes
        the kernel killed at the memory limit) and ``pids_max_hits`` (forks refused at the
        process limit), and where a storage watchdog runs ``storage_hits`` (times it killed the
        sandbox past the storage cap, with ``storage_used_bytes`` and ``storage_cap_bytes``);
        None when this backend cannot tell. SandboxError when it cannot look."""
        return None

    @classmethod
    def reaches_host_sockets(cls) -> bool:
        """Whether a process in the sandbox can reach a unix socket in a host folder the worker
        lends it (:meth:`lend`), so a relay inside reaches a host service without any network;
        else it needs ``spec.internet`` and :meth:`host_address`."""
        return False

    async def lend(self, host_folder: Path, sandbox_path: str) -> None:
        """Show a host folder of the worker's own (a service's socket) read-only at
        ``sandbox_path`` to processes started from now on. Backends that answer
        :meth:`reaches_host_sockets` with True implement it."""
        raise SandboxUnsupported(f"{type(self).__name__} cannot lend host folders")

    @classmethod
    async def host_address(cls) -> str:
        """The worker host's address as a sandbox with a network reaches it."""
        return "127.0.0.1"

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

    async def tamper_evidence(self) -> list[dict[str, str]] | None:
        """Every change the agent made to what the verifier executes or loads
        (:mod:`worker.sandbox.tamper`), one ``{"path", "change", "reason"}`` each, ``[]`` when
        there is none; None when this backend cannot tell (its system folders may be read-only,
        say). :meth:`kill_upload_exec` asks it once every process is dead, so that nothing
        changes after the look. SandboxError when it cannot look."""
        return None

    async def work_changes(self) -> list[Change] | None:
        """Everything changed in the sandbox since it was ready for the agent (added, modified
        or deleted, anywhere it can be written), as it was at the last :meth:`tamper_evidence`
        look (the verifier's start, every process dead); None when this backend cannot tell
        (then a pass is graded in the agent's own sandbox only: docs/sandboxes.md, "Work
        product"). SandboxError when it cannot look."""
        return None

    async def export_changes(
        self,
        paths: Sequence[str],
        archive: Path,
        *,
        max_bytes: int,
        link_ok: Callable[[str, str], bool] = lambda path, target: True,
    ) -> ExportReport:
        """Write a tar of ``paths`` as they are now to the host file ``archive``: each entry
        itself (no recursion, links as links), read from outside the sandbox so that nothing in
        it takes part; called after the tamper look while nothing runs. Backends whose
        :meth:`work_changes` answers implement it."""
        raise SandboxUnsupported(f"{type(self).__name__} cannot export its changes")

    async def link_targets(self, paths: Sequence[str]) -> dict[str, str] | None:
        """Which of ``paths`` are symbolic links, with their targets, looked at from outside
        the sandbox like :meth:`export_changes`; None when this backend cannot tell cheaply."""
        return None

    async def apply_changes(self, archive: Path, deleted: Sequence[str]) -> ExecResult:
        """On a fresh sandbox, before anything ran in it: remove ``deleted``, then unpack
        ``archive`` (:meth:`export_changes`' tar) at ``/`` as root, keeping owners and modes.
        Its exit code and messages (a place this backend cannot write, say) are returned."""
        staged = f"/tmp/.skillsbench-work-{self.spec.trial_id[-12:]}.tar"
        await self.upload(archive, staged)
        listing = "".join(f"{p}\n" for p in deleted if "\n" not in p)
        return await self.exec(
            ["/bin/sh", "-c", shell_script(_SCRIPTS, "apply.sh"), "sh", staged],
            cwd="/",
            env=ROOT_ENV,
            user=ROOT_USER,
            timeout_sec=600,
            stdin=listing.encode("utf-8", "surrogateescape"),
        )

    async def trust_current_changes(self) -> None:
        """What differs from the image now is the harness's doing, not the agent's (an agent's
        ``install_cmd``, run as root before the agent sees the task): :meth:`tamper_evidence`
        does not count it while it stays as it is."""
        return None

    @abc.abstractmethod
    async def kill_processes(self) -> None:
        """Kill every process started in the sandbox (the trial calls it before verifying).

        Files stay; later ``exec`` calls work. Defeats background processes left by the agent.
        """

    async def ended(self) -> SandboxEnd | None:
        """Asked after a SandboxError: None while the sandbox still runs (or when the backend
        cannot tell), else who ended it. A backend answers INSIDE only when it knows that what
        ran in the sandbox ended it; any doubt is OUTSIDE (an infrastructure failure)."""
        return None

    async def kill_upload_exec(
        self,
        command: str | Sequence[str],
        *,
        upload: Path,
        target: str,
        stdin: bytes | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout_sec: float | None = None,
        after_gate: Callable[[], Awaitable[None]] | None = None,
    ) -> ExecResult:
        """:meth:`kill_processes`, :meth:`limit_events` (:class:`SandboxLimitExceeded` when a
        limit was hit), :meth:`tamper_evidence` (:class:`SandboxTampered` when there
        is any: nothing is uploaded or run), :meth:`upload` of ``upload`` to ``target``, then
        :meth:`exec` of ``command`` as root (uid 0, HOME=/root unless ``env`` says otherwise): the verifier's
        first step, in this order so that nothing the agent left running can touch what is
        uploaded. ``after_gate`` is awaited once the tamper look passed, before the upload,
        while nothing runs (the trial takes the agent's work product there).

        One call so that a backend with costly round trips can fuse the three. A fused upload
        may *replace* ``target`` instead of merging into it; then every entry of the old
        ``target`` that the upload does not replace, and every link there, is reported on stdout
        as a ``removed <path>`` line (the hardening script's format) before ``command`` runs.
        """
        await self.kill_processes()
        if exceeded := limit_exceeded(await self.limit_events()):
            raise exceeded
        if evidence := await self.tamper_evidence():
            raise SandboxTampered(evidence)
        if after_gate is not None:
            await after_gate()
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


DEFAULT_BACKEND = "local"  # the bubblewrap sandbox: needs no daemon
S = TypeVar("S", bound=type[Sandbox])
# The built-in backends (worker/core/registry.py): imported when first named.
BACKENDS: Registry[type[Sandbox]] = Registry(
    "sandbox backend",
    {
        "local": "worker.sandbox._bubblewrap.sandbox:BubblewrapSandbox",
        "docker": "worker.sandbox._docker.sandbox:DockerSandbox",
    },
)


def sandbox_backend(name: str) -> Callable[[S], S]:
    """Register a sandbox class under ``name`` (as used by ``--environment``); a built-in's own
    entry is already in :data:`BACKENDS`, another class under a taken name is refused."""

    def register(cls: S) -> S:
        BACKENDS.register(name, cls)
        cls.name = name
        return cls

    return register


def unregister_backend(name: str) -> None:
    """Drop ``name`` from the registry (for backends registered by tests)."""
    BACKENDS.unregister(name)


def sandbox_class(name: str) -> type[Sandbox]:
    """The backend called ``name``; a built-in's module is imported on first use."""
    try:
        return BACKENDS.get(name)
    except ValueError:
        raise ValueError(
            f"unknown environment {name!r} (known: {', '.join(BACKENDS.names())})"
        ) from None


def backend_names() -> list[str]:
    """Every backend (what ``--environment`` accepts), sorted."""
    return BACKENDS.names()
