"""The local base image the service images need where no registry is reachable: a stand-in for
``python:3.11-slim`` (``skillsbench-agentbeats images build-base``; docs/images.md).

Made from a Debian bookworm rootfs (debootstrap, Debian's Python 3.11) and ``docker import``ed,
so nothing is pulled from an image registry: only Debian packages are downloaded (from
``SKILLSBENCH_TEST_DEBIAN_MIRROR``, default deb.debian.org). It is tagged with a hash of its
recipe (made once, found again by that tag), and the service images are built on it by that tag
(``BASE_IMAGE``). It never takes the name ``python:3.11-slim``: that name has one owner in the
tests (tests/support/docker_images.py's ``python`` image), so which base a task's ``FROM
python:3.11-slim`` gets does not depend on which was made first.

Like the official image it has ``python``, ``pip`` (installing into the system, no PEP 668
guard), ``venv``, CA certificates and ``LANG=C.UTF-8``. Debian bookworm's own Python is 3.11.2,
older than the official image's (3.11.4 added tarfile extraction filters, which our code uses),
so when the interpreter running this is a CPython >= 3.11.4 built for this glibc (pyenv, the
official installer) its standard library goes to /usr/local as in the official image; Debian's
python3 stays as the fallback and provides the shared libraries. Needs root, ``debootstrap``
and the ``docker`` CLI.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SUITE = "bookworm"
PACKAGES = ("python3", "python3-venv", "python3-pip", "python-is-python3", "ca-certificates")
MIRROR = os.environ.get("SKILLSBENCH_TEST_DEBIAN_MIRROR", "http://deb.debian.org/debian")
REPOSITORY = "skillsbench-test/python-base"
LABEL = "skillsbench.test-base"
CHANGES = (
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    'CMD ["python3"]',
)
# Files dropped from the rootfs: docs, caches, and Debian's "externally managed" pip guard.
PRUNE = (
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "var/cache/apt/archives",
    "var/lib/apt/lists",
    "usr/lib/python3.11/EXTERNALLY-MANAGED",
)

_lock = threading.Lock()


@contextlib.contextmanager
def exclusive() -> Iterator[None]:
    """One builder at a time across threads and processes (pytest-xdist workers)."""
    path = Path(tempfile.gettempdir()) / "skillsbench-python-base.lock"
    with _lock, open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


# Parts of the host interpreter's standard library that the image does not need.
STDLIB_SKIP = (
    "site-packages",
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "lib2to3",
    "ensurepip/__pycache__",
)


def host_python() -> Path | None:
    """The prefix of this interpreter when it can serve as the image's /usr/local Python."""
    if sys.version_info[:2] != (3, 11) or sys.version_info < (3, 11, 4):
        return None
    prefix = Path(sys.base_prefix)
    if (
        not (prefix / "bin" / "python3.11").is_file()
        or not (prefix / "lib" / "python3.11").is_dir()
    ):
        return None
    if (
        sysconfig.get_config_var("Py_ENABLE_SHARED")
        and not (prefix / "lib" / "libpython3.11.so.1.0").exists()
    ):
        return None
    return prefix


def recipe_tag() -> str:
    prefix = host_python()
    recipe = json.dumps(
        {
            "suite": SUITE,
            "packages": PACKAGES,
            "changes": CHANGES,
            "prune": PRUNE,
            "python": sys.version if prefix else None,
            "skip": STDLIB_SKIP,
            "v": 2,
        },
        sort_keys=True,
    )
    return f"{REPOSITORY}:{SUITE}-{hashlib.sha256(recipe.encode()).hexdigest()[:12]}"


def unavailable_reason() -> str | None:
    """Why this machine cannot make the base image (None when it can)."""
    if os.geteuid() != 0:
        return "making the local Python base image needs root (debootstrap)"
    if shutil.which("debootstrap") is None:
        return "debootstrap is not installed (Debian package debootstrap; `make test` installs it as root)"
    return None


def ensure_python_base_image(client: Any) -> str:
    """Return the tag of the local Python base image, making it on first use."""
    tag = recipe_tag()
    with exclusive():
        if not has_image(client, tag):
            reason = unavailable_reason()
            if reason is not None:
                raise RuntimeError(reason)
            _build(tag)
    return tag


def has_image(client: Any, ref: str) -> bool:
    import docker.errors

    try:
        client.images.get(ref)
    except docker.errors.ImageNotFound:
        return False
    return True


def _build(tag: str) -> None:
    with tempfile.TemporaryDirectory(prefix="skillsbench-base-") as tmp:
        root = Path(tmp) / "rootfs"
        cmd = [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(PACKAGES)}",
            SUITE,
            str(root),
            MIRROR,
        ]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for rel in PRUNE:
            target = root / rel
            if target.is_dir():
                shutil.rmtree(target)
                target.mkdir()
            elif target.exists():
                target.unlink()
        prefix = host_python()
        if prefix is not None:
            install_host_python(prefix, root)
        import_cmd = ["docker", "import"]
        for change in (*CHANGES, f"LABEL {LABEL}={tag}"):
            import_cmd += ["--change", change]
        tar = subprocess.Popen(
            ["tar", "-C", str(root), "--numeric-owner", "-cf", "-", "."], stdout=subprocess.PIPE
        )
        assert tar.stdout is not None
        subprocess.run([*import_cmd, "-", tag], stdin=tar.stdout, check=True, capture_output=True)
        tar.stdout.close()
        if tar.wait() != 0:
            raise RuntimeError("tar of the base rootfs failed")


def install_host_python(
    prefix: Path, root: Path, version: str = "3.11", default: bool = True
) -> None:
    """Put this CPython into root/usr/local (interpreter, libpython, stdlib; as the default
    ``python3`` with pip, or beside it as ``python<version>`` only)."""
    local = root / "usr" / "local"
    (local / "bin").mkdir(parents=True, exist_ok=True)
    (local / "lib").mkdir(parents=True, exist_ok=True)
    shutil.copy2(prefix / "bin" / f"python{version}", local / "bin" / f"python{version}")
    for lib in (prefix / "lib").glob(f"libpython{version}*.so*"):
        shutil.copy2(lib, local / "lib" / lib.name, follow_symlinks=False)
    stdlib = prefix / "lib" / f"python{version}"
    skipped = (*STDLIB_SKIP, f"config-{version}-x86_64-linux-gnu") if not default else STDLIB_SKIP

    def skip(folder: str, names: list[str]) -> set[str]:
        rel = Path(folder).relative_to(stdlib).as_posix()
        return {n for n in names if (n if rel == "." else f"{rel}/{n}") in skipped}

    shutil.copytree(
        stdlib, local / "lib" / f"python{version}", symlinks=True, ignore=skip, dirs_exist_ok=True
    )
    site = local / "lib" / f"python{version}" / "site-packages"
    site.mkdir(exist_ok=True)
    if not default:
        return
    for name in ("python3", "python"):
        (local / "bin" / name).symlink_to(f"python{version}")
    for item in (stdlib / "site-packages").glob("pip*"):
        if item.is_dir():
            shutil.copytree(item, site / item.name, symlinks=True)
    pip = local / "bin" / "pip"
    pip.write_text(f'#!/bin/sh\nexec /usr/local/bin/python{version} -m pip "$@"\n')
    pip.chmod(0o755)
    (local / "bin" / "pip3").symlink_to("pip")
    subprocess.run(["ldconfig", "-r", str(root)], check=True, capture_output=True)
