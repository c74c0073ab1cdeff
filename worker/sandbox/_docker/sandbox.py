"""The ``docker`` sandbox: one container per trial through the Docker Engine API (docker SDK).

Blocking SDK calls run in threads; exec sessions stream on the event loop
(:mod:`~worker.sandbox._docker.exec_stream`); files move as tar streams
(:mod:`~worker.sandbox._docker.transfer`). Everything created carries ``skillsbench.managed=true``,
``skillsbench.run`` and ``skillsbench.trial`` labels, which the reaper
(:mod:`~worker.sandbox._docker.containers`) sweeps at worker start (containers and networks; task
images are a cache it leaves).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import posixpath
import secrets
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from task_sets.task import Task
from worker.core.capped import CopyBudget
from worker.sandbox._docker import (
    changes,
    containers,
    exec_stream,
    images,
    init_shell,
    layer,
    transfer,
)
from worker.sandbox._docker.client import (
    LABEL_BUILT,
    LABEL_MANAGED,
    LABEL_OWNER,
    LABEL_RUN,
    LABEL_TRIAL,
    docker_client,
)
from worker.sandbox._docker.client import errors as docker_errors
from worker.sandbox._docker.exec_stream import Session
from worker.sandbox._output import TIMEOUT_EXIT_CODE, OutputBuffer, drain
from worker.sandbox.archive import ExportReport, HostEntry, link_targets, write_archive
from worker.sandbox.base import (
    AGENT_LOGS_DIR,
    ARTIFACTS_DIR,
    DEFAULT_WORKDIR,
    ROOT_ENV,
    ROOT_USER,
    VERIFIER_LOGS_DIR,
    ExecResult,
    Sandbox,
    SandboxConfig,
    SandboxEnd,
    SandboxError,
    SandboxProcess,
    SandboxSpec,
    SandboxTampered,
    limit_exceeded,
    sandbox_backend,
)
from worker.sandbox.errors import ImageBuildFailed, SandboxConfigRefused
from worker.sandbox.resources import HostCapacity
from worker.sandbox.scripts import shell_script
from worker.sandbox.tamper import Change, Tampering

if TYPE_CHECKING:
    from worker.sandbox.settings import PrebuiltImages

log = logging.getLogger(__name__)

_SCRIPTS = "worker.sandbox._docker.scripts"
# What stage.sh prints on stderr (exit 125) when it cannot place the upload.
_STAGE_FAILED = "skillsbench-stage-failed:"


def _unlistable(detail: str) -> dict[str, str]:
    return {
        "path": "(the container's files)",
        "change": "added",
        "reason": f"the agent left paths no tool can list or check ({detail})",
    }


def _init() -> str:
    """PID 1 of the container: nothing inside can end it, and it never exits by itself."""
    return shell_script(_SCRIPTS, "init.sh")


def _kill_all() -> str:
    """Stop, then kill, every process but the init."""
    return shell_script(_SCRIPTS, "kill_all.sh")


def _limit_counts() -> str:
    """Print the container's limit counters (limits.sh): ``<oom kills> <forks refused>``."""
    return shell_script(_SCRIPTS, "limits.sh") + "\nlimit_counts\n"


def _kill_upload_exec() -> str:
    """``kill_upload_exec`` in one exec: kill_all.sh, gate.sh (the line :data:`_GATE_MARK` with
    the container's limit counters once every process is dead; the stdin comes only after the
    host checked them and looked for tampering), then
    stage.sh (arguments: target, stage folder, the command's argv; stdin:
    :func:`transfer.stage_archive`)."""
    return shell_script(_SCRIPTS, "kill_all.sh", "limits.sh", "gate.sh", "stage.sh")


_GATE_MARK = b"skillsbench-killed "  # gate.sh's, then the two counters of limits.sh
# A stopped build's thread ends as soon as its connection is shut; waited for at most this long.
BUILD_STOP_SEC = 60.0
# A container killed from outside ends its execs (exit 137) a moment before the engine marks it
# stopped: after an exec that ended by a signal, ended() looks again for this long.
END_SETTLE_SEC = 5.0
# The init's user: any uid but root's (init_shell.py says why).
INIT_USER = "65534:65534"


def _create_and_start(client: Any, image: str, kwargs: dict[str, Any]) -> Any:
    """Create the container, plant its init's shell, start it (blocking); on a failure, remove
    what was made."""
    container = client.containers.create(image, **kwargs)
    try:
        init_shell.plant_init_shell(client, container.id, container.attrs.get("Image") or image)
        container.start()
    except BaseException:
        with contextlib.suppress(Exception):
            container.remove(force=True, v=True)
        raise
    return container


def _counters(text: str) -> dict[str, int] | None:
    """limits.sh's ``<oom kills> <forks refused>``; None when it is not that."""
    parts = text.split()
    if len(parts) != 2 or not all(part.isdigit() for part in parts):
        return None
    return {"oom_kills": int(parts[0]), "pids_max_hits": int(parts[1])}


class DockerProcess(SandboxProcess):
    def __init__(self, sandbox: DockerSandbox, session: Session) -> None:
        self._sandbox = sandbox
        self._session = session
        self.stdin = session.writer
        self.stdout = session.stdout
        self.stderr = session.stderr
        self._code: int | None = None

    async def wait(self) -> int:
        if self._code is None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._session.pump)
            if asyncio.current_task() is not None and asyncio.current_task().cancelling():  # type: ignore[union-attr]
                raise asyncio.CancelledError
            self._code = await exec_stream.exit_code(self._session.exec_id)
            self._session.close()
            self._sandbox._sessions.discard(self._session)
            self._sandbox._exited(self._code)
        return self._code

    async def kill(self) -> None:
        if self._code is not None:
            return
        await self._sandbox._kill_group(self._session)
        self._session.close()
        with contextlib.suppress(asyncio.CancelledError):
            await self._session.pump
        self._code = await exec_stream.exit_code(self._session.exec_id, wait=5.0)
        self._sandbox._sessions.discard(self._session)

    @property
    def returncode(self) -> int | None:
        return self._code


@dataclass(frozen=True)
class DockerConfig(SandboxConfig):
    """With ``image``: a prebuilt image (digest-pinned) instead of one built from the task's
    Dockerfile. ``base_map``: ``(FROM reference, local image)`` substitutions for the build."""

    image: str | None = None
    base_map: tuple[tuple[str, str], ...] = ()
    # The task's own prebuilt image (Harbor's [environment].docker_image, through the base map):
    # run as it is, no build; ``image`` (the deployment's) wins over it.
    task_image: str | None = None

    @classmethod
    def task_fields(
        cls, task: Task, *, with_skills: bool, prebuilt: PrebuiltImages | None
    ) -> dict[str, Any]:
        fields = super().task_fields(task, with_skills=with_skills, prebuilt=prebuilt)
        image = prebuilt.image_for(task.task_id) if prebuilt is not None else None
        bases = tuple(sorted(prebuilt.bases.items())) if prebuilt is not None else ()
        task_image = task.docker_image
        if task_image is not None:
            task_image = dict(bases).get(task_image, task_image)
        return {**fields, "image": image, "base_map": bases, "task_image": task_image}


async def _stop_build(build: asyncio.Future[None], stop: images.BuildStop) -> None:
    """Stop a build and wait until its thread is done (the engine's build ends with it), even
    while being cancelled: a trial's slot is never free while its build still runs."""
    stop.stop()
    _, cancelled = await exec_stream.finish(asyncio.wait({build}, timeout=BUILD_STOP_SEC))
    if not build.done():
        log.warning("an image build did not stop within %gs of its stop", BUILD_STOP_SEC)
    elif not build.cancelled():
        build.exception()  # retrieved: BuildStopped, or what ended it first
    if cancelled:
        raise asyncio.CancelledError


def _labels(spec: SandboxSpec) -> dict[str, str]:
    labels = {LABEL_MANAGED: "true", LABEL_RUN: spec.run_id, LABEL_TRIAL: spec.trial_id}
    if spec.owner:
        labels[LABEL_OWNER] = spec.owner
    return labels


@sandbox_backend("docker")
class DockerSandbox(Sandbox):
    """One container per trial; see the module docstring."""

    config_type = DockerConfig
    # Images task_init resolved, by trial id, for start() to take.
    _prepared: ClassVar[dict[str, str]] = {}

    def __init__(self, spec: SandboxSpec) -> None:
        super().__init__(spec)
        self._container_id: str | None = None
        self.config: DockerConfig = spec.config  # type: ignore[assignment]
        self._workdir = self.config.workdir or DEFAULT_WORKDIR
        self._exec_user = ROOT_USER  # the image's USER, once started
        self._sessions: set[Session] = set()
        self._has_tar = False  # the image has tar: kill_upload_exec can be one exec
        self._started = False
        self._stopped = False
        self.image: str | None = None
        self._trusted: changes.Trusted = {}  # what trust_current_changes() forgave
        self._work_changes: list[Change] | None = None  # at the last tamper look
        # The container's layer folders on this host, looked up once (None: not readable here).
        self._layers: layer.Layers | Literal[False] | None = False
        self._killed_counters: dict[str, int] | None = None  # limits.sh's, read at the last kill
        self._signalled_at: float | None = None  # when an exec last ended by a signal

    @property
    def workdir(self) -> str:
        return self._workdir

    @property
    def labels(self) -> dict[str, str]:
        return _labels(self.spec)

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        if self._started:
            raise SandboxError("sandbox already started")
        self._started = True
        client = await asyncio.to_thread(docker_client)
        prepared = self._prepared.pop(self.spec.trial_id, None)
        self.image = prepared or await self._image(self.spec)
        env_config = self.config
        image_workdir, image_user = await asyncio.to_thread(
            images.image_defaults, client, self.image
        )
        self._workdir = env_config.workdir or image_workdir or DEFAULT_WORKDIR
        self._exec_user = image_user or ROOT_USER
        environment = {**env_config.env, **self.spec.env}
        kwargs: dict[str, Any] = {
            "entrypoint": [init_shell.INIT_SHELL, "-c", _init(), "skillsbench-init"],
            "command": [],
            "stdin_open": True,  # the init's fallback blocks reading it (see init.sh)
            # Not root's, and not dumpable: no agent can ptrace the init, nor read or write its
            # memory, to make it exit as if killed from outside (init_shell.py).
            "user": INIT_USER,
            "labels": self.labels,
            "environment": environment,
            "nano_cpus": int(env_config.cpus * 1e9),
            "mem_limit": f"{env_config.memory_mb}m",
            "pids_limit": self.spec.pids_limit,
            "working_dir": self._workdir,
        }
        if not self.spec.internet:
            kwargs["network_mode"] = "none"
        if self._stopped:
            raise SandboxError("sandbox stopped while starting")
        try:
            creating = asyncio.ensure_future(
                asyncio.to_thread(_create_and_start, client, self.image, kwargs)
            )
            try:
                container = await asyncio.shield(creating)
            except asyncio.CancelledError:
                # Cancelled mid-create: wait for the engine's answer and remove what it made.
                with contextlib.suppress(Exception):
                    made = await creating
                    await asyncio.to_thread(made.remove, force=True, v=True)
                raise
        except docker_errors().DockerException as exc:
            if isinstance(exc, docker_errors().APIError) and exc.is_client_error():
                # 4xx: the engine refuses this task's config (e.g. more CPUs than the host has)
                raise SandboxConfigRefused(f"container failed to start: {exc}") from None
            raise SandboxError(f"container failed to start: {exc}") from None
        self._container_id = container.id
        dirs = " ".join([AGENT_LOGS_DIR, VERIFIER_LOGS_DIR, ARTIFACTS_DIR, self._workdir])
        logs = " ".join([AGENT_LOGS_DIR, VERIFIER_LOGS_DIR, ARTIFACTS_DIR])
        # One exec sets up the folders and (with tar in the image) unpacks spec.files from its
        # stdin: no put_archive round trip per file.
        wanted = {**self.spec.files, **self._skills_files()}
        files = await asyncio.to_thread(transfer.files_archive, wanted) if wanted else None
        unpack = " && tar -xf - -C /" if files else ""
        ready = await self.exec(
            f"mkdir -p {dirs} && chmod 777 {logs} && "
            f"if command -v tar >/dev/null 2>&1; then echo tar{unpack}; fi",
            user=ROOT_USER,  # whatever USER the image ends with
            timeout_sec=60,
            stdin=files,
        )
        if ready.exit_code != 0:
            detail = ready.stderr.strip() or ready.stdout.strip()
            raise SandboxError(f"container setup failed: {detail}")
        self._has_tar = "tar" in ready.stdout.split()
        if files and not self._has_tar:
            await self._upload_spec_files()
            for target, source in self._skills_files().items():
                await self.upload(source, target)

    def _skills_files(self) -> dict[str, Path]:
        """The task's skills, placed at start when its own prebuilt image runs (a built image
        has them copied in by the build)."""
        config = self.config
        skills = config.environment_dir / "skills"
        if config.image or not config.task_image or not config.with_skills or not skills.is_dir():
            return {}
        return {config.skills_dir: skills}

    @classmethod
    async def _image(cls, spec: SandboxSpec) -> str:
        """The image of ``spec``'s container: the prebuilt one (pulled when missing), else the
        task's own, built unless an image with its content tag exists."""
        config = spec.config
        assert isinstance(config, DockerConfig)
        client = await asyncio.to_thread(docker_client)
        if config.image or config.task_image:
            ref = config.image or config.task_image
            assert ref is not None
            return await asyncio.to_thread(images.ensure_prebuilt, client, ref)
        try:
            tag = await asyncio.to_thread(
                images.local_build_tag,
                client,
                config.task_id,
                config.environment_dir,
                config.with_skills,
                config.skills_dir,
                dict(config.base_map),
            )
        except OSError as exc:
            raise SandboxError(f"task {config.task_id}: cannot read environment/: {exc}") from None
        labels = {**_labels(spec), LABEL_BUILT: "true"}
        stop = images.BuildStop()
        build = asyncio.ensure_future(
            asyncio.to_thread(
                images.build_image,
                client,
                config.environment_dir,
                tag,
                labels,
                config.with_skills,
                config.skills_dir,
                dict(config.base_map),
                stop,
            )
        )
        try:
            await asyncio.wait_for(asyncio.shield(build), config.build_timeout_sec)
        except TimeoutError:
            await _stop_build(build, stop)
            raise ImageBuildFailed(
                f"task {config.task_id}: image build timed out after "
                f"{config.build_timeout_sec:g}s (the build was stopped)"
            ) from None
        except asyncio.CancelledError:
            await _stop_build(build, stop)
            raise
        return tag

    # -- lifecycle hooks -------------------------------------------------------------------

    @classmethod
    def unbuilt_images(cls, configs: list[SandboxConfig]) -> list[str]:
        wanted = [
            (c.task_id, c.environment_dir, c.with_skills, c.skills_dir, dict(c.base_map))
            for c in configs
            if isinstance(c, DockerConfig) and not c.image and not c.task_image
        ]
        return images.unbuilt_tasks(docker_client(), wanted) if wanted else []

    @classmethod
    async def task_init(cls, spec: SandboxSpec) -> None:
        """Build (or pull) the image now; start() then uses it without asking the engine again."""
        cls._prepared[spec.trial_id] = await cls._image(spec)

    @classmethod
    async def run_cleanup(cls, run_id: str) -> int:
        client = await asyncio.to_thread(docker_client)
        return await asyncio.to_thread(containers.remove_containers, client, run_id, None, None)

    @classmethod
    async def attempt_cleanup(cls, run_id: str, trial_id: str) -> int:
        client = await asyncio.to_thread(docker_client)
        return await asyncio.to_thread(containers.remove_containers, client, run_id, trial_id, None)

    @classmethod
    async def reap(cls, owner: str, active_run_ids: Collection[str]) -> int:
        report = await containers.reap_stale(active_run_ids, owner=owner)
        return len(report.containers) + len(report.networks)

    @classmethod
    def limit_mechanisms(cls) -> dict[str, str | None]:
        return {
            "memory": "docker mem_limit (cgroup)",
            "cpus": "docker nano_cpus (cgroup)",
            "pids": "docker pids_limit (cgroup)",
        }

    @classmethod
    async def host_capacity(cls) -> HostCapacity:
        """The engine's CPUs and memory (``docker info``: NCPU, MemTotal), asked once."""
        client = await asyncio.to_thread(docker_client)
        return await asyncio.to_thread(containers.engine_capacity, client)

    async def limit_events(self) -> dict[str, int] | None:
        """The container's cgroup counters, read inside it (limits.sh). When no exec can start
        (every process slot taken), the process cap is raised by a few slots for one look and
        put back; failing that, what the engine's stats and state tell (a container at its
        process cap, or one its memory limit killed)."""
        container = self._container()
        counters, self._killed_counters = self._killed_counters, None
        if counters is None:
            counters = await self._read_counters()
        if counters is None:
            client = await asyncio.to_thread(docker_client)
            limit = self.spec.pids_limit
            if await asyncio.to_thread(containers.set_pids_limit, client, container, limit + 64):
                try:
                    counters = await self._read_counters()
                finally:
                    await asyncio.to_thread(containers.set_pids_limit, client, container, limit)
            if counters is None:
                counters = await asyncio.to_thread(containers.limit_state, client, container)
        return counters

    async def _read_counters(self) -> dict[str, int] | None:
        try:
            result = await self.exec(["sh", "-c", _limit_counts()], user=ROOT_USER, timeout_sec=30)
        except SandboxError:
            return None
        return _counters(result.stdout)

    @classmethod
    async def host_address(cls) -> str:
        """The bridge network's gateway: where a container reaches the worker's host."""
        client = await asyncio.to_thread(docker_client)
        return await asyncio.to_thread(containers.bridge_gateway, client)

    async def kill_processes(self) -> None:
        if self._container_id is not None and not self._stopped:
            # The limit counters come with the kill, for limit_events() right after (the
            # verifier's start without tar): no exec of their own.
            result = await self.exec(
                ["sh", "-c", _kill_all() + "\n" + _limit_counts()],
                user=ROOT_USER,
                timeout_sec=30,
            )
            self._killed_counters = _counters(result.stdout)
        await self._close_sessions()

    async def ended(self) -> SandboxEnd | None:
        if self._container_id is None or self._stopped:
            return None
        client = await asyncio.to_thread(docker_client)
        container = self._container_id
        end = await asyncio.to_thread(containers.container_end, client, container)
        loop = asyncio.get_running_loop()
        # An exec that just died of a signal: the kill of the whole container, not yet in the
        # engine's state, or only the command's own (then the container runs on).
        settle = None if self._signalled_at is None else self._signalled_at + END_SETTLE_SEC
        while end is None and settle is not None and loop.time() < settle:
            await asyncio.sleep(0.1)
            end = await asyncio.to_thread(containers.container_end, client, container)
        return end

    def _exited(self, code: int) -> None:
        """Note an exec's exit code: one that ended by a signal (128+n) makes ended() settle."""
        if code > 128:
            self._signalled_at = asyncio.get_running_loop().time()

    async def tamper_evidence(self) -> list[dict[str, str]] | None:
        """What differs from the image (the container's layer, else ``docker diff``), by the
        rules."""
        container = self._container()
        client = await asyncio.to_thread(docker_client)
        found = await asyncio.to_thread(self._tampering, client, container)
        return [item.as_dict() for item in found]

    def _tampering(self, client: Any, container: str) -> list[Tampering]:
        layers = self._layer_folders(client)
        try:
            listed = changes.container_changes(client, container, layers)
        except OSError as exc:
            if exc.errno not in changes.UNLISTABLE_ERRNOS:
                raise SandboxError(f"cannot list the container's changes: {exc}") from None
            raise SandboxTampered([_unlistable(exc.strerror or str(exc))]) from None
        except docker_errors().DockerException as exc:
            text = str(exc)
            if any(m in text.lower() for m in changes.UNLISTABLE_MESSAGES):
                raise SandboxTampered([_unlistable(text[-200:])]) from None
            raise SandboxError(f"cannot list the container's changes: {exc}") from None
        self._work_changes = listed
        return changes.tampering(client, container, self._trusted, layers, listed)

    async def work_changes(self) -> list[Change] | None:
        """The container's changes against its image at the last tamper look (the harness's
        own, such as the logs folders and the skills, are among them: the caller sorts)."""
        return self._work_changes

    async def link_targets(self, paths: Sequence[str]) -> dict[str, str] | None:
        client = await asyncio.to_thread(docker_client)
        layers = self._layer_folders(client)
        if layers is None:
            return None
        entries = [HostEntry(p, layers.upper, p.lstrip("/")) for p in paths]
        return await asyncio.to_thread(link_targets, entries)

    async def export_changes(
        self,
        paths: Sequence[str],
        archive: Path,
        *,
        max_bytes: int,
        link_ok: Callable[[str, str], bool] = lambda path, target: True,
    ) -> ExportReport:
        """From the container's writable layer on this host (every changed path has its
        whole file there); where the worker cannot read it, through the engine's archive
        endpoint, one path at a time."""
        client = await asyncio.to_thread(docker_client)
        layers = self._layer_folders(client)
        if layers is not None:
            entries = [HostEntry(p, layers.upper, p.lstrip("/")) for p in paths]
            return await asyncio.to_thread(
                write_archive, entries, archive, max_bytes=max_bytes, link_ok=link_ok
            )
        container = self._container()
        return await asyncio.to_thread(
            transfer.export_entries, client, container, paths, archive, max_bytes, link_ok
        )

    async def trust_current_changes(self) -> None:
        client = await asyncio.to_thread(docker_client)
        self._trusted = await asyncio.to_thread(self._trust, client, self._container())

    def _trust(self, client: Any, container: str) -> changes.Trusted:
        return changes.trust(client, container, self._layer_folders(client))

    def _layer_folders(self, client: Any) -> layer.Layers | None:
        """(Blocking.) The container's layer folders on this host, looked up once."""
        if self._layers is False:
            try:
                self._layers = changes.container_layers(client, self._container())
            except docker_errors().DockerException as exc:
                raise SandboxError(f"cannot inspect the container: {exc}") from None
        return self._layers

    async def _close_sessions(self) -> None:
        """After a kill-all: let the killed sessions' pumps finish, then drop them."""
        sessions = list(self._sessions)
        if sessions:
            await asyncio.wait([s.pump for s in sessions], timeout=5)
        for session in sessions:
            session.close()

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
        """One exec instead of three round trips (kill-all exec, ``put_archive``, exec): the
        files and ``stdin`` travel as a tar on the exec's stdin; ``target`` is replaced."""
        if not self._has_tar:
            return await super().kill_upload_exec(
                command,
                upload=upload,
                target=target,
                stdin=stdin,
                cwd=cwd,
                env=env,
                timeout_sec=timeout_sec,
                after_gate=after_gate,
            )
        if not target.startswith("/") or posixpath.normpath(target) == "/":
            raise SandboxError(f"{target}: the upload target must be an absolute path below /")
        if not upload.exists():
            raise SandboxError(f"upload: {upload} does not exist")
        archive = await asyncio.to_thread(transfer.stage_archive, upload, stdin or b"")
        stage = f"/.skillsbench-stage-{secrets.token_hex(8)}"
        argv = [
            "sh",
            "-c",
            _kill_upload_exec(),
            "sh",
            posixpath.normpath(target),
            stage,
            *(["/bin/sh", "-c", command] if isinstance(command, str) else command),
        ]
        try:
            result = await self.exec(
                argv,
                cwd=cwd,
                env={**ROOT_ENV, **(env or {})},
                user=ROOT_USER,
                timeout_sec=timeout_sec,
                stdin=archive,
                _gate=self._gate(after_gate),
            )
        finally:
            await self._close_sessions()
        if result.exit_code == 125 and _STAGE_FAILED in result.stderr:
            detail = result.stderr.split(_STAGE_FAILED, 1)[1].strip().splitlines()[0]
            raise SandboxError(f"upload to {target} failed: {detail}")
        return result

    def _gate(
        self, after_gate: Callable[[], Awaitable[None]] | None
    ) -> Callable[[], Awaitable[list[dict[str, str]] | None]]:
        """The tamper look, then ``after_gate`` when it found nothing."""

        async def gate() -> list[dict[str, str]] | None:
            evidence = await self.tamper_evidence()
            if not evidence and after_gate is not None:
                await after_gate()
            return evidence

        return gate

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._prepared.pop(self.spec.trial_id, None)
        for session in list(self._sessions):
            session.close()
        self._sessions.clear()
        if not self._started:
            return
        try:
            client = await asyncio.to_thread(docker_client)
        except SandboxError:
            return
        await asyncio.to_thread(
            containers.remove_containers,
            client,
            self.spec.run_id,
            self.spec.trial_id,
            self._container_id,
        )
        self._container_id = None

    # -- processes -------------------------------------------------------------------------

    def _container(self) -> str:
        if self._container_id is None or self._stopped:
            raise SandboxError("the sandbox is not running")
        return self._container_id

    async def _open(
        self,
        command: str | Sequence[str],
        cwd: str | None,
        env: Mapping[str, str] | None,
        user: str | None,
        stdin: bool,
    ) -> Session:
        container = self._container()
        self._killed_counters = None  # valid only until anything else runs
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        try:
            session = await exec_stream.open_session(
                container,
                argv,
                env=env,
                workdir=cwd or self._workdir,
                user=user or self._exec_user,  # the image's USER, not the init's
                stdin=stdin,
            )
        except exec_stream.CancelledDuringStart as started:
            await exec_stream.finish(self._kill_group(started.session))
            started.session.close()
            raise asyncio.CancelledError from None
        self._sessions.add(session)
        return session

    async def _kill_group(self, session: Session) -> None:
        try:
            pid = await asyncio.wait_for(asyncio.shield(session.pid), exec_stream.PID_WAIT_SEC)
        except TimeoutError:
            pid = 0
        if pid > 1 and not self._stopped:
            with contextlib.suppress(SandboxError):
                await self.exec(f"kill -9 -{pid} {pid} 2>/dev/null; true", timeout_sec=30)

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
        _gate: Callable[[], Awaitable[list[dict[str, str]] | None]] | None = None,
    ) -> ExecResult:
        """(``_gate``: for kill_upload_exec, see :func:`_kill_upload_exec`.)"""
        session = await self._open(command, cwd, env, user, stdin is not None)
        out, err = OutputBuffer(max_output_bytes), OutputBuffer(max_output_bytes)
        timed_out = False
        try:
            async with asyncio.timeout(timeout_sec):
                if _gate is not None:
                    await self._pass_gate(session, _gate, out)
                if stdin is not None:
                    with contextlib.suppress(ConnectionError, OSError):
                        session.writer.write(stdin)
                        await session.writer.drain()
                        session.writer.close()
                await asyncio.gather(drain(session.stdout, out), drain(session.stderr, err))
                await session.pump
        except TimeoutError:
            timed_out = True
            await self._kill_group(session)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._kill_group(session))
            raise
        finally:
            session.close()
            self._sessions.discard(session)
        code = TIMEOUT_EXIT_CODE if timed_out else await exec_stream.exit_code(session.exec_id)
        if not timed_out:
            self._exited(code)
        return ExecResult(
            exit_code=code,
            stdout=out.text(),
            stderr=err.text(),
            timed_out=timed_out,
            truncated=out.truncated or err.truncated,
        )

    async def _pass_gate(
        self,
        session: Session,
        gate: Callable[[], Awaitable[list[dict[str, str]] | None]],
        out: OutputBuffer,
    ) -> None:
        """Wait for gate.sh's line: SandboxLimitExceeded when its counters say a limit was hit;
        then ask ``gate``: SandboxTampered (the command killed before it has its stdin) when it
        found anything."""
        line = await session.stdout.readline()
        counters = None
        if line.startswith(_GATE_MARK):
            counters = _counters(line[len(_GATE_MARK) :].decode())
        else:
            # The script ended early (or never started: no process slot was free): its own error
            # tells, unless the agent's changes (it replaced the shell) or a limit are the story.
            out.feed(line)
        if exceeded := limit_exceeded(counters):
            await self._kill_group(session)
            raise exceeded
        evidence = await gate()
        if evidence:
            await self._kill_group(session)
            raise SandboxTampered(evidence)
        if counters is None and (exceeded := limit_exceeded(await self.limit_events())):
            await self._kill_group(session)
            raise exceeded

    async def open_process(
        self,
        command: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        user: str | None = None,
    ) -> SandboxProcess:
        session = await self._open(command, cwd, env, user, True)
        return DockerProcess(self, session)

    # -- files -----------------------------------------------------------------------------

    async def upload(self, host_path: Path, sandbox_path: str) -> None:
        container = self._container()
        if not sandbox_path.startswith("/"):
            raise SandboxError(f"{sandbox_path}: sandbox paths must be absolute")
        if not host_path.exists():
            raise SandboxError(f"upload: {host_path} does not exist")
        target = posixpath.normpath(sandbox_path)
        client = await asyncio.to_thread(docker_client)
        await asyncio.to_thread(transfer.put, client, container, host_path, target)

    async def download(
        self, sandbox_path: str, host_path: Path, *, budget: CopyBudget | None = None
    ) -> None:
        container = self._container()
        if not sandbox_path.startswith("/"):
            raise SandboxError(f"{sandbox_path}: sandbox paths must be absolute")
        client = await asyncio.to_thread(docker_client)
        budget = budget or CopyBudget.default()
        if await asyncio.to_thread(self._empty_folder, client, posixpath.normpath(sandbox_path)):
            host_path.mkdir(parents=True, exist_ok=True)  # what the archive would have made
            return
        await asyncio.to_thread(
            transfer.get, client, container, posixpath.normpath(sandbox_path), host_path, budget
        )

    def _empty_folder(self, client: Any, path: str) -> bool:
        """(Blocking.) ``path`` is certainly an empty folder, by the container's layer."""
        try:
            layers = self._layer_folders(client)
        except SandboxError:
            return False  # the archive call says what is wrong
        return layers is not None and layer.empty_folder(layers, path)
