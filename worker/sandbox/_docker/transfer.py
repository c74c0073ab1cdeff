"""Files in and out of a container as tar streams (``put_archive``/``get_archive``): nothing
assumes the engine can see the worker's disk (the AgentBeats case: socket mounted into a
container). Downloads carry regular files and folders only."""

from __future__ import annotations

import io
import posixpath
import shutil
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from worker.sandbox._docker.client import errors as docker_errors
from worker.sandbox.base import SandboxError


def put(client: Any, container: str, host_path: Path, target: str) -> None:
    # Members carry the whole target path and extract at "/": the engine creates missing parent
    # folders itself, which saves an exec (`mkdir -p`) per upload.
    prefix = target.lstrip("/")
    with tempfile.TemporaryFile() as buffer:
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            if host_path.is_dir():
                for child in sorted(host_path.iterdir()):
                    arcname = posixpath.join(prefix, child.name) if prefix else child.name
                    tar.add(child, arcname=arcname, filter=_as_root)
            else:
                if not prefix:
                    raise SandboxError("upload: a file cannot replace /")
                tar.add(host_path, arcname=prefix, filter=_as_root)
        buffer.seek(0)
        try:
            if not client.api.put_archive(container, "/", buffer):
                raise SandboxError(f"upload to {target} failed")
        except docker_errors().DockerException as exc:
            raise SandboxError(f"upload to {target} failed: {exc}") from None


def files_archive(files: Mapping[str, Path]) -> bytes:
    """``spec.files`` as one tar to unpack at ``/`` (members carry their whole target path)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for target, source in files.items():
            name = posixpath.normpath(target).lstrip("/")
            if not target.startswith("/") or not name or name == ".":
                raise SandboxError(f"{target}: sandbox paths must be absolute and below /")
            if not source.exists():
                raise SandboxError(f"upload: {source} does not exist")
            tar.add(source, arcname=name, filter=_as_root)
    return buffer.getvalue()


def stage_archive(upload: Path, stdin: bytes) -> bytes:
    """The tar ``scripts/stage.sh`` reads: ``files`` (the upload) and ``stdin``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(upload, arcname="files", filter=_as_root)
        info = _as_root(tarfile.TarInfo("stdin"))
        info.size, info.mode = len(stdin), 0o600
        tar.addfile(info, io.BytesIO(stdin))
    return buffer.getvalue()


def _as_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


_GO_MODE_SYMLINK = 1 << 27
_GO_MODE_DIR = 1 << 31


def get(client: Any, container: str, path: str, host_path: Path) -> None:
    errors = docker_errors()
    try:
        chunks, info = client.api.get_archive(container, path)
    except errors.NotFound:
        raise SandboxError(f"download: {path} does not exist in the sandbox") from None
    except errors.DockerException as exc:
        raise SandboxError(f"download of {path} failed: {exc}") from None
    mode = int(info.get("mode", 0))
    if info.get("linkTarget") or mode & _GO_MODE_SYMLINK:
        raise SandboxError(f"download: {path} is a symbolic link; not followed")
    with tempfile.TemporaryFile() as buffer:
        for chunk in chunks:
            buffer.write(chunk)
        buffer.seek(0)
        with tarfile.open(fileobj=buffer, mode="r|") as tar:
            _extract(tar, posixpath.basename(path.rstrip("/")) or ".", host_path)


def _extract(tar: tarfile.TarFile, top: str, host_path: Path) -> None:
    """Regular files and folders only; links, devices and odd names are skipped."""
    for member in tar:
        name = posixpath.normpath(member.name)
        if name == top:
            rel = ""
        elif name.startswith(top + "/"):
            rel = name[len(top) + 1 :]
        else:
            continue
        if rel.startswith("../") or rel.startswith("/") or "/../" in f"/{rel}/":
            continue
        dest = host_path / rel if rel else host_path
        if member.isdir():
            dest.mkdir(parents=True, exist_ok=True)
        elif member.isreg():
            if any(p.is_symlink() for p in [dest, *dest.parents][: rel.count("/") + 1]):
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            if source is None:
                continue
            with source, open(dest, "wb") as handle:
                shutil.copyfileobj(source, handle)
