"""The local sandbox's resource limits: ``memory_mb``, ``cpus`` and the process cap, with what
this host offers (probed once per worker process, best first):

* **cgroup v2, delegated**: the worker's own cgroup (``/proc/self/cgroup``'s ``0::`` line) is
  writable and offers the ``memory``, ``cpu`` and ``pids`` controllers; one child cgroup per
  trial gets ``memory.max`` (``memory.swap.max`` 0), ``cpu.max`` and ``pids.max``. When the
  worker's own cgroup cannot enable controllers for children because the worker sits in it (the
  "no internal processes" rule) and it is alone there, the worker first moves itself into a leaf
  child, ``skillsbench-worker``;
* **cgroup v1** (a root worker with the v1 hierarchies mounted): a child of the worker's own
  cgroup in each of the ``memory`` (``memory.limit_in_bytes``, and ``memory.memsw.limit_in_bytes``
  where swap is accounted), ``cpu`` (``cpu.cfs_quota_us`` over ``cpu.cfs_period_us``) and
  ``pids`` (``pids.max``) hierarchies;
* else **rlimits and CPU affinity**, which are approximate and said to be: ``RLIMIT_AS`` bounds
  each process's *virtual* memory (not the trial's resident memory; runtimes that reserve large
  address spaces, such as Node.js, the JVM or Go, may fail under it), ``RLIMIT_NPROC`` counts
  every process of the worker's user on the host, not the trial's (and is not enforced for root,
  so it is not set then), and the CPU limit becomes an affinity to ``ceil(cpus)`` CPUs shared
  with other trials. Out-of-memory and process-cap hits cannot be told apart from other
  failures then.

Every bwrap process of a sandbox (its init and each command) joins the trial's cgroups before it
executes bwrap, so everything the sandbox runs is counted there, whatever it forks: it starts as
the host's ``/bin/sh`` running :data:`JOIN_SCRIPT`, which writes ``0`` ("this process") into each
``cgroup.procs`` and then becomes bwrap. (A Python ``preexec_fn`` would do the same, but it makes
the worker ``fork()`` its whole address space instead of ``vfork()``: that doubled the cost of an
``exec`` on a loaded host. The rlimit fallback, rarely used, still sets its limits that way.) Cgroups are named
``skillsbench-<owner>/<run id>+<trial id>``: ``stop()`` kills what is left in them and removes
them, and the reaper removes those a killed worker left.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import math
import os
import resource
import signal
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

from worker.sandbox._bubblewrap.process import Pidfd

CGROUP_MOUNTS = "/proc/self/mounts"
# Arguments: cgroup.procs files, "--", then the command to become.
JOIN_SCRIPT = 'while [ "$1" != -- ]; do echo 0 > "$1" || exit 125; shift; done; shift; exec "$@"'

V1_CONTROLLERS = ("memory", "cpu", "pids")
V2_CONTROLLERS = ("memory", "cpu", "pids")
CFS_PERIOD_US = 100_000
REMOVE_WAIT_SEC = 5.0


@dataclass(frozen=True)
class Host:
    """What this host offers: ``kind`` (``cgroup2``, ``cgroup1`` or ``rlimit``) and, for
    cgroups, the folder under which each controller's trial cgroups are made (v2: one folder,
    under the key ``""``)."""

    kind: str
    bases: dict[str, Path]

    def mechanisms(self) -> dict[str, str | None]:
        if self.kind == "cgroup2":
            return {
                "memory": "cgroup v2 memory.max",
                "cpus": "cgroup v2 cpu.max",
                "pids": "cgroup v2 pids.max",
            }
        if self.kind == "cgroup1":
            return {
                "memory": "cgroup v1 memory.limit_in_bytes",
                "cpus": "cgroup v1 cpu.cfs_quota_us",
                "pids": "cgroup v1 pids.max",
            }
        return {
            "memory": "approximate: RLIMIT_AS per process (virtual memory)",
            "cpus": "approximate: CPU affinity to whole CPUs",
            "pids": None if os.geteuid() == 0 else "approximate: RLIMIT_NPROC per host user",
        }


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, file system type, options) of every cgroup mount."""
    found = []
    try:
        with open(CGROUP_MOUNTS, encoding="utf-8", errors="replace") as table:
            for line in table:
                fields = line.split()
                if len(fields) >= 4 and fields[2] in ("cgroup", "cgroup2"):
                    found.append((fields[1], fields[2], set(fields[3].split(","))))
    except OSError:
        pass
    return found


def _own_paths() -> dict[str, str]:
    """This process's cgroup per v1 controller, and its v2 cgroup under ``""``."""
    paths: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as table:
            for line in table:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                for name in controllers.split(",") if controllers else [""]:
                    paths[name] = path
    except (OSError, ValueError):
        pass
    return paths


def _writable_dir(path: Path) -> bool:
    probe = path / f"skillsbench-probe-{os.getpid()}"
    try:
        probe.mkdir()
    except FileExistsError:
        pass
    except OSError:
        return False
    with contextlib.suppress(OSError):
        probe.rmdir()
    return True


def _probe_v2(mounts: list[tuple[str, str, set[str]]], own: dict[str, str]) -> Path | None:
    mount = next((m for m, kind, _ in mounts if kind == "cgroup2"), None)
    if mount is None or "" not in own:
        return None
    base = Path(mount) / own[""].lstrip("/")
    try:
        available = set((base / "cgroup.controllers").read_text().split())
        enabled = set((base / "cgroup.subtree_control").read_text().split())
    except OSError:
        return None
    if not set(V2_CONTROLLERS) <= available or not _writable_dir(base):
        return None
    wanted = " ".join(f"+{c}" for c in V2_CONTROLLERS if c not in enabled)
    if not wanted:
        return base
    try:
        (base / "cgroup.subtree_control").write_text(wanted)
        return base
    except OSError as exc:
        if exc.errno != errno.EBUSY:
            return None
    # The worker sits in its own cgroup: alone there, it moves into a leaf of its own.
    try:
        procs = (base / "cgroup.procs").read_text().split()
        if procs != [str(os.getpid())]:
            return None
        leaf = base / "skillsbench-worker"
        leaf.mkdir(exist_ok=True)
        (leaf / "cgroup.procs").write_text("0")
        (base / "cgroup.subtree_control").write_text(wanted)
    except OSError:
        return None
    return base


def _probe_v1(mounts: list[tuple[str, str, set[str]]], own: dict[str, str]) -> dict[str, Path]:
    bases: dict[str, Path] = {}
    for controller in V1_CONTROLLERS:
        mount = next(
            (m for m, kind, opts in mounts if kind == "cgroup" and controller in opts), None
        )
        if mount is None or controller not in own:
            return {}
        base = Path(mount) / own[controller].lstrip("/")
        if not _writable_dir(base):
            return {}
        bases[controller] = base
    return bases


@functools.cache
def host() -> Host:
    """The best mechanism this host offers (probed once)."""
    mounts = _mounts()
    own = _own_paths()
    v2 = _probe_v2(mounts, own)
    if v2 is not None:
        return Host("cgroup2", {"": v2})
    v1 = _probe_v1(mounts, own)
    if v1:
        return Host("cgroup1", v1)
    return Host("rlimit", {})


def own_memory_limit_mb() -> int | None:
    """The memory limit of the worker's own cgroup (v2 ``memory.max``, v1
    ``memory.limit_in_bytes``) in MB, when it has one: trials cannot get more than that."""
    mounts = _mounts()
    own = _own_paths()
    candidates = []
    for mount, kind, opts in mounts:
        if kind == "cgroup2" and "" in own:
            candidates.append(Path(mount) / own[""].lstrip("/") / "memory.max")
        elif kind == "cgroup" and "memory" in opts and "memory" in own:
            candidates.append(Path(mount) / own["memory"].lstrip("/") / "memory.limit_in_bytes")
    for path in candidates:
        try:
            value = path.read_text().strip()
        except OSError:
            continue
        if value.isdigit() and int(value) < 1 << 60:  # v1 says "no limit" with a huge number
            return int(value) >> 20
    return None


def group_name(run_id: str, trial_id: str, state_dir: Path) -> str:
    """``<run>+<trial>+<place>``: the run first (:func:`reap`, :func:`reap_run`), and a digest of
    the sandbox's state folder, so that two sandboxes never share a group even where their ids
    do (a group's removal kills all it holds: another sandbox's init and commands with it)."""
    place = hashlib.sha256(str(state_dir).encode()).hexdigest()[:12]
    return f"{run_id}+{trial_id}+{place}".replace("/", "_")


def _owner_dir(base: Path, owner: str) -> Path:
    return base / f"skillsbench-{owner or 'local'}"


class TrialLimits:
    """One sandbox's limits: made by :meth:`create`, joined by every bwrap process through
    :meth:`preexec`, read by :meth:`events`, removed by :meth:`remove`."""

    def __init__(
        self, *, owner: str, name: str, cpus: float, memory_mb: int, pids_limit: int
    ) -> None:
        self.host = host()
        self.cpus = cpus
        self.memory_bytes = memory_mb * 1024 * 1024
        self.pids_limit = pids_limit
        self.dirs: dict[str, Path] = {
            controller: _owner_dir(base, owner) / name
            for controller, base in self.host.bases.items()
        }
        self._joined = False

    def create(self) -> None:
        """Make the trial's cgroups and set their limits (OSError when the host refuses)."""
        for controller, folder in self.dirs.items():
            folder.mkdir(parents=True, exist_ok=True)
            if self.host.kind == "cgroup2":
                self._write(folder, "memory.max", str(self.memory_bytes))
                with contextlib.suppress(OSError):  # absent without swap accounting
                    self._write(folder, "memory.swap.max", "0")
                quota = max(1000, int(self.cpus * CFS_PERIOD_US))
                self._write(folder, "cpu.max", f"{quota} {CFS_PERIOD_US}")
                self._write(folder, "pids.max", str(self.pids_limit))
            elif controller == "memory":
                self._write(folder, "memory.limit_in_bytes", str(self.memory_bytes))
                with contextlib.suppress(OSError):  # absent without swap accounting
                    self._write(folder, "memory.memsw.limit_in_bytes", str(self.memory_bytes))
            elif controller == "cpu":
                self._write(folder, "cpu.cfs_period_us", str(CFS_PERIOD_US))
                self._write(
                    folder, "cpu.cfs_quota_us", str(max(1000, int(self.cpus * CFS_PERIOD_US)))
                )
            elif controller == "pids":
                self._write(folder, "pids.max", str(self.pids_limit))
        self._joined = bool(self.dirs)

    @staticmethod
    def _write(folder: Path, name: str, value: str) -> None:
        (folder / name).write_text(value)

    def wrapper(self) -> list[str]:
        """The start of every bwrap argv: ``/bin/sh`` joining the trial's cgroups, then becoming
        the rest of the argv (``[]`` without cgroups)."""
        if not self._joined:
            return []
        procs = [str(folder / "cgroup.procs") for folder in self.dirs.values()]
        return ["/bin/sh", "-c", JOIN_SCRIPT, "skillsbench-limits", *procs, "--"]

    def preexec(self) -> Callable[[], None] | None:
        """Without cgroups: run in a forked child before it executes bwrap, setting the rlimits
        and the CPU affinity (None with cgroups: see :meth:`wrapper`)."""
        if self.dirs:
            return None
        memory = self.memory_bytes
        nproc = self.pids_limit if os.geteuid() != 0 else None
        allowed = sorted(os.sched_getaffinity(0))
        cpus = allowed[: max(1, min(len(allowed), math.ceil(self.cpus)))]

        def limit() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
            if nproc is not None:
                resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
            os.sched_setaffinity(0, cpus)

        return limit

    def events(self) -> dict[str, int] | None:
        """``oom_kills`` and ``pids_max_hits`` so far; None without cgroups."""
        if not self.dirs:
            return None
        if self.host.kind == "cgroup2":
            folder = self.dirs[""]
            return {
                "oom_kills": _field(folder / "memory.events", "oom_kill"),
                "pids_max_hits": _field(folder / "pids.events", "max"),
            }
        return {
            "oom_kills": _field(self.dirs["memory"] / "memory.oom_control", "oom_kill"),
            "pids_max_hits": _field(self.dirs["pids"] / "pids.events", "max"),
        }

    def remove(self) -> None:
        """Kill what is left in the trial's cgroups and remove them; idempotent."""
        self._joined = False
        for folder in self.dirs.values():
            remove_group(folder)


def _kill_members(folder: Path, pids: list[str]) -> None:
    """SIGKILL what ``folder`` holds. cgroup v2's ``cgroup.kill`` does it at once. Otherwise
    each listed pid is held by a pidfd and signalled only if that process is still a member:
    thousands of pids take a while to signal, and on a busy host a pid freed in the meantime
    is soon another process's (pid_max wraps), which a kill by number would reach."""
    if (folder / "cgroup.kill").exists():  # cgroup v2, Linux >= 5.14
        with contextlib.suppress(OSError):  # the group went meanwhile
            (folder / "cgroup.kill").write_text("1")
        return
    mark = f"/{folder.parent.name}/{folder.name}"
    for text in pids:
        try:
            pid = int(text)
        except ValueError:
            continue
        if not Pidfd.supported():  # Linux < 5.3: by number, as soon as listed
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            continue
        held = Pidfd.open(pid)
        if held is None:
            continue
        try:
            try:
                lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
            except OSError:
                continue
            member = any(line.endswith(mark) or f"{mark}/" in line for line in lines)
            # alive after the read: the pid was this process's while /proc was read
            if member and held.alive():
                held.kill()
        finally:
            held.close()


def _field(path: Path, name: str) -> int:
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == name:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def remove_group(folder: Path) -> bool:
    """SIGKILL every process in the cgroup ``folder`` until it is empty, then remove it."""
    deadline = time.monotonic() + REMOVE_WAIT_SEC
    while True:
        try:
            pids = (folder / "cgroup.procs").read_text().split()
        except FileNotFoundError:
            return True
        except OSError:
            pids = []
        if pids:
            _kill_members(folder, pids)
        try:
            folder.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)


def _owned(owner: str) -> Iterator[Path]:
    for base in host().bases.values():
        folder = _owner_dir(base, owner)
        with contextlib.suppress(OSError):
            yield from (child for child in folder.iterdir() if child.is_dir())


def reap(owner: str, keep_runs: Collection[str]) -> int:
    """Remove the trial cgroups ``owner`` left whose run is not in ``keep_runs``; how many."""
    removed = 0
    for folder in list(_owned(owner)):
        if folder.name.split("+", 1)[0] not in keep_runs:
            removed += remove_group(folder)
    return removed


def reap_run(run_id: str) -> int:
    """Remove the trial cgroups of ``run_id`` (run ids are unique: whichever worker made them)."""
    removed = 0
    for base in host().bases.values():
        for folder in base.glob(f"skillsbench-*/{run_id}+*"):
            removed += remove_group(folder)
    return removed


def chain(*steps: Callable[[], None] | None) -> Callable[[], None] | None:
    """One ``preexec_fn`` doing ``steps`` in order (None when there are none)."""
    todo = [step for step in steps if step is not None]
    if not todo:
        return None
    if len(todo) == 1:
        return todo[0]

    def run() -> None:
        for step in todo:
            step()

    return run
