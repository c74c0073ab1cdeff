"""The local sandbox's writable places beyond the trial's own folders, their storage cap, and
what the agent changed in them (for the tampering rules of :mod:`worker.sandbox.tamper`).

A container gives its agent a writable root; the local sandbox gives it (docs/sandboxes.md,
"Writable places"):

* :data:`FRESH_TOPS` (``/opt``, ``/srv``, ``/var``): fresh, empty, writable per trial (the host's
  are never shown);
* :data:`COPY_ON_WRITE` (``/usr/local``): the host's folder under a per-trial overlay, writable,
  changes kept in the trial's upper folder (only where the worker may mount: root);
* the trial's own folders (workdir, ``/root``, ``/tmp``, ``/logs``) as before;
* ``/`` itself, the trial's root folder: new top-level folders persist there (:mod:`.top`).

Where the worker may mount (root), the whole per-trial tree is one tmpfs of
:attr:`worker.limits.OutputCaps.sandbox_bytes`: past it every write fails with ENOSPC and the
host's disk never grows. Where it may not (or with ``SKILLSBENCH_SANDBOX_STORAGE=watchdog``), a
watchdog measures the tree's allocated blocks (:func:`disk_use`) while the sandbox runs and, past
the cap, kills everything in the sandbox: the trial fails as ``storage_limit``. The overlay is mounted once per trial on the host, so every command of
the sandbox shares one view (an overlay's upper folder must never be shared by two mounts).

What changed is a diff of the watched folders (the overlay's upper folder, the fresh tops, the
verifier's HOME bin and site folders) against a snapshot taken when the sandbox is ready
(and again when the harness installed an agent): one ``lstat`` per entry written there.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import stat
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

from worker.core.limits import STORAGE_MODE_VAR
from worker.sandbox.tamper import Change, ChangeKind, PathStat

log = logging.getLogger(__name__)

# Top-level folders a container has writable that the host's allowlist does not show: fresh and
# empty per trial (``/var`` with the usual subfolders).
FRESH_TOPS = ("/opt", "/srv", "/var")
VAR_FOLDERS = ("cache", "lib", "log", "spool", "tmp")
# Host folders shown copy-on-write per trial (where the worker may mount).
COPY_ON_WRITE = ("/usr/local",)
# What of HOME the verifier may start or import from (tamper.HOME_BIN_DIRS, USER_SITE_ROOT).
HOME_WATCHED = ("/root/.local", "/root/bin")
TMPFS_NAME = "skillsbench-sandbox"  # the source of every tmpfs (reap finds them by it)

_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_REMOUNT = 0x20
_MNT_DETACH = 0x2
_libc = ctypes.CDLL(None, use_errno=True)


def _mount(source: str, target: Path, fstype: str, data: str) -> OSError | None:
    if (
        _libc.mount(
            source.encode(),
            str(target).encode(),
            fstype.encode(),
            _MS_NOSUID | _MS_NODEV,
            data.encode(),
        )
        != 0
    ):
        errno = ctypes.get_errno()
        return OSError(errno, f"mount {fstype} on {target}: {os.strerror(errno)}")
    return None


def _size_options(size: int) -> str:
    # Inodes are kernel memory a tmpfs's size does not count: one per 4 KiB of the cap.
    return f"size={size},nr_inodes={max(size // 4096, 16384)}"


def resize(root: Path, size: int) -> None:
    """Give the tmpfs at ``root`` a new size (what it holds stays); a refusal is logged."""
    flags = _MS_REMOUNT | _MS_NOSUID | _MS_NODEV
    if _libc.mount(b"none", str(root).encode(), b"tmpfs", flags, _size_options(size).encode()) != 0:
        log.warning("local sandbox: cannot resize %s: %s", root, os.strerror(ctypes.get_errno()))


def unmount(target: Path) -> None:
    """Detach ``target`` (lazily: open files keep it until closed); nothing if not mounted."""
    _libc.umount2(str(target).encode(), _MNT_DETACH)


def disk_use(root: Path) -> int:
    """The bytes the files under ``root`` really take on disk (allocated blocks: a sparse file
    counts what it holds, not its length; a file with several links once), links not followed,
    on ``root``'s own file system only (an overlay mounted in it shows the host's folder: what
    the trial wrote there is in its upper folder, which is counted). Entries that vanish while
    walked are skipped."""
    total = 0
    seen: set[tuple[int, int]] = set()
    try:
        device = root.stat().st_dev
    except OSError:
        return 0
    stack = [str(root)]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if info.st_dev != device:
                continue
            if info.st_nlink > 1 and not stat.S_ISDIR(info.st_mode):
                key = (info.st_dev, info.st_ino)
                if key in seen:
                    continue
                seen.add(key)
            total += info.st_blocks * 512
            if stat.S_ISDIR(info.st_mode):
                stack.append(entry.path)
    return total


_warned = False


def mount_capped_root(root: Path, size: int, owner: str, mode: str = "tmpfs") -> bool:
    """A tmpfs of ``size`` bytes at ``root`` (made empty); False where this worker may not mount
    or ``mode`` is not ``tmpfs`` (the watchdog caps the tree then)."""
    global _warned
    root.mkdir(parents=True, exist_ok=True)
    if size <= 0 or mode != "tmpfs":
        return False
    problem = (
        _mount(f"{TMPFS_NAME}-{owner}", root, "tmpfs", f"{_size_options(size)},mode=0755")
        if os.geteuid() == 0
        else OSError("the worker is not root")
    )
    if problem is None:
        return True
    if not _warned:
        _warned = True
        log.warning(
            "local sandbox: no storage cap and /usr/local read-only (%s); run the worker as "
            "root for both, or set %s=watchdog (or auto) for a storage cap without root",
            problem,
            STORAGE_MODE_VAR,
        )
    return False


_refused: set[str] = set()  # copy-on-write folders this host refused (said once each)


def mount_copy_on_write(lower: str, folder: Path) -> Path | None:
    """The overlay of host ``lower`` with ``folder/upper`` on top, mounted at
    ``folder/merged``; None when it cannot be mounted (the folder stays read-only)."""
    if os.geteuid() != 0 or lower in _refused:
        return None
    upper, work, merged = folder / "upper", folder / "work", folder / "merged"
    for path in (upper, work, merged):
        path.mkdir(parents=True, exist_ok=True)
    problem = _mount(
        "overlay", merged, "overlay", f"lowerdir={lower},upperdir={upper},workdir={work}"
    )
    if problem is not None:
        _refused.add(lower)
        log.warning("local sandbox: %s stays read-only (%s)", lower, problem)
        return None
    return merged


def reap_mounts(owner: str) -> int:
    """Detach every tmpfs a crashed worker of ``owner`` left mounted (and the overlays in it)."""
    mine = f"{TMPFS_NAME}-{owner}"
    return _detach(lambda source, _point: source == mine)


def reap_run_mounts(run_id: str) -> int:
    """Detach the capped trees of one run's sandboxes that were never stopped (an attempt killed
    from outside, e.g. a cancelled Ray task): any worker's, found by the run id in their path."""
    marker = f"/{run_id}/"
    return _detach(lambda source, point: source.startswith(f"{TMPFS_NAME}-") and marker in point)


def _detach(wanted: Callable[[str, str], bool]) -> int:
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as table:
        for line in table:
            left, _, right = line.partition(" - ")
            fields, extra = left.split(), right.split()
            if len(fields) > 4 and len(extra) > 1 and wanted(extra[1], fields[4] + "/"):
                found.append(fields[4])
    for point in found:
        unmount(Path(point))
    return len(found)


# -- what changed ---------------------------------------------------------------------------


Signature = tuple[int, int, int, int]  # mode, size, inode, change time (ns)


def _signature(info: os.stat_result) -> Signature:
    return (info.st_mode, info.st_size, info.st_ino, info.st_ctime_ns)


def _is_opaque(folder: Path) -> bool:
    for name in ("trusted.overlay.opaque", "user.overlay.opaque"):
        with contextlib.suppress(OSError):
            if os.getxattr(folder, name, follow_symlinks=False) == b"y":
                return True
    return False


def _is_whiteout(info: os.stat_result) -> bool:
    return stat.S_ISCHR(info.st_mode) and info.st_rdev == 0


@dataclass(frozen=True)
class Watched:
    """One watched folder: ``sandbox`` path, the ``host`` folder holding what was written there
    (an overlay's upper folder, or a plain bind), ``lower``, the host folder under an overlay
    (what existed before), and ``skip``, names of its own entries that are not watched (the
    sandbox root's reserved names: mount points, looked at where they are mounted from)."""

    sandbox: str
    host: Path
    lower: str | None = None
    skip: Collection[str] = ()


def _walk(folder: Path, skip: Collection[str] = ()) -> Iterator[tuple[str, os.stat_result]]:
    """(relative path, lstat) of everything under ``folder`` but its entries named in ``skip``,
    links not followed; ``folder`` itself (relative path "") only when it is a link (the agent
    replaced a watched folder)."""
    try:
        top = folder.lstat()
    except OSError:
        return
    if stat.S_ISLNK(top.st_mode):
        yield "", top
        return
    stack = [(folder, "")]
    while stack:
        here, rel = stack.pop()
        try:
            entries = list(os.scandir(here))
        except OSError:
            continue
        for entry in entries:
            if not rel and entry.name in skip:
                continue
            sub = f"{rel}/{entry.name}" if rel else entry.name
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            yield sub, info
            if stat.S_ISDIR(info.st_mode):
                stack.append((Path(entry.path), sub))


Snapshot = dict[str, Signature]


def snapshot(watched: list[Watched]) -> Snapshot:
    """Every entry of the watched folders with its signature, by sandbox path."""
    return {
        _join(w.sandbox, rel): _signature(info)
        for w in watched
        for rel, info in _walk(w.host, w.skip)
    }


def _join(sandbox: str, rel: str) -> str:
    return f"{sandbox.rstrip('/')}/{rel}" if rel else sandbox


def changes(watched: list[Watched], before: Snapshot) -> list[Change]:
    """What differs from ``before``, as a container engine lists it: an overlay's copy-up of an
    existing file is ``modified``, its whiteout ``deleted``; new entries ``added``."""
    now: dict[str, tuple[Watched, str, os.stat_result]] = {}
    for w in watched:
        for rel, info in _walk(w.host, w.skip):
            now[_join(w.sandbox, rel)] = (w, rel, info)
    found: list[Change] = []
    for path, (w, rel, info) in sorted(now.items()):
        old = before.get(path)
        if old is not None and old == _signature(info):
            continue
        below = w.lower is not None and os.path.lexists(os.path.join(w.lower, rel))
        kind: ChangeKind
        if _is_whiteout(info):
            kind = "deleted"
        else:
            kind = "modified" if old is not None or below else "added"
        found.append(Change(path, kind))
        if below and stat.S_ISDIR(info.st_mode) and _is_opaque(w.host / rel):
            # A folder removed and made anew: what was below it is gone, with no whiteouts.
            with contextlib.suppress(OSError):
                for name in os.listdir(os.path.join(str(w.lower), rel)):
                    if f"{path}/{name}" not in now:
                        found.append(Change(f"{path}/{name}", "deleted"))
    found += [Change(path, "deleted") for path in sorted(set(before) - set(now))]
    return found


def path_stat(host_path: Path | None) -> PathStat | None:
    if host_path is None:
        return None
    try:
        info = host_path.lstat()
    except OSError:
        return None
    link = os.readlink(host_path) if stat.S_ISLNK(info.st_mode) else None
    return PathStat(is_dir=stat.S_ISDIR(info.st_mode), link_target=link)


def head(host_path: Path | None, limit: int) -> bytes | None:
    if host_path is None:
        return None
    with contextlib.suppress(OSError):
        fd = os.open(host_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            return handle.read(limit)
    return None
