"""A local stand-in for `python:3.11-slim`, for a Docker Engine that reaches no registry.

Made from a Debian bookworm rootfs (debootstrap, Debian's Python 3.11) and `docker import`ed, so
nothing is pulled from an image registry: only Debian packages are downloaded. It is tagged with a
hash of its recipe (cached across runs) and, when that tag is free or already ours, also as
`python:3.11-slim`, the base that the example tasks and the service Dockerfiles name.

Like the official image it has `python`, `pip` (installing into the system, no PEP 668 guard),
`venv`, CA certificates and `LANG=C.UTF-8`. Needs root and `debootstrap` (tests/images/setup.sh).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SUITE = "bookworm"
PACKAGES = ("python3", "python3-venv", "python3-pip", "python-is-python3", "ca-certificates")
MIRROR = os.environ.get("SKILLSBENCH_TEST_DEBIAN_MIRROR", "http://deb.debian.org/debian")
PUBLIC_ALIAS = "python:3.11-slim"
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
def _exclusive() -> Iterator[None]:
    """One builder at a time across threads and processes (pytest-xdist workers)."""
    path = Path(tempfile.gettempdir()) / "skillsbench-python-base.lock"
    with _lock, open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def recipe_tag() -> str:
    recipe = json.dumps(
        {"suite": SUITE, "packages": PACKAGES, "changes": CHANGES, "prune": PRUNE, "v": 1},
        sort_keys=True,
    )
    return f"{REPOSITORY}:{SUITE}-{hashlib.sha256(recipe.encode()).hexdigest()[:12]}"


def unavailable_reason() -> str | None:
    """Why this machine cannot make the base image (None when it can)."""
    if os.geteuid() != 0:
        return "making the local Python base image needs root (debootstrap)"
    if shutil.which("debootstrap") is None:
        return "debootstrap is not installed (run tests/images/setup.sh)"
    return None


def ensure_python_base_image(client: Any, alias: bool = True) -> str:
    """Return the tag of the local Python base image, making it on first use."""
    tag = recipe_tag()
    with _exclusive():
        if not _has_image(client, tag):
            reason = unavailable_reason()
            if reason is not None:
                raise RuntimeError(reason)
            _build(tag)
        if alias:
            _alias(client, tag)
    return tag


def _has_image(client: Any, ref: str) -> bool:
    import docker.errors

    try:
        client.images.get(ref)
    except docker.errors.ImageNotFound:
        return False
    return True


def _alias(client: Any, tag: str) -> None:
    """Tag as python:3.11-slim unless a different (e.g. genuinely pulled) image holds the name."""
    import docker.errors

    ours = client.images.get(tag)
    try:
        current = client.images.get(PUBLIC_ALIAS)
    except docker.errors.ImageNotFound:
        current = None
    if current is not None and current.id == ours.id:
        return
    if current is not None and LABEL not in (current.labels or {}):
        return
    repository, _, version = PUBLIC_ALIAS.partition(":")
    ours.tag(repository, version)


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


if __name__ == "__main__":
    import docker

    print(ensure_python_base_image(docker.from_env(timeout=600)))
