"""Files of a bubblewrap sandbox on the host side: paths checked for containment (no symbolic
link followed), copies in and out (out: regular files and folders only), removal."""

from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
import stat
from pathlib import Path

from worker.core.capped import CopyBudget
from worker.sandbox.base import SandboxError


def top(path: str) -> str:
    return path.lstrip("/").split("/", 1)[0]


def is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def normalize(sandbox_path: str) -> str:
    if not sandbox_path.startswith("/"):
        raise SandboxError(f"{sandbox_path}: sandbox paths must be absolute")
    return posixpath.normpath(sandbox_path).replace("//", "/")


def inside(root: Path, relative: str) -> Path:
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


def copy_in(source: Path, target: Path) -> None:
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


def copy_out(source: Path, target: Path, shown: str, budget: CopyBudget) -> None:
    """Sandbox -> host, regular files and folders only: links never reach the host."""
    try:
        info = source.lstat()
    except FileNotFoundError:
        raise SandboxError(f"download: {shown} does not exist in the sandbox") from None
    if stat.S_ISLNK(info.st_mode):
        raise SandboxError(f"download: {shown} is a symbolic link; not followed")
    if stat.S_ISREG(info.st_mode):
        target.parent.mkdir(parents=True, exist_ok=True)
        copy_regular(source, target, shown, budget)
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
                copy_regular(path, dest / name, f"{shown_here}/{name}", budget)


def copy_regular(source: Path, target: Path, shown: str, budget: CopyBudget) -> None:
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as src:
        budget.copy_file(src, os.fstat(fd).st_size, target, posixpath.normpath(shown))


def remove_tree(path: Path) -> None:
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
