"""The ``docker`` sandbox: one container per trial through the Docker Engine API (docker SDK).

Blocking SDK calls run in threads; interactive exec sessions use the hijacked exec socket
directly on the event loop (we demultiplex Docker's 8-byte stream frames ourselves), so a
long-running ACP agent does not hold a thread. Files move with ``put_archive``/``get_archive``:
nothing assumes the engine can see the worker's disk (the AgentBeats case: socket mounted into
a container). Everything created carries ``skillsbench.managed=true``, ``skillsbench.run`` and
``skillsbench.trial`` labels, which :func:`reap_stale` uses after a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import os
import posixpath
import re
import secrets
import shutil
import socket
import tarfile
import tempfile
import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worker.capped import ChunkReader, CopyBudget, StreamTooLong
from worker.sandbox._output import TIMEOUT_EXIT_CODE, OutputBuffer, drain
from worker.sandbox.base import (
    AGENT_LOGS_DIR,
    ARTIFACTS_DIR,
    DEFAULT_WORKDIR,
    ROOT_ENV,
    ROOT_USER,
    VERIFIER_LOGS_DIR,
    ExecResult,
    Sandbox,
    SandboxError,
    SandboxProcess,
    SandboxSpec,
    sandbox_backend,
)
from worker.sandbox.dockerfile import DockerfileError, base_images, skills_copy_lines
from worker.sandbox.errors import ImageBuildFailed, SandboxConfigRefused

LABEL_MANAGED = "skillsbench.managed"
LABEL_RUN = "skillsbench.run"
LABEL_TRIAL = "skillsbench.trial"
LABEL_BUILT = "skillsbench.built"  # on images we built (prebuilt images never carry it)
IMAGE_REPOSITORY = "skillsbench-env"
STREAM_LIMIT = 64 * 1024 * 1024
# Prints the shell's pid (the exec's process group) on stderr, then becomes the command.
_PID_WRAPPER = 'echo "$$" >&2 && exec "$@"'
# The container's init (docker-init) keeps running only while its child, the keep-alive, does.
_KEEP_ALIVE_PID = "cat /proc/1/task/1/children"
# Stop, then kill, every process but init, the keep-alive ($1) and this shell. `kill -STOP -1`
# stops them all in one system call (a fork racing with it fails), so a process that forks and
# exits over and over cannot slip between the pids listed and the pids signalled; the passes
# over /proc then kill what is stopped (and stop what a shell without a kill builtin could not),
# and the keep-alive runs on.
_KILL_ALL = (
    'if [ "$(command -v kill)" = kill ]; then kill -STOP -1 2>/dev/null; fi; '
    'for sig in STOP KILL; do for d in /proc/[0-9]*; do p=${d#/proc/}; case $p in 1|"$1"|$$) ;; '
    '*) kill -s $sig $p 2>/dev/null;; esac; done; done; kill -s CONT "$1" 2>/dev/null; true'
)
# kill_upload_exec in one exec (args: keep-alive pid, target, stage, command; stdin: a tar of
# files/ and stdin): kill everything as _KILL_ALL does, unpack into a fresh stage, report what of
# the old target the upload does not replace, swap the target, then become the command with the
# staged stdin. The kill comes first, so no agent process sees the stage or the new target.
_STAGE_FAILED = "skillsbench-stage-failed:"
_KILL_UPLOAD_EXEC = (
    _KILL_ALL
    + f"""
t=$2 s=$3
fail() {{ echo "{_STAGE_FAILED} $1" >&2; exit 125; }}
rm -rf "$s" && mkdir -m 700 "$s" && tar -xf - -C "$s" || fail "cannot unpack into $s"
if [ -L "$t" ] || {{ [ -e "$t" ] && [ ! -d "$t" ]; }}; then
  rm -f "$t" && echo "removed $t" || fail "cannot remove $t"
elif [ -d "$t" ]; then
  IFS='
'
  set -f
  for p in $(find "$t" -mindepth 1 -depth); do
    n="$s/files/${{p#"$t"/}}"
    if [ -L "$p" ] || {{ [ ! -e "$n" ] && [ ! -L "$n" ]; }}; then echo "removed $p"; fi
  done
  set +f
  unset IFS
  rm -rf "$t" || fail "cannot clear $t"
fi
case $t in /*/*) mkdir -p "${{t%/*}}" || fail "cannot make the parent of $t" ;; esac
mv "$s/files" "$t" || fail "cannot move the upload to $t"
exec <"$s/stdin"  # (a failed redirection ends the shell: no reward, an error)
rm -rf "$s"
exec /bin/sh -c "$4"
"""
)

_client_lock = threading.Lock()
_client: Any = None
_build_locks: dict[str, threading.Lock] = {}


def docker_client() -> Any:
    """One shared SDK client; SandboxError when no engine answers."""
    global _client
    with _client_lock:
        if _client is None:
            try:
                import docker

                client = docker.from_env(timeout=300)
                client.ping()
            except Exception as exc:  # DockerException, requests' ConnectionError, ...
                raise SandboxError(f"no Docker Engine answers: {exc}") from None
            _client = client
        return _client


def _errors() -> Any:
    import docker.errors

    return docker.errors


_DIGESTS: dict[tuple[object, ...], str] = {}


def build_context_digest(environment: Path, with_skills: bool, skills_dir: str) -> str:
    """Content hash of the build context and the skills condition (tags never collide).

    Hashing reads every file; a stat walk is enough to tell that nothing changed since the last
    trial of the same task, so the hash is remembered per (paths, sizes, mtimes).
    """
    stamp = (str(environment), with_skills, skills_dir, *_stat_walk(environment))
    if stamp not in _DIGESTS:
        _DIGESTS[stamp] = _hash_context(environment, with_skills, skills_dir)
    return _DIGESTS[stamp]


def _stat_walk(environment: Path) -> list[tuple[str, int, int, int]]:
    out = []
    for path in sorted(environment.rglob("*")):
        info = path.lstat()
        out.append((str(path), info.st_mode, info.st_size, info.st_mtime_ns))
    return out


def _hash_context(environment: Path, with_skills: bool, skills_dir: str) -> str:
    digest = hashlib.sha256(f"v1|skills={with_skills}|{skills_dir}".encode())
    for path in sorted(environment.rglob("*")):
        rel = path.relative_to(environment).as_posix()
        if path.is_symlink():
            digest.update(f"L{rel}->{os.readlink(path)}\0".encode())
        elif path.is_file():
            digest.update(f"F{rel}:{path.stat().st_mode & 0o777}\0".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        elif path.is_dir():
            digest.update(f"D{rel}\0".encode())
    return digest.hexdigest()[:20]


def image_tag(task_id: str, digest: str) -> str:
    name = re.sub(r"[^a-z0-9._-]+", "-", task_id.lower()).strip(".-_") or "task"
    return f"{IMAGE_REPOSITORY}/{name[:100]}:{digest}"


def local_build_tag(
    client: Any, task_id: str, environment: Path, with_skills: bool, skills_dir: str
) -> str:
    """The tag a self-built task image goes by: the build context's content hash and the local
    image ids of its ``FROM`` images, so a base image that changed here (re-pulled, rebuilt,
    re-tagged) makes a new build instead of reusing one made from the old base."""
    digest = build_context_digest(environment, with_skills, skills_dir)
    bases = _base_image_ids(client, environment / "Dockerfile")
    if bases:
        digest = hashlib.sha256("|".join([digest, *bases]).encode()).hexdigest()[:20]
    return image_tag(task_id, digest)


def _base_image_ids(client: Any, dockerfile: Path) -> list[str]:
    try:
        refs = base_images(dockerfile.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, DockerfileError):
        return []  # the build itself reports an unreadable Dockerfile
    errors = _errors()
    ids = []
    for ref in refs:
        try:
            ids.append(f"{ref}={client.images.get(ref).id}")
        except errors.ImageNotFound:
            ids.append(f"{ref}=absent")  # the build pulls it; the next trial's tag then has its id
        except errors.DockerException as exc:
            raise SandboxError(f"cannot inspect base image {ref}: {exc}") from None
    return ids


def prepare_context(environment: Path, target: Path, with_skills: bool, skills_dir: str) -> None:
    """Copy the build context to ``target`` and fit it to the skills condition.

    With skills: ``COPY skills <skills_dir>`` is appended. Without: ``skills/`` is left out and
    the Dockerfile's own ``COPY skills ...`` lines are dropped (as BenchFlow's no-skill mode).
    """
    shutil.copytree(environment, target, symlinks=True)
    dockerfile = target / "Dockerfile"
    text = dockerfile.read_text(encoding="utf-8")
    has_skills = (target / "skills").is_dir()
    if with_skills and has_skills:
        text = text.rstrip("\n") + f"\nCOPY skills {skills_dir.rstrip('/')}/\n"
    elif not with_skills:
        drop = skills_copy_lines(text)
        lines = text.splitlines()
        text = "\n".join(line for number, line in enumerate(lines, 1) if number not in drop) + "\n"
        if has_skills:
            shutil.rmtree(target / "skills")
    dockerfile.write_text(text, encoding="utf-8")


class _StdinWriter(asyncio.StreamWriter):
    """The exec's stdin: ``close()`` half-closes (EOF to the process) so output still flows."""

    def close(self) -> None:
        if not self.transport.is_closing():
            with contextlib.suppress(OSError, RuntimeError):
                self.transport.write_eof()


@dataclass(eq=False)
class _Session:
    """One exec over the hijacked socket, demultiplexed onto asyncio streams."""

    exec_id: str
    sock: socket.socket
    writer: _StdinWriter
    stdout: asyncio.StreamReader
    stderr: asyncio.StreamReader
    pid: asyncio.Future[int]
    pump: asyncio.Task[None] = field(init=False)

    def close(self) -> None:
        self.pump.cancel()
        self.writer.transport.close()


async def _pump(reader: asyncio.StreamReader, session: _Session) -> None:
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


class DockerProcess(SandboxProcess):
    def __init__(self, sandbox: DockerSandbox, session: _Session) -> None:
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
            self._code = await self._sandbox._exit_code(self._session.exec_id)
            self._session.close()
            self._sandbox._sessions.discard(self._session)
        return self._code

    async def kill(self) -> None:
        if self._code is not None:
            return
        await self._sandbox._kill_group(self._session)
        self._session.close()
        with contextlib.suppress(asyncio.CancelledError):
            await self._session.pump
        self._code = await self._sandbox._exit_code(self._session.exec_id, wait=5.0)
        self._sandbox._sessions.discard(self._session)

    @property
    def returncode(self) -> int | None:
        return self._code


@sandbox_backend("docker")
class DockerSandbox(Sandbox):
    """One container per trial; see the module docstring."""

    def __init__(self, spec: SandboxSpec) -> None:
        super().__init__(spec)
        self._container_id: str | None = None
        self._workdir = spec.task.config.environment.workdir or DEFAULT_WORKDIR
        self._sessions: set[_Session] = set()
        self._keep_alive = 0
        self._has_tar = False  # the image has tar: kill_upload_exec can be one exec
        self._started = False
        self._stopped = False
        self.image: str | None = None

    @property
    def workdir(self) -> str:
        return self._workdir

    @property
    def labels(self) -> dict[str, str]:
        return {LABEL_MANAGED: "true", LABEL_RUN: self.spec.run_id, LABEL_TRIAL: self.spec.trial_id}

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        if self._started:
            raise SandboxError("sandbox already started")
        self._started = True
        client = await asyncio.to_thread(docker_client)
        self.image = await self._image(client)
        env_config = self.spec.task.config.environment
        image_workdir = await asyncio.to_thread(_image_workdir, client, self.image)
        self._workdir = env_config.workdir or image_workdir or DEFAULT_WORKDIR
        environment = {**env_config.env, **self.spec.env}
        kwargs: dict[str, Any] = {
            "detach": True,
            "init": True,
            "entrypoint": ["sleep", "infinity"],
            "command": [],
            "labels": self.labels,
            "environment": environment,
            "nano_cpus": int(env_config.cpus * 1e9),
            "mem_limit": f"{env_config.memory_mb}m",
            "working_dir": self._workdir,
        }
        if not self.spec.internet:
            kwargs["network_mode"] = "none"
        if self._stopped:
            raise SandboxError("sandbox stopped while starting")
        try:
            creating = asyncio.ensure_future(
                asyncio.to_thread(client.containers.run, self.image, **kwargs)
            )
            try:
                container = await asyncio.shield(creating)
            except asyncio.CancelledError:
                # Cancelled mid-create: wait for the engine's answer and remove what it made.
                with contextlib.suppress(Exception):
                    made = await creating
                    await asyncio.to_thread(made.remove, force=True, v=True)
                raise
        except _errors().DockerException as exc:
            if isinstance(exc, _errors().APIError) and exc.is_client_error():
                # 4xx: the engine refuses this task's config (e.g. more CPUs than the host has)
                raise SandboxConfigRefused(f"container failed to start: {exc}") from None
            raise SandboxError(f"container failed to start: {exc}") from None
        self._container_id = container.id
        dirs = " ".join([AGENT_LOGS_DIR, VERIFIER_LOGS_DIR, ARTIFACTS_DIR, self._workdir])
        logs = " ".join([AGENT_LOGS_DIR, VERIFIER_LOGS_DIR, ARTIFACTS_DIR])
        # One exec sets up the folders, finds the keep-alive, and (with tar in the image)
        # unpacks spec.files from its stdin: no put_archive round trip per file.
        files = (
            await asyncio.to_thread(_files_archive, self.spec.files) if self.spec.files else None
        )
        unpack = " && tar -xf - -C /" if files else ""
        ready = await self.exec(
            f"mkdir -p {dirs} && chmod 777 {logs} && {_KEEP_ALIVE_PID} && "
            f"if command -v tar >/dev/null 2>&1; then echo tar{unpack}; fi",
            user=ROOT_USER,  # whatever USER the image ends with
            timeout_sec=60,
            stdin=files,
        )
        try:
            if ready.exit_code != 0:
                raise ValueError(ready.stderr.strip() or ready.stdout.strip())
            words = ready.stdout.split()
            self._keep_alive = int(words[0])
            self._has_tar = "tar" in words[1:]
        except (IndexError, ValueError) as exc:
            raise SandboxError(f"container setup failed: {exc}") from None
        if files and not self._has_tar:
            await self._upload_spec_files()

    async def _image(self, client: Any) -> str:
        if self.spec.image:
            return await asyncio.to_thread(_ensure_prebuilt, client, self.spec.image)
        task = self.spec.task
        env = task.config.environment
        try:
            tag = await asyncio.to_thread(
                local_build_tag,
                client,
                task.task_id,
                task.environment_dir,
                self.spec.with_skills,
                env.skills_dir,
            )
        except OSError as exc:
            raise SandboxError(f"task {task.task_id}: cannot read environment/: {exc}") from None
        labels = {**self.labels, LABEL_BUILT: "true"}
        build = asyncio.to_thread(
            _build_image,
            client,
            task.environment_dir,
            tag,
            labels,
            self.spec.with_skills,
            env.skills_dir,
        )
        try:
            await asyncio.wait_for(build, env.build_timeout_sec)
        except TimeoutError:
            raise ImageBuildFailed(
                f"task {task.task_id}: image build timed out after {env.build_timeout_sec:g}s"
            ) from None
        return tag

    async def kill_processes(self) -> None:
        if self._container_id is not None and not self._stopped:
            await self.exec(
                ["sh", "-c", _KILL_ALL, "sh", str(self._keep_alive)], user=ROOT_USER, timeout_sec=30
            )
        await self._close_sessions()

    async def _close_sessions(self) -> None:
        """After a kill-all: let the killed sessions' pumps finish, then drop them."""
        sessions = list(self._sessions)
        if sessions:
            await asyncio.wait([s.pump for s in sessions], timeout=5)
        for session in sessions:
            session.close()

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
            )
        if not target.startswith("/") or posixpath.normpath(target) == "/":
            raise SandboxError(f"{target}: the upload target must be an absolute path below /")
        if not upload.exists():
            raise SandboxError(f"upload: {upload} does not exist")
        archive = await asyncio.to_thread(_stage_archive, upload, stdin or b"")
        stage = f"/.skillsbench-stage-{secrets.token_hex(8)}"
        argv = [
            "sh",
            "-c",
            _KILL_UPLOAD_EXEC,
            "sh",
            str(self._keep_alive),
            posixpath.normpath(target),
            stage,
            command,
        ]
        try:
            result = await self.exec(
                argv,
                cwd=cwd,
                env={**ROOT_ENV, **(env or {})},
                user=ROOT_USER,
                timeout_sec=timeout_sec,
                stdin=archive,
            )
        finally:
            await self._close_sessions()
        if result.exit_code == 125 and _STAGE_FAILED in result.stderr:
            detail = result.stderr.split(_STAGE_FAILED, 1)[1].strip().splitlines()[0]
            raise SandboxError(f"upload to {target} failed: {detail}")
        return result

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
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
            _remove_containers, client, self.spec.run_id, self.spec.trial_id, self._container_id
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
    ) -> _Session:
        container = self._container()
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        wrapped = ["/bin/sh", "-c", _PID_WRAPPER, "sh", *argv]
        client = await asyncio.to_thread(docker_client)

        def start() -> tuple[str, Any]:
            created = client.api.exec_create(
                container,
                wrapped,
                stdout=True,
                stderr=True,
                stdin=stdin,
                environment=dict(env or {}),
                workdir=cwd or self._workdir,
                user=user or "",
            )
            return created["Id"], client.api.exec_start(created["Id"], socket=True)

        try:
            exec_id, raw = await asyncio.to_thread(start)
        except _errors().DockerException as exc:
            raise SandboxError(f"exec failed: {exc}") from None
        sock: socket.socket = getattr(raw, "_sock", raw)
        sock.setblocking(False)
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=STREAM_LIMIT)
        protocol = asyncio.StreamReaderProtocol(reader)
        transport, _ = await loop.create_connection(lambda: protocol, sock=sock)
        writer = _StdinWriter(transport, protocol, reader, loop)
        session = _Session(
            exec_id=exec_id,
            sock=sock,
            writer=writer,
            stdout=asyncio.StreamReader(limit=STREAM_LIMIT),
            stderr=asyncio.StreamReader(limit=STREAM_LIMIT),
            pid=loop.create_future(),
        )
        session.pump = asyncio.create_task(_pump(reader, session))
        if not stdin:
            writer.close()
        self._sessions.add(session)
        return session

    async def _exit_code(self, exec_id: str, wait: float = 30.0) -> int:
        client = await asyncio.to_thread(docker_client)
        deadline = asyncio.get_running_loop().time() + wait
        while True:
            info = await asyncio.to_thread(client.api.exec_inspect, exec_id)
            if not info.get("Running") and info.get("ExitCode") is not None:
                return int(info["ExitCode"])
            if asyncio.get_running_loop().time() > deadline:
                return -1
            await asyncio.sleep(0.02)

    async def _kill_group(self, session: _Session) -> None:
        try:
            pid = await asyncio.wait_for(asyncio.shield(session.pid), 5)
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
    ) -> ExecResult:
        session = await self._open(command, cwd, env, user, stdin is not None)
        out, err = OutputBuffer(max_output_bytes), OutputBuffer(max_output_bytes)
        timed_out = False
        try:
            async with asyncio.timeout(timeout_sec):
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
        code = TIMEOUT_EXIT_CODE if timed_out else await self._exit_code(session.exec_id)
        return ExecResult(
            exit_code=code,
            stdout=out.text(),
            stderr=err.text(),
            timed_out=timed_out,
            truncated=out.truncated or err.truncated,
        )

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
        await asyncio.to_thread(_put, client, container, host_path, target)

    async def download(
        self, sandbox_path: str, host_path: Path, *, budget: CopyBudget | None = None
    ) -> None:
        container = self._container()
        if not sandbox_path.startswith("/"):
            raise SandboxError(f"{sandbox_path}: sandbox paths must be absolute")
        client = await asyncio.to_thread(docker_client)
        budget = budget or CopyBudget.default()
        await asyncio.to_thread(
            _get, client, container, posixpath.normpath(sandbox_path), host_path, budget
        )


# -- blocking helpers (run in threads) ------------------------------------------------------


def _ensure_prebuilt(client: Any, ref: str) -> str:
    errors = _errors()
    try:
        client.images.get(ref)
    except errors.ImageNotFound:
        try:
            client.images.pull(ref)
        except errors.DockerException as exc:
            raise SandboxError(f"prebuilt image {ref} is not available: {exc}") from None
    return ref


def _image_workdir(client: Any, image: str) -> str | None:
    config = client.images.get(image).attrs.get("Config") or {}
    return config.get("WorkingDir") or None


def _build_image(
    client: Any,
    environment: Path,
    tag: str,
    labels: dict[str, str],
    with_skills: bool,
    skills_dir: str,
) -> None:
    errors = _errors()
    with _client_lock:
        lock = _build_locks.setdefault(tag, threading.Lock())
    with lock:  # one build at a time per tag; later callers reuse the image
        try:
            client.images.get(tag)
            return
        except errors.ImageNotFound:
            pass
        with tempfile.TemporaryDirectory(prefix="skillsbench-build-") as tmp:
            context = Path(tmp) / "context"
            try:
                prepare_context(environment, context, with_skills, skills_dir)
            except (OSError, DockerfileError) as exc:
                raise ImageBuildFailed(f"cannot prepare the build context: {exc}") from None
            try:
                client.images.build(
                    path=str(context), tag=tag, labels=labels, rm=True, forcerm=True, pull=False
                )
            except errors.BuildError as exc:
                logged = (str(e.get("stream") or e.get("error") or "") for e in exc.build_log)
                tail = [text.strip() for text in logged if text.strip()][-5:]
                detail = " | ".join(tail) or str(exc)
                raise ImageBuildFailed(f"image build failed: {exc.msg}: {detail}") from None
            except errors.DockerException as exc:  # the engine, not the Dockerfile: transient
                raise SandboxError(f"image build failed: {exc}") from None


def _remove_containers(client: Any, run_id: str, trial_id: str | None, known: str | None) -> int:
    """Remove the containers of one trial, or of a whole run when ``trial_id`` is None (what a
    killed worker left behind); returns how many were removed."""
    errors = _errors()
    ids = {known} if known else set()
    labels = [f"{LABEL_RUN}={run_id}"]
    if trial_id is not None:
        labels.append(f"{LABEL_TRIAL}={trial_id}")
    with contextlib.suppress(errors.DockerException):
        ids |= {c["Id"] for c in client.api.containers(all=True, filters={"label": labels})}
    removed = 0
    for cid in ids:
        try:
            client.api.remove_container(cid, force=True, v=True)
        except errors.NotFound:
            continue
        except errors.APIError as exc:
            if "already in progress" not in str(exc):
                raise SandboxError(f"cannot remove container {cid[:12]}: {exc}") from None
            continue
        removed += 1
    return removed


def _put(client: Any, container: str, host_path: Path, target: str) -> None:
    # Members carry the whole target path and extract at "/": the engine creates missing parent
    # folders itself, which saves an exec (`mkdir -p`) per upload.
    prefix = target.lstrip("/")
    with tempfile.TemporaryFile() as buffer:
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            if host_path.is_dir():
                for child in sorted(host_path.iterdir()):
                    arcname = posixpath.join(prefix, child.name) if prefix else child.name
                    tar.add(child, arcname=arcname, filter=_as_root)
            else:
                if not prefix:
                    raise SandboxError("upload: a file cannot replace /")
                tar.add(host_path, arcname=prefix, filter=_as_root)
        buffer.seek(0)
        try:
            if not client.api.put_archive(container, "/", buffer):
                raise SandboxError(f"upload to {target} failed")
        except _errors().DockerException as exc:
            raise SandboxError(f"upload to {target} failed: {exc}") from None


def _files_archive(files: Mapping[str, Path]) -> bytes:
    """``spec.files`` as one tar to unpack at ``/`` (members carry their whole target path)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for target, source in files.items():
            name = posixpath.normpath(target).lstrip("/")
            if not target.startswith("/") or not name or name == ".":
                raise SandboxError(f"{target}: sandbox paths must be absolute and below /")
            if not source.exists():
                raise SandboxError(f"upload: {source} does not exist")
            tar.add(source, arcname=name, filter=_as_root)
    return buffer.getvalue()


def _stage_archive(upload: Path, stdin: bytes) -> bytes:
    """The tar :data:`_KILL_UPLOAD_EXEC` reads: ``files`` (the upload) and ``stdin``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(upload, arcname="files", filter=_as_root)
        info = _as_root(tarfile.TarInfo("stdin"))
        info.size, info.mode = len(stdin), 0o600
        tar.addfile(info, io.BytesIO(stdin))
    return buffer.getvalue()


def _as_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


_GO_MODE_SYMLINK = 1 << 27
_GO_MODE_DIR = 1 << 31


def _get(client: Any, container: str, path: str, host_path: Path, budget: CopyBudget) -> None:
    errors = _errors()
    try:
        chunks, info = client.api.get_archive(container, path)
    except errors.NotFound:
        raise SandboxError(f"download: {path} does not exist in the sandbox") from None
    except errors.DockerException as exc:
        raise SandboxError(f"download of {path} failed: {exc}") from None
    mode = int(info.get("mode", 0))
    if info.get("linkTarget") or mode & _GO_MODE_SYMLINK:
        raise SandboxError(f"download: {path} is a symbolic link; not followed")
    # Streamed, never spooled: the archive holds sparse files expanded.
    stream = ChunkReader(chunks, budget.stream_limit())
    try:
        with tarfile.open(fileobj=stream, mode="r|", bufsize=1 << 20) as tar:
            _extract(tar, posixpath.basename(path.rstrip("/")) or ".", host_path, path, budget)
    except StreamTooLong:
        budget.skip(path, f"the rest: the archive ran past {stream.limit} bytes")
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()


def _extract(
    tar: tarfile.TarFile, top: str, host_path: Path, shown: str, budget: CopyBudget
) -> None:
    """Regular files and folders only; links, devices and odd names are skipped."""
    for member in tar:
        name = posixpath.normpath(member.name)
        if name == top:
            rel = ""
        elif name.startswith(top + "/"):
            rel = name[len(top) + 1 :]
        else:
            continue
        if rel.startswith("../") or rel.startswith("/") or "/../" in f"/{rel}/":
            continue
        dest = host_path / rel if rel else host_path
        shown_here = posixpath.join(posixpath.dirname(shown), name)
        if member.isdir():
            if rel and not budget.admit_entry(shown_here):
                continue  # its files are refused too: their folder does not exist
            dest.mkdir(parents=True, exist_ok=True)
        elif member.isreg():
            if any(p.is_symlink() for p in [dest, *dest.parents][: rel.count("/") + 1]):
                continue
            if not rel:
                dest.parent.mkdir(parents=True, exist_ok=True)
            elif not dest.parent.is_dir():
                budget.skip(shown_here, "its folder was not collected")
                continue
            source = tar.extractfile(member)
            if source is None:
                continue
            with source:
                budget.copy_file(source, member.size, dest, shown_here)


# -- reaper ---------------------------------------------------------------------------------


@dataclass
class ReapReport:
    containers: list[str] = field(default_factory=list)
    networks: list[str] = field(default_factory=list)
    images: list[str] = field(default_factory=list)


async def reap_stale(
    active_run_ids: Collection[str], *, only_runs: Collection[str] | None = None
) -> ReapReport:
    """Remove containers, networks and self-built images whose run is no longer active.

    Prebuilt images never carry our labels, so they are never touched. ``only_runs`` limits
    the sweep to those run ids (for engines shared with other workers or tests).
    """
    client = await asyncio.to_thread(docker_client)
    scope = None if only_runs is None else set(only_runs)
    return await asyncio.to_thread(_reap, client, set(active_run_ids), scope)


def _reap(client: Any, active: set[str], scope: set[str] | None) -> ReapReport:
    errors = _errors()
    report = ReapReport()
    managed = {"label": [f"{LABEL_MANAGED}=true"]}

    def stale(labels: Mapping[str, str] | None) -> bool:
        run = (labels or {}).get(LABEL_RUN)
        return run not in active and (scope is None or run in scope)

    # Low-level listings: no per-object inspect that races with concurrent removals.
    for container in client.api.containers(all=True, filters=managed):
        if stale(container.get("Labels")):
            with contextlib.suppress(errors.NotFound, errors.APIError):
                client.api.remove_container(container["Id"], force=True, v=True)
                report.containers.append(container["Id"])
    for network in client.api.networks(filters=managed):
        if stale(network.get("Labels")):
            with contextlib.suppress(errors.NotFound, errors.APIError):
                client.api.remove_network(network["Id"])
                report.networks.append(network["Id"])
    built = {"label": [f"{LABEL_MANAGED}=true", f"{LABEL_BUILT}=true"]}
    for image in client.api.images(filters=built):
        if stale(image.get("Labels")):
            tags = [t for t in image.get("RepoTags") or [] if t != "<none>:<none>"]
            for ref in tags or [image["Id"]]:
                with contextlib.suppress(errors.NotFound, errors.APIError):
                    client.api.remove_image(ref, force=False, noprune=False)
                    report.images.append(ref)
    return report


__all__ = [
    "LABEL_MANAGED",
    "LABEL_RUN",
    "LABEL_TRIAL",
    "DockerSandbox",
    "ReapReport",
    "build_context_digest",
    "docker_client",
    "local_build_tag",
    "prepare_context",
    "reap_stale",
]
