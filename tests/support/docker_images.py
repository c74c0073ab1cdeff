"""Base images for Docker tests, built locally (no registry is reachable), cached by tag.

* ``busybox``: ``FROM scratch`` + Debian's static busybox with its applet links.
* ``python``: busybox + bash + the host's own Debian ``python3.11`` (interpreter, standard
  library and the shared libraries they load). Being the host's CPython 3.11 on the host's glibc,
  pure and binary wheels from the project's virtualenv work inside it too.

``ensure_test_image(client, "python")`` returns the tag and also tags ``python:3.11-slim`` (and
``busybox:latest`` for busybox) when no such image exists, so task Dockerfiles that say
``FROM python:3.11-slim`` build offline. Images we make carry ``skillsbench.test-image=<name>``.
Needs Debian packages that ``make test`` installs where it can (``tests/host-packages.sh``:
busybox-static; python3.11 and bash); where one is missing, the tests that need the image skip,
naming it. Run ``python -m tests.support.docker_images`` to build them ahead of
the test run.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

RECIPE_VERSION = "3"
LABEL = "skillsbench.test-image"
# tests/images/support.py's label: an older run let that base take python:3.11-slim; the
# name is ours (one owner, whatever ran first), so it is taken back.
BASE_LABEL = "skillsbench.test-base"
BUSYBOX = Path("/bin/busybox")
PYTHON = Path("/usr/bin/python3.11")
BASH = Path("/bin/bash")
PACKAGE_OF = {BUSYBOX: "busybox-static", PYTHON: "python3.11", BASH: "bash"}
ALIASES = {"python": ["python:3.11-slim"], "busybox": ["busybox:latest"]}
# Loaded by binary wheels (pydantic-core, ...) and present on python:3.11-slim; ldd of the
# interpreter alone does not pull them all in.
_RUNTIME_LIBRARIES = (
    "libgcc_s.so.1",
    "libstdc++.so.6",
    "librt.so.1",
    "libpthread.so.0",
    "libdl.so.2",
    "libm.so.6",
    "libutil.so.1",
)
_LIBRARY_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64")
_LDD_LINE = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x")


class ImageBuildError(RuntimeError):
    pass


class MissingHostPackage(ImageBuildError):
    """A host file the image is made from is absent: under pytest the test skips, naming it."""


def ensure_test_image(client: Any, name: str) -> str:
    """Build (once, cached by tag) the test image ``name`` ("busybox" or "python"); its tag."""
    import docker

    if name not in ALIASES:
        raise ValueError(f"unknown test image {name!r} (known: {', '.join(ALIASES)})")
    tag = f"skillsbench-test/{name}:{_fingerprint(name)}"
    lock_path = Path(tempfile.gettempdir()) / f"skillsbench-test-image-{name}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # xdist workers build one at a time
        try:
            client.images.get(tag)
        except docker.errors.ImageNotFound:
            _build(client, name, tag)
        for alias in ALIASES[name]:
            _alias(client, tag, alias)
    return tag


def _fingerprint(name: str) -> str:
    sources = [BUSYBOX] + ([PYTHON, BASH] if name == "python" else [])
    digest = hashlib.sha256(RECIPE_VERSION.encode())
    for source in sources:
        if not source.exists():
            reason = (
                f"{source} is missing (Debian package {PACKAGE_OF[source]}; "
                "`make test` installs it when run as root)"
            )
            if "pytest" in sys.modules:
                import pytest

                pytest.skip(reason)
            raise MissingHostPackage(reason)
        info = source.stat()
        digest.update(f"{source}:{info.st_size}:{int(info.st_mtime)}".encode())
    return digest.hexdigest()[:12]


def _alias(client: Any, tag: str, alias: str) -> None:
    import docker

    repo, _, alias_tag = alias.partition(":")
    try:
        existing = client.images.get(alias)
    except docker.errors.ImageNotFound:
        existing = None
    labels = (existing.labels or {}) if existing is not None else {}
    if existing is not None and LABEL not in labels and BASE_LABEL not in labels:
        return  # a real image of that name is here: leave it alone
    client.images.get(tag).tag(repo, alias_tag or "latest")


def _build(client: Any, name: str, tag: str) -> None:
    with tempfile.TemporaryDirectory(prefix=f"sb-image-{name}-") as tmp:
        context = Path(tmp)
        rootfs = context / "rootfs"
        _add_busybox(rootfs)
        if name == "python":
            _add_python(rootfs)
        (context / "Dockerfile").write_text(
            "FROM scratch\n"
            "COPY rootfs/ /\n"
            f'LABEL {LABEL}="{name}"\n'
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8\n"
            'CMD ["sh"]\n'
        )
        client.images.build(path=str(context), tag=tag, rm=True, pull=False, forcerm=True)


def _add_busybox(rootfs: Path) -> None:
    bindir = rootfs / "bin"
    bindir.mkdir(parents=True)
    for sub in (
        "tmp",
        "root",
        "etc",
        "opt",
        "usr/bin",
        "usr/local/bin",
        "sbin",
        "usr/sbin",
        "var/tmp",
    ):
        (rootfs / sub).mkdir(parents=True, exist_ok=True)
    (rootfs / "tmp").chmod(0o1777)
    shutil.copy2(BUSYBOX, bindir / "busybox")
    applets = subprocess.run(
        [str(BUSYBOX), "--list"], capture_output=True, text=True, check=True
    ).stdout.split()
    for applet in applets:
        if applet != "busybox":
            (bindir / applet).symlink_to("busybox")
    (rootfs / "etc" / "passwd").write_text(
        "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
    )
    (rootfs / "etc" / "group").write_text("root:x:0:\nnogroup:x:65534:\n")


def _add_python(rootfs: Path) -> None:
    stdlib = Path("/usr/lib/python3.11")
    skip = shutil.ignore_patterns(
        "test", "tests", "idlelib", "tkinter", "turtledemo", "__pycache__"
    )
    shutil.copytree(stdlib, rootfs / stdlib.relative_to("/"), symlinks=True, ignore=skip)
    for binary in (PYTHON, BASH):
        target = rootfs / binary.relative_to("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists() or target.is_symlink():
            target.unlink()  # /bin/bash replaces busybox's bash applet
        shutil.copy2(binary, target)
    for link in (
        "usr/bin/python3",
        "usr/bin/python",
        "usr/local/bin/python3",
        "usr/local/bin/python",
    ):
        (rootfs / link).symlink_to("/usr/bin/python3.11")
    native = [PYTHON, BASH, *sorted((stdlib / "lib-dynload").glob("*.so"))]
    extra = {
        Path(folder) / name
        for name in _RUNTIME_LIBRARIES
        for folder in _LIBRARY_DIRS
        if (Path(folder) / name).exists()
    }
    for library in _shared_libraries(native) | extra:
        target = rootfs / library.relative_to("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            shutil.copy2(library.resolve(), target)
    # The loader lives at /lib64 on amd64; keep Debian's usrmerge layout.
    for merged in ("lib", "lib64"):
        source = rootfs / merged
        if source.is_dir() and not source.is_symlink():
            shutil.copytree(source, rootfs / "usr" / merged, dirs_exist_ok=True)
            shutil.rmtree(source)
        (rootfs / merged).symlink_to(f"usr/{merged}")


def _shared_libraries(binaries: list[Path]) -> set[Path]:
    found: set[Path] = set()
    for binary in binaries:
        out = subprocess.run(
            ["ldd", str(binary)], capture_output=True, text=True, check=False
        ).stdout
        for match in _LDD_LINE.finditer(out):
            found.add(Path(os.path.normpath(match.group(1))))
    return found


def main() -> int:
    import docker

    client = docker.from_env(timeout=600)
    for name in sys.argv[1:] or list(ALIASES):
        print(ensure_test_image(client, name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
