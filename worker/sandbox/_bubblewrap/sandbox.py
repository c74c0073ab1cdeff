"""The bubblewrap sandbox (registered as ``local``): the host's own root, no daemon needed.

Layout of one sandbox (see docs/sandboxes.md):

* the root is a per-trial host folder (``top.py``), so a new top-level folder (``/output``)
  persists for the trial; the host's system folders are bound over it read-only (by allowlist:
  ``/root``, ``/home``, ``/run``, ``/tmp``, ``/mnt``, ... of the host are not shown at all),
  and the task's folder and the trial state folder are masked;
* writable, per-trial host folders are bound at the workdir (the Dockerfile's ``WORKDIR``,
  default ``/root``), ``/root``, ``/logs``, ``/tmp`` and, fresh and empty, ``/opt``, ``/srv``
  and ``/var``; ``/usr/local`` is the host's under a per-trial overlay (root workers); all of it
  lives in one capped tmpfs where the worker may mount, else under a storage watchdog (see
  :mod:`.writable`); ``/tests``,
  ``/solution``, the skills folder and ``/instruction.md`` appear only once uploaded;
* files that the Dockerfile ``COPY``s into a system folder land in a per-trial layer shown
  read-only over the host folder (overlayfs); into a new top-level folder, in the root folder;
* every process runs in a PID namespace that is a child of one long-lived "init" namespace
  per sandbox: killing that init kills every process ever started in the sandbox, background
  ones included; each ``exec`` additionally gets its own child namespace, so a command's
  leftovers die with it;
* network namespace off unless the task allows internet.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import posixpath
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from task_sets.task import Task
from worker.core.capped import CopyBudget
from worker.core.limits import SANDBOX_VERIFIER_RESERVE, OutputCaps, storage_mode
from worker.sandbox._bubblewrap import limits
from worker.sandbox._bubblewrap.files import copy_in, copy_out, inside, normalize, remove_tree, top
from worker.sandbox._bubblewrap.host import (
    CLEAN_PATH,
    ETC,
    NAMESPACE_FLAGS,
    SYSTEM_TOP_LEVEL,
    check_host,
    etc_view,
    masks,
    mount_args,
    worker_site_dirs,
)
from worker.sandbox._bubblewrap.namespace import (
    InitNamespace,
    enter_user_namespace,
    joins_by_setns,
)
from worker.sandbox._bubblewrap.process import (
    STREAM_LIMIT,
    BubblewrapProcess,
    Spawned,
    feed,
    reader,
)
from worker.sandbox._bubblewrap.recipe import apply_recipe, local_refusal, read_recipe
from worker.sandbox._bubblewrap.top import ALWAYS_RESERVED, KEPT, prepare, prepare_below, stubs
from worker.sandbox._bubblewrap.writable import (
    COPY_ON_WRITE,
    FRESH_TOPS,
    HOME_WATCHED,
    VAR_FOLDERS,
    Snapshot,
    Watched,
    changes,
    disk_use,
    head,
    mount_capped_root,
    mount_copy_on_write,
    path_stat,
    reap_mounts,
    reap_run_mounts,
    resize,
    snapshot,
    unmount,
)
from worker.sandbox._output import TIMEOUT_EXIT_CODE, OutputBuffer, drain
from worker.sandbox.archive import ExportReport, HostEntry, link_targets, write_archive
from worker.sandbox.base import (
    DEFAULT_WORKDIR,
    INSTRUCTION_PATH,
    LOGS_DIR,
    SOLUTION_DIR,
    TESTS_DIR,
    ExecResult,
    Sandbox,
    SandboxConfig,
    SandboxEnd,
    SandboxError,
    SandboxProcess,
    SandboxSpec,
    SandboxUnsupported,
    sandbox_backend,
)
from worker.sandbox.dockerfile import DockerfileError, ImageRecipe, parse_dockerfile
from worker.sandbox.errors import ImageBuildFailed
from worker.sandbox.resources import HostCapacity
from worker.sandbox.tamper import Change, PathStat, find_tampering

if TYPE_CHECKING:
    from worker.sandbox.settings import PrebuiltImages

log = logging.getLogger(__name__)

# The storage watchdog (a worker that may not mount the capped tmpfs) measures the tree at most
# this often, and never spends more than a fifth of its time walking it (a tree of many files).
STORAGE_WATCH_SEC = 0.5
STORAGE_WATCH_SHARE = 0.2


@dataclass(frozen=True)
class BubblewrapConfig(SandboxConfig):
    """The bubblewrap sandbox shows the host's root: it must also mask the folder holding the
    task folders (tests and solutions of every task)."""

    tasks_root: Path | None = None
    # The Dockerfile as read when the config was made (None: unreadable, the start says why).
    recipe: ImageRecipe | None = field(default=None, compare=False, repr=False)

    @classmethod
    def task_fields(
        cls, task: Task, *, with_skills: bool, prebuilt: PrebuiltImages | None
    ) -> dict[str, Any]:
        fields = super().task_fields(task, with_skills=with_skills, prebuilt=prebuilt)
        if task.docker_image:
            raise ValueError(
                f"task {task.task_id} needs the docker environment: it runs the prebuilt image "
                f"{task.docker_image} ([environment].docker_image); the local sandbox only "
                "emulates environment/Dockerfile"
            )
        recipe = read_recipe(task.dockerfile)
        refusal = local_refusal(task.task_id, recipe, task.tests_dir / "test.sh")
        if refusal is not None:  # refused before anything runs, not failed in place
            raise ValueError(refusal)
        return {**fields, "tasks_root": task.path.parent, "recipe": recipe}


@sandbox_backend("local")
class BubblewrapSandbox(Sandbox):
    """bubblewrap sandbox; see the module docstring for the layout."""

    config_type = BubblewrapConfig

    @classmethod
    def reaches_host_sockets(cls) -> bool:
        return True  # a lent host folder (lend) is bound read-only: its sockets work

    def __init__(self, spec: SandboxSpec) -> None:
        super().__init__(spec)
        self.config: BubblewrapConfig = spec.config  # type: ignore[assignment]
        self._root = spec.state_dir / "sandbox"
        self._workdir = DEFAULT_WORKDIR
        self._image_env: dict[str, str] = {}
        self._lent: dict[str, Path] = {}  # sandbox path -> host folder (read-only), see lend
        # Writable binds: sandbox path -> host folder (or file, for /instruction.md).
        self._binds: dict[str, Path] = {}
        self.layer = self._root / "layer"
        # The sandbox's "/" (new top-level folders persist there) and its names that are never
        # the agent's (mount points: top.py).
        self._top = self._root / "top"
        self._reserved: set[str] = set(ALWAYS_RESERVED)
        self._layout_lock = threading.Lock()  # one command's mount points made at a time
        # Fresh folders inside the agent's top-level ones (/app/.venv where the worker's site
        # folder is lent below it): not the root folder's, so no writable place.
        self._fresh: set[str] = set()
        self._bwrap = ""
        self._init = InitNamespace()
        self._procs: set[Spawned] = set()
        # Why the sandbox was ended from outside (its init killed, or one of its own bwrap
        # processes), once seen: ended() answers OUTSIDE from then on, and kill_processes()
        # refuses to start a new init over it (the verifier would grade a half-done run).
        self._lost: str | None = None
        self._started = False
        self._stopped = False
        self._limits = limits.TrialLimits(
            owner=spec.owner,
            name=limits.group_name(spec.run_id, spec.trial_id, spec.state_dir),
            cpus=self.config.cpus,
            memory_mb=self.config.memory_mb,
            pids_limit=spec.pids_limit,
        )
        self._mounted: list[Path] = []  # host mounts of this sandbox, innermost first
        self._watched: list[Watched] = []  # what tamper_evidence diffs against _baseline
        self._baseline: Snapshot | None = None
        # Every writable place, for work_changes (the same diff, wider).
        self._work_watched: list[Watched] = []
        self._work_baseline: Snapshot | None = None
        self._work_changes: list[Change] | None = None
        self._cap = 0  # bytes of the capped tree while the agent runs (0: not capped)
        # The storage watchdog (where the tree is no capped tmpfs): what it saw, and whether it
        # killed the sandbox (then no command starts any more: the trial is the agent's failure).
        self._watchdog: asyncio.Task[None] | None = None
        self._storage_limit = 0  # bytes it allows now (the cap; more once the agent is gone)
        self._storage_used = 0
        self._storage_hits = 0
        self._storage_walks = 0  # how often it measured (tests wait on it)

    @property
    def workdir(self) -> str:
        return self._workdir

    # -- resource limits (limits.py) -------------------------------------------------------

    @classmethod
    def limit_mechanisms(cls) -> dict[str, str | None]:
        return limits.host().mechanisms()

    async def limit_events(self) -> dict[str, int] | None:
        events = await asyncio.to_thread(self._limits.events)
        if self._storage_limit:
            events = {
                **(events or {}),
                "storage_hits": self._storage_hits,
                "storage_used_bytes": self._storage_used,
                "storage_cap_bytes": self._cap,
            }
        return events

    @classmethod
    async def host_capacity(cls) -> HostCapacity:
        """This process's CPUs and the host's memory, or the worker's own cgroup memory limit
        when that is lower (a worker in a container)."""
        host = HostCapacity.of_this_host()
        own = limits.own_memory_limit_mb()
        return host if own is None else HostCapacity(host.cpus, min(host.memory_mb, own))

    @classmethod
    async def reap(cls, owner: str, active_run_ids: Collection[str]) -> int:
        # The trial cgroups a crashed worker left (their processes killed), then its capped
        # trees: no sandbox of this worker runs yet, so every tree it mounted is a crash's.
        reaped = await asyncio.to_thread(limits.reap, owner, set(active_run_ids))
        return reaped + (await asyncio.to_thread(reap_mounts, owner) if owner else 0)

    @classmethod
    async def run_cleanup(cls, run_id: str) -> int:
        reaped = await asyncio.to_thread(limits.reap_run, run_id)
        return reaped + await asyncio.to_thread(reap_run_mounts, run_id)

    def _preexec(self) -> Callable[[], None] | None:
        """What a bwrap process does in the child before it starts (None, the fast path, for a
        root worker with cgroups): the rlimit fallback's limits, then (a worker that is not
        root) the sandbox's user namespace."""
        setns = (
            enter_user_namespace(self._init.fds[0]) if self._init.fds and joins_by_setns() else None
        )
        return limits.chain(self._limits.preexec(), setns)

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        if self._started:
            raise SandboxError("sandbox already started")
        self._started = True
        self._bwrap = await asyncio.to_thread(check_host)
        # The /etc copy every exec shows is made once per process: off the event loop (it took
        # 0.5-2.7 s on a busy host, stalling every run of the worker meanwhile).
        await asyncio.to_thread(etc_view)
        try:
            await asyncio.to_thread(self._limits.create)
        except OSError as exc:
            raise SandboxError(f"cannot set the trial's resource limits: {exc}") from None
        config = self.config
        recipe = config.recipe
        if recipe is None:
            try:
                recipe = parse_dockerfile(config.dockerfile)
            except DockerfileError as exc:  # the task's fault: a retry would fail the same way
                raise ImageBuildFailed(f"task {config.task_id}: {exc}") from None
        if recipe.stages > 1:
            raise SandboxUnsupported(
                f"task {config.task_id} needs the docker environment: a multi-stage Dockerfile"
            )
        self._workdir = config.workdir or recipe.workdir or DEFAULT_WORKDIR
        if top(self._workdir) in ("", "proc", "sys", "dev"):
            raise SandboxUnsupported(
                f"task {config.task_id} needs the docker environment: WORKDIR {self._workdir}"
            )
        self._image_env = {**recipe.env, **config.env}
        await asyncio.to_thread(self._make_layout)
        if self._cap and self._root not in self._mounted:
            self._storage_limit = self._cap
            self._watchdog = asyncio.create_task(
                self._watch_storage(), name=f"storage watchdog {self.spec.trial_id}"
            )
        await self._new_init()
        await self._probe_layout()
        await apply_recipe(self, recipe)
        if any(self.layer.iterdir()):
            await self._probe_layout()  # files the Dockerfile put outside the writable binds
        if config.with_skills and config.skills_source is not None:
            await self.upload(config.skills_source, config.skills_dir)
        await self._upload_spec_files()
        await self.trust_current_changes()  # the task's own files are the agent's ground

    async def _probe_layout(self) -> None:
        probe = await self.exec(["true"], timeout_sec=60)
        if probe.exit_code == 137 and not probe.timed_out:
            # Killed from outside before it could run (seen now and then on a loaded host):
            # nothing of the layout's, so it is looked at once more.
            probe = await self.exec(["true"], timeout_sec=60)
        if probe.exit_code == 0:
            return
        if any(self.layer.iterdir()):  # typically: overlayfs refused a host folder
            raise SandboxUnsupported(
                f"task {self.config.task_id} needs the docker environment: the local sandbox "
                f"cannot lay out the Dockerfile's files here ({probe.stderr.strip()})"
            )
        raise SandboxError(
            f"local sandbox failed to start (exit {probe.exit_code}): {probe.stderr.strip()}"
        )

    def _make_layout(self) -> None:
        self._remove_tree()
        root = self._root
        self._cap = OutputCaps.from_env().sandbox_bytes
        if mount_capped_root(root, self._cap, self.spec.owner, storage_mode()):
            self._mounted.append(root)
        logs = root / "logs"
        for sub in ("agent", "verifier", "artifacts"):
            (logs / sub).mkdir(parents=True)
        for name in ("workspace", "home", "tmp", "mounts", "layer", "top"):
            (root / name).mkdir(parents=True, exist_ok=True)
        for path in FRESH_TOPS:  # empty and writable, as in a container
            (root / path.strip("/")).mkdir()
        for name in VAR_FOLDERS:
            (root / "var" / name).mkdir()
        for name in ("tmp", "var/tmp"):
            (root / name).chmod(0o1777)
        self._binds = {
            "/root": root / "home",
            LOGS_DIR: logs,
            "/tmp": root / "tmp",
            **{path: root / path.strip("/") for path in FRESH_TOPS},
            self._workdir: root / "workspace",
        }
        # Top-level places mounted directly (those holding deeper mount points only are the
        # agent's folders, bound on themselves: host.mount_args).
        self._reserved |= {
            path.strip("/")
            for path in (*self._binds, self.config.skills_dir)
            if path.count("/") == 1
        }
        # New top-level folders: watched like /opt (a program's own files are the agent's; a
        # toolchain the image's PATH names is not), and the agent's work product.
        new_tops = Watched("/", self._top, skip=self._reserved)
        self._watched = [Watched("/opt", root / "opt"), new_tops]
        for path in COPY_ON_WRITE:  # one overlay each, mounted on the host (root only)
            folder = root / "cow" / path.strip("/").replace("/", "_")
            merged = mount_copy_on_write(path, folder)
            if merged is not None:
                self._mounted.insert(0, merged)
                self._binds[path] = merged
                self._watched.append(Watched(path, folder / "upper", lower=path))
        for path in HOME_WATCHED:
            found = self.bind_for(path)
            if found is not None:
                self._watched.append(Watched(path, found[1] / found[2]))
        # The overlays are watched through their upper folders (what was written), never the
        # merged view (the host's whole /usr/local).
        overlays = [w for w in self._watched if w.lower is not None]
        self._work_watched = [
            Watched(path, host)
            for path, host in self._binds.items()
            if path != LOGS_DIR and path not in {w.sandbox for w in overlays}
        ] + [*overlays, new_tops]
        self._ensure_mountpoint(self._workdir)

    def _remove_tree(self) -> None:
        """Unmount what this sandbox mounted, then remove its host folder (never while a
        command's mount points are being made: :meth:`_layout`)."""
        with self._layout_lock:
            # Detaching the capped tree detaches the overlays mounted in it as well.
            for point in [self._root] if self._root in self._mounted else self._mounted:
                unmount(point)
            self._mounted = []
            if self._root.exists():
                remove_tree(self._root)

    def _ensure_mountpoint(self, path: str) -> None:
        """A bind under a read-only host folder needs its mount point made in the layer."""
        first = top(path)
        if path == f"/{first}" or first not in (*SYSTEM_TOP_LEVEL, ETC):
            return  # not a host folder: its top is made in the sandbox's own root
        if self.bind_for(posixpath.dirname(path)) is not None:
            return  # inside another writable bind: bwrap creates the mount point there
        if not os.path.lexists(path):
            (self.layer / path.lstrip("/")).mkdir(parents=True, exist_ok=True)

    async def _new_init(self) -> None:
        # Shielded: a cancelled start must not leave an init nobody knows about.
        starting = asyncio.ensure_future(
            asyncio.to_thread(
                self._init.start,
                self._bwrap,
                str(self._root),
                self._limits.wrapper(),
                self._limits.preexec(),
            )
        )
        try:
            await asyncio.shield(starting)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await starting
            await self._kill_all()
            raise

    async def _watch_storage(self) -> None:
        """While the sandbox runs: past the storage limit, kill everything in it (once; no
        command starts after that) and count it in :meth:`limit_events`."""
        pause = STORAGE_WATCH_SEC  # the first walk after a pause: a short trial pays nothing
        while not self._stopped:
            await asyncio.sleep(pause)
            began = time.monotonic()
            used = await asyncio.to_thread(disk_use, self._root)
            self._storage_used = max(self._storage_used, used)
            self._storage_walks += 1
            if used > self._storage_limit and not self._storage_hits:
                self._storage_hits = 1
                log.warning(
                    "local sandbox %s: %d bytes written, over the storage cap of %d: killing it",
                    self.spec.trial_id,
                    used,
                    self._storage_limit,
                )
                await self._kill_all()
            pause = max(STORAGE_WATCH_SEC, (time.monotonic() - began) / STORAGE_WATCH_SHARE)

    async def kill_processes(self) -> None:
        await self._kill_all()
        if self._lost is not None:
            raise SandboxError(f"the sandbox was ended from outside: {self._lost}")
        if self._root in self._mounted and self._cap:
            # The agent is gone: the verifier gets room even if the agent filled its cap.
            await asyncio.to_thread(resize, self._root, self._cap + SANDBOX_VERIFIER_RESERVE)
        if self._storage_limit:  # the same room under the watchdog
            self._storage_limit = self._cap + SANDBOX_VERIFIER_RESERVE
        if not self._stopped and self._started:
            await self._new_init()

    async def ended(self) -> SandboxEnd | None:
        # Every command runs in a child PID namespace of the init's: nothing inside sees the
        # init, so nothing inside can end it. An init gone by itself was ended from outside, and
        # so was a command whose own bwrap (a host process) was killed.
        if self._stopped:
            return None
        self._look_at_init()
        return None if self._lost is None else SandboxEnd.OUTSIDE

    def _look_at_init(self) -> None:
        if self._lost is None and self._init.gone():
            self._lost = "its init was killed (by the host, not by anything in the sandbox)"

    def _look_at_exit(self, spawned: Spawned) -> None:
        if spawned.killed_from_outside and self._lost is None:
            self._lost = (
                f"the bwrap process of a command (pid {spawned.proc.pid}) was killed by the host"
            )

    async def _kill_all(self) -> None:
        self._look_at_init()  # before the kill: an init that is gone already was not ours
        await self._init.kill()
        procs = list(self._procs)
        for spawned in procs:
            spawned.kill()
        for spawned in procs:
            with contextlib.suppress(ProcessLookupError):
                await spawned.proc.wait()
            spawned.close()
        self._procs.clear()

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watchdog
        await self._kill_all()
        await asyncio.to_thread(self._limits.remove)
        await asyncio.to_thread(self._remove_tree)

    # -- tampering -------------------------------------------------------------------------

    async def trust_current_changes(self) -> None:
        if self._started and not self._stopped:
            self._baseline = await asyncio.to_thread(snapshot, self._watched)
            self._work_baseline = await asyncio.to_thread(snapshot, self._work_watched)

    async def tamper_evidence(self) -> list[dict[str, str]] | None:
        if self._baseline is None:
            return None
        baseline = self._baseline
        if self._work_baseline is not None:
            self._work_changes = await asyncio.to_thread(
                changes, self._work_watched, self._work_baseline
            )
        return await asyncio.to_thread(self._find_tampering, baseline)

    async def work_changes(self) -> list[Change] | None:
        """The diff of every writable place (workdir, HOME, /tmp, /opt, /srv, /var, the
        /usr/local overlay) against the snapshot taken when the sandbox was ready."""
        return self._work_changes

    async def link_targets(self, paths: Sequence[str]) -> dict[str, str] | None:
        return await asyncio.to_thread(link_targets, self._host_entries(paths))

    def _host_entries(self, paths: Sequence[str]) -> list[HostEntry]:
        entries: list[HostEntry] = []
        for path in paths:
            found = self.bind_for(posixpath.normpath(path))
            if found is not None:
                entries.append(HostEntry(path, found[1], found[2]))
        return entries

    async def export_changes(
        self,
        paths: Sequence[str],
        archive: Path,
        *,
        max_bytes: int,
        link_ok: Callable[[str, str], bool] = lambda path, target: True,
    ) -> ExportReport:
        """From the host folders behind the sandbox's writable places."""
        entries = self._host_entries(paths)
        report = await asyncio.to_thread(
            write_archive, entries, archive, max_bytes=max_bytes, link_ok=link_ok
        )
        listed = {e.path for e in entries}
        report.skipped += [(p, "outside the writable places") for p in paths if p not in listed]
        return report

    def _find_tampering(self, baseline: Snapshot) -> list[dict[str, str]]:
        found = changes(self._watched, baseline)
        if not found:
            return []
        probe = _HostProbe(self)
        return [t.as_dict() for t in find_tampering(found, probe, path=self._env(None)["PATH"])]

    def host_path(self, path: str) -> Path | None:
        """The host file that is sandbox ``path`` (its last component not followed), or None
        when the sandbox does not show it."""
        path = posixpath.normpath(path)
        found = self.bind_for(path)
        if found is not None:
            return found[1] if found[2] == "." else found[1] / found[2]
        for lent, host_folder in self._lent.items():
            if path == lent or path.startswith(lent.rstrip("/") + "/"):
                return host_folder / posixpath.relpath(path, lent)
        first = top(path)
        if first not in (*SYSTEM_TOP_LEVEL, ETC):
            return None
        in_layer = self.layer / path.lstrip("/")
        if os.path.lexists(in_layer):
            return in_layer
        if first == ETC:
            return Path(etc_view()) / posixpath.relpath(path, "/etc")
        return Path(path)

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

    def _layout(self) -> list[str]:
        """bwrap's mount options for the next command, its mount points made right first
        (blocking: run in a thread, one at a time)."""
        with self._layout_lock:
            if self._stopped:
                raise SandboxError("the sandbox is not running")
            layout = mount_args(
                self._top,
                self.layer,
                self._binds,
                masks(self._hidden(), {top(path) for path in self._binds}),
                self._lent,
            )
            # Whatever the agent left at a reserved name of the root (a link, a folder of its
            # own) is gone, and no link is on the way to a mount point in a writable place.
            wanted = stubs(layout, self._top)
            self._fresh |= {
                dest
                for option, dest in itertools.pairwise(layout)
                if option == "--tmpfs" and dest.count("/") == 2 and top(dest) not in self._reserved
            }
            self._reserved |= {
                name for name, kind in wanted.items() if "/" not in name and kind != KEPT
            }
            try:
                prepare(self._top, wanted, self._reserved)
                for path in (*self._binds, *worker_site_dirs(), *self._lent):
                    self._prepare_nested(path)
            except OSError as exc:
                raise SandboxError(f"cannot lay out the sandbox's root: {exc}") from None
            return layout

    def _argv(
        self,
        command: Sequence[str],
        cwd: str | None,
        info_fd: int,
        layout: Sequence[str],
    ) -> list[str]:
        if self._stopped or not self._init.fds:
            raise SandboxError("the sandbox is not running")
        user_fd, pid_fd = self._init.fds
        joins = [] if joins_by_setns() else ["--userns", str(user_fd)]
        argv = [
            *self._limits.wrapper(),  # joins the trial's cgroups, then becomes bwrap
            self._bwrap,
            *NAMESPACE_FLAGS,
            *joins,
            "--pidns",
            str(pid_fd),
            "--unshare-pid",
            "--new-session",
            "--json-status-fd",
            str(info_fd),
        ]
        if not self.spec.internet:
            argv.append("--unshare-net")
        argv += [*layout, "--chdir", cwd or self._workdir, "--", *command]
        return argv

    def _prepare_nested(self, path: str) -> None:
        """A mount point inside another writable place: no link of the agent's on the way."""
        outer = self.bind_for(posixpath.dirname(path))
        if outer is None or outer[0] == "/" or path in (outer[0], "/"):
            return  # not inside a writable bind (a read-only folder, a fresh tmpfs, the root)
        source = self._binds.get(path) or self._lent.get(path) or Path(path)
        prepare_below(
            outer[1],
            posixpath.join(outer[2], posixpath.basename(path)),
            "dir" if source.is_dir() else "file",
        )

    async def _spawn(
        self,
        command: str | Sequence[str],
        cwd: str | None,
        env: Mapping[str, str] | None,
        user: str | None,
        stdin: int,
    ) -> Spawned:
        if self._storage_hits:
            raise SandboxError(
                f"the sandbox was killed: its writable folders took {self._storage_used} bytes, "
                f"over the storage cap of {self._cap}"
            )
        argv_command = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        if user not in (None, "root", "0", "0:0"):
            raise SandboxUnsupported(
                f"user {user!r}: the local sandbox runs everything as root; use the docker environment"
            )
        if self._stopped or not self._init.fds:
            raise SandboxError("the sandbox is not running")
        layout = await asyncio.to_thread(self._layout)
        read_fd, write_fd = os.pipe()
        cancelled = False
        try:
            argv = self._argv(argv_command, cwd, info_fd=write_fd, layout=layout)
            # Never cancelled itself: asyncio's clean-up of a cancelled start kills only the
            # outer bwrap and then waits for the pipes to close, but the command (already in
            # the sandbox's namespace, maybe before bwrap set its parent-death signal) holds
            # them open: the await never ends. So a cancel waits for the start to finish, and
            # the command is then killed like any other.
            starting = asyncio.ensure_future(
                asyncio.create_subprocess_exec(
                    *argv,
                    stdin=stdin,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    env=self._env(env),
                    pass_fds=[*self._init.fds, write_fd],
                    start_new_session=True,
                    limit=STREAM_LIMIT,
                    preexec_fn=self._preexec(),
                )
            )
            while not starting.done():
                try:
                    await asyncio.shield(starting)
                except asyncio.CancelledError:
                    cancelled = True
            proc = starting.result()
        except BaseException:
            os.close(read_fd)
            if cancelled:
                raise asyncio.CancelledError from None
            raise
        finally:
            os.close(write_fd)

        spawned = Spawned(proc, read_fd, self._init.gone)
        self._procs.add(spawned)
        try:
            if cancelled:
                raise asyncio.CancelledError
            await spawned.has_pid.wait()
        except asyncio.CancelledError:
            # Cancelled before we knew the command's pid: learn it, then kill it.
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(spawned.has_pid.wait()), 30)
            spawned.kill()
            spawned.close()
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
        readers = asyncio.gather(drain(reader(proc.stdout), out), drain(reader(proc.stderr), err))
        lost = False
        try:
            async with asyncio.timeout(timeout_sec):
                await feed(proc, stdin)
                code = await spawned.wait()
                lost = spawned.killed_from_outside
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
        if lost:
            self._look_at_exit(spawned)
            raise SandboxError(f"the sandbox was ended from outside: {self._lost}")
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
        return BubblewrapProcess(spawned, self._procs, self._look_at_exit)

    # -- files -----------------------------------------------------------------------------

    def _hidden(self) -> list[Path]:
        """Host folders the sandbox must not show: the task folders, the trial states."""
        hidden = [self.spec.state_dir.parent]
        if self.config.tasks_root is not None:
            hidden.insert(0, self.config.tasks_root)
        return hidden

    async def lend(self, host_folder: Path, sandbox_path: str) -> None:
        self._lent[normalize(sandbox_path)] = host_folder

    def bind_for(self, path: str) -> tuple[str, Path, str] | None:
        """The writable place holding ``path``: (sandbox root, host root, relative path); a
        path under a top-level name that is not reserved is in the sandbox's root folder."""
        best: tuple[str, Path, str] | None = None
        for root, host in self._binds.items():
            inside = path == root or path.startswith(root.rstrip("/") + "/")
            if inside and (best is None or len(root) > len(best[0])):
                best = (root, host, posixpath.relpath(path, root))
        fresh = any(path == f or path.startswith(f"{f}/") for f in self._fresh)
        if best is None and path != "/" and top(path) not in self._reserved and not fresh:
            best = ("/", self._top, path.lstrip("/"))
        return best

    def _on_demand_root(self, path: str) -> str | None:
        roots = (TESTS_DIR, SOLUTION_DIR, self.config.skills_dir, INSTRUCTION_PATH)
        for root in roots:
            if path == root or path.startswith(root.rstrip("/") + "/"):
                return root
        return None

    def _writable_target(self, sandbox_path: str, *, create: bool) -> Path:
        path = normalize(sandbox_path)
        found = self.bind_for(path)
        if found is None and create:
            root = self._on_demand_root(path)
            if root is not None:
                slug = root.strip("/").replace("/", "_") or "root"
                host = self._root / "mounts" / slug
                if root != INSTRUCTION_PATH:
                    host.mkdir(parents=True, exist_ok=True)
                self._ensure_mountpoint(root)
                self._binds[root] = host
                found = self.bind_for(path)
        if found is None:
            writable = ", ".join(sorted({*self._binds, TESTS_DIR, SOLUTION_DIR, INSTRUCTION_PATH}))
            raise SandboxError(
                f"{sandbox_path}: outside the local sandbox's writable places ({writable}, "
                "new top-level folders)"
            )
        return inside(found[1], found[2])

    async def upload(self, host_path: Path, sandbox_path: str) -> None:
        if self._stopped:
            raise SandboxError("the sandbox is stopped")
        if not host_path.exists():
            raise SandboxError(f"upload: {host_path} does not exist")
        target = self._writable_target(sandbox_path, create=True)
        await asyncio.to_thread(copy_in, host_path, target)

    async def download(
        self, sandbox_path: str, host_path: Path, *, budget: CopyBudget | None = None
    ) -> None:
        if self._stopped:
            raise SandboxError("the sandbox is stopped")
        source = self._writable_target(sandbox_path, create=False)
        budget = budget or CopyBudget.default()
        await asyncio.to_thread(copy_out, source, host_path, sandbox_path, budget)


class _HostProbe:
    """:class:`~worker.sandbox.tamper.FileProbe` of a bubblewrap sandbox: its files are host
    files (:meth:`BubblewrapSandbox.host_path`)."""

    def __init__(self, box: BubblewrapSandbox) -> None:
        self.box = box

    def stat(self, path: str) -> PathStat | None:
        return path_stat(self.box.host_path(path))

    def head(self, path: str, limit: int) -> bytes | None:
        return head(self.box.host_path(path), limit)
