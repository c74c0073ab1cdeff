"""The local sandbox's root folder: one per-trial host folder shown as ``/``, so that a new
top-level folder (``/output``) made by one command is there for every later one, the
verifier's included (docs/sandboxes.md, "Writable places").

bwrap mounts everything else over that folder, and it makes each mount point there, following
any symbolic link it finds on the way: a link the agent planted where a mount point goes would
make bwrap create folders or files on the host. So the top-level names the sandbox mounts are
*reserved*: before each command the worker puts exactly the mount point bwrap expects at each
(a folder, an empty file, or the link it makes), removes whatever the agent left at a reserved
name nothing mounts now (``/tests`` before the tests are uploaded, ``/lib32`` on a host without
it), and leaves every other name alone: those are the agent's. A top-level folder that holds
deeper mount points stays the agent's too ("kept": bound on itself), with a fresh tmpfs on each
of its subfolders that holds them (:func:`~worker.sandbox._bubblewrap.host.mount_args`: ``/app``
stays the agent's where the worker's own site folder ``/app/.venv/lib/...`` is lent, only
``/app/.venv`` is fresh); those subfolders are prepared like the reserved names, and no mount
point is made deeper in this folder. A mount point inside a writable folder (a workdir
``/root/a/b``) is made right the same way before each command (:func:`prepare_below`).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Collection, Sequence
from pathlib import Path

from worker.sandbox._bubblewrap.files import remove_tree

# Never the agent's, whatever mounts them: the host's system folders (read-only: a folder the
# host lacks must not appear either, the loader searches /lib64), the kernel's and the
# sandbox's own folders, and the harness's.
ALWAYS_RESERVED = frozenset(
    {
        *("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc"),
        *("proc", "sys", "dev", "run", "tmp", "root", "boot", "lost+found"),
        *("logs", "tests", "solution", "instruction.md"),
    }
)
# bwrap's mount options: how many arguments each takes and which one is the destination.
_TWO_ARGS = {"--bind", "--ro-bind", "--dev-bind", "--symlink", "--bind-try", "--ro-bind-try"}
_ONE_DEST = {"--tmpfs", "--proc", "--dev", "--dir", "--ro-overlay", "--remount-ro", "--mqueue"}
_ONE_OTHER = {"--overlay-src", "--chdir", "--perms", "--size", "--chmod"}

# "dir" (an empty folder), "file" (an empty file), "link:<target>", or "kept": a folder of the
# root bound on itself (the agent's, whatever it holds), so that mount points may go inside it.
Stub = str
KEPT = "kept"


def stubs(args: Sequence[str], root: Path) -> dict[str, Stub]:
    """The mount point bwrap needs at each top-level name of ``root`` that ``args`` (bwrap's
    mount options) mount on, by name; and at ``name/sub`` below a kept one."""
    found: dict[str, Stub] = {}
    below: dict[str, Stub] = {}
    i = 0
    while i < len(args):
        option = args[i]
        if option in _TWO_ARGS:
            source, dest = args[i + 1], args[i + 2]
            i += 3
            if option == "--symlink":
                kind = f"link:{source}"
            elif source == os.path.join(root, dest.strip("/")):
                kind = KEPT
            else:
                kind = "dir" if os.path.isdir(source) else "file"
        elif option in _ONE_DEST:
            dest, kind = args[i + 1], "dir"
            i += 2
        else:
            i += 2 if option in _ONE_OTHER else 1
            continue
        name = dest.strip("/")
        if name and option != "--remount-ro":
            (below if "/" in name else found).setdefault(name, kind)
    kept = {name for name, kind in found.items() if kind == KEPT}
    return {
        **found,
        **{n: k for n, k in below.items() if n.count("/") == 1 and n.split("/")[0] in kept},
    }


def prepare(root: Path, wanted: dict[str, Stub], reserved: Collection[str]) -> None:
    """Make ``root``'s reserved names exactly ``wanted`` (and absent where not wanted), no link
    followed; nothing else is touched."""
    tops = {name for name in wanted if "/" not in name}
    for name in sorted({*reserved, *tops}):
        path = root / name
        kind = wanted.get(name)
        if _is(path, kind):
            continue
        _remove(path)
        if kind in ("dir", KEPT):
            path.mkdir(mode=0o755)
        elif kind == "file":
            path.touch(mode=0o444)
        elif kind is not None:
            os.symlink(kind.removeprefix("link:"), path)
    for name in sorted(set(wanted) - tops):  # inside a kept folder: a folder or file there
        prepare_below(root, name, "file" if wanted[name] == "file" else "dir")


def prepare_below(host_root: Path, rel: str, kind: Stub) -> None:
    """The mount point ``rel`` inside a writable folder (``host_root``): every folder on the way
    a real folder (a link or file the agent put there removed, nothing followed), the last a
    ``kind`` ("dir" or "file"); what a mount point folder holds is left alone."""
    parts = [part for part in rel.split("/") if part not in ("", ".")]
    current = host_root
    for index, part in enumerate(parts):
        current = current / part
        last = index == len(parts) - 1
        want = kind if last else "dir"
        try:
            info = current.lstat()
        except FileNotFoundError:
            info = None
        if info is not None and (
            stat.S_ISDIR(info.st_mode) if want == "dir" else stat.S_ISREG(info.st_mode)
        ):
            continue
        _remove(current)
        if want == "dir":
            current.mkdir(mode=0o755)
        else:
            current.touch(mode=0o444)


def _is(path: Path, kind: Stub | None) -> bool:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return kind is None
    if kind == KEPT:
        return stat.S_ISDIR(info.st_mode)
    if kind == "dir":
        if not stat.S_ISDIR(info.st_mode):
            return False
        with os.scandir(path) as entries:  # a mount point holds nothing (covered, but counted)
            return next(entries, None) is None
    if kind == "file":
        return stat.S_ISREG(info.st_mode) and info.st_size == 0
    if kind is not None and stat.S_ISLNK(info.st_mode):
        return os.readlink(path) == kind.removeprefix("link:")
    return False


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(path.lstat().st_mode):
            remove_tree(path)
        else:
            path.unlink()
