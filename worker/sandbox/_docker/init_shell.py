"""The container's init runs from an execute-only copy of the image's own ``/bin/sh``.

A root agent has no CAP_SYS_PTRACE, but a process of the same uid may ptrace another, read and
write its memory through ``/proc/<pid>/mem``, unless that process is not dumpable. The kernel makes
a process not dumpable when it executes a file it cannot read, so the init runs as an unprivileged
uid from a copy only root can read: root cannot reach it (another uid), and neither can a process
that switches to the init's uid (not dumpable). The copy is planted in the created container
before it starts (the image is not changed) under the harness's ``/.skillsbench-`` prefix, which
the work product never carries.
"""

from __future__ import annotations

import io
import posixpath
import tarfile
import threading
from typing import Any

from worker.sandbox._docker.client import errors as docker_errors
from worker.sandbox.base import SandboxError

INIT_DIR = "/.skillsbench-init"
INIT_SHELL = f"{INIT_DIR}/sh"  # named sh: a busybox picks its applet from the name
MAX_LINKS = 16


def plant_init_shell(client: Any, container_id: str, image_id: str) -> None:
    """Copy the image's ``/bin/sh`` (links followed) to :data:`INIT_SHELL`, mode 0111, root's."""
    with _lock:
        archive = _ARCHIVES.get(image_id)
    if archive is None:
        archive = _archive(_read_shell(client, container_id))
        with _lock:
            _ARCHIVES[image_id] = archive
            while len(_ARCHIVES) > MAX_CACHED:
                del _ARCHIVES[next(iter(_ARCHIVES))]
    try:
        client.api.put_archive(container_id, "/", archive)
    except docker_errors().DockerException as exc:
        raise SandboxError(f"cannot plant the container's init: {exc}") from None


# The archive per image id (an image's content never changes under its id): one read per image
# per process, not per container.
_ARCHIVES: dict[str, bytes] = {}
_lock = threading.Lock()
MAX_CACHED = 64


def _archive(content: bytes) -> bytes:
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        folder = tarfile.TarInfo(INIT_DIR.lstrip("/"))
        folder.type, folder.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(folder)
        shell = tarfile.TarInfo(INIT_SHELL.lstrip("/"))
        shell.size, shell.mode = len(content), 0o111
        tar.addfile(shell, io.BytesIO(content))
    return archive.getvalue()


def _read_shell(client: Any, container_id: str) -> bytes:
    path = "/bin/sh"
    for _ in range(MAX_LINKS):
        try:
            stream, _stat = client.api.get_archive(container_id, path)
            data = b"".join(stream)
        except docker_errors().NotFound:
            raise SandboxError(
                f"the image has no {path}: the container's init needs a shell"
            ) from None
        except docker_errors().DockerException as exc:
            raise SandboxError(f"cannot read the image's {path}: {exc}") from None
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            member = tar.next()
            if member is None:
                break
            if member.issym():
                path = posixpath.normpath(posixpath.join(posixpath.dirname(path), member.linkname))
                continue
            extracted = tar.extractfile(member) if member.isfile() else None
            if extracted is None:
                break
            return extracted.read()
    raise SandboxError(f"the image's /bin/sh is not a file the init can run (at {path})")
