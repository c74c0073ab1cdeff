"""Files in and out of a container as tar streams (``put_archive``/``get_archive``): nothing
assumes the engine can see the worker's disk (the AgentBeats case: socket mounted into a
container). Downloads carry regular files and folders only."""

from __future__ import annotations

import io
import posixpath
import tarfile
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from worker.core.capped import ChunkReader, CopyBudget, StreamTooLong
from worker.sandbox._docker.client import errors as docker_errors
from worker.sandbox.archive import ExportReport
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


def get(client: Any, container: str, path: str, host_path: Path, budget: CopyBudget) -> None:
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
    # Streamed, never spooled: the archive holds sparse files expanded.
    stream = ChunkReader(chunks, budget.stream_limit())
    try:
        with tarfile.open(fileobj=stream, mode="r|", bufsize=1 << 20) as tar:
            _extract(tar, posixpath.basename(path.rstrip("/")) or ".", host_path, path, budget)
    except StreamTooLong:
        budget.skip(path, f"the rest: the archive ran past {stream.limit} bytes")
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()


def _extract(
    tar: tarfile.TarFile, top: str, host_path: Path, shown: str, budget: CopyBudget
) -> None:
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
        shown_here = posixpath.join(posixpath.dirname(shown), name)
        if member.isdir():
            if rel and not budget.admit_entry(shown_here):
                continue  # its files are refused too: their folder does not exist
            dest.mkdir(parents=True, exist_ok=True)
        elif member.isreg():
            if any(p.is_symlink() for p in [dest, *dest.parents][: rel.count("/") + 1]):
                continue
            if not rel:
                dest.parent.mkdir(parents=True, exist_ok=True)
            elif not dest.parent.is_dir():
                budget.skip(shown_here, "its folder was not collected")
                continue
            source = tar.extractfile(member)
            if source is None:
                continue
            with source:
                budget.copy_file(source, member.size, dest, shown_here)


def export_entries(
    client: Any,
    container: str,
    paths: Sequence[str],
    archive: Path,
    max_bytes: int,
    link_ok: Callable[[str, str], bool],
) -> ExportReport:
    """:meth:`Sandbox.export_changes` through the engine (``get_archive`` per path, its first
    member only: the path itself, never what a folder holds), for a worker that cannot read
    the container's layer. Owners by number, as :mod:`worker.sandbox.archive` writes them."""
    errors = docker_errors()
    report = ExportReport()
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "w", format=tarfile.GNU_FORMAT) as out:
        for path in paths:
            try:
                chunks, _ = client.api.get_archive(
                    container, path.encode("utf-8", "surrogateescape")
                )
            except errors.NotFound:
                report.skipped.append((path, "gone"))
                continue
            except errors.DockerException as exc:
                raise SandboxError(f"export of {path} failed: {exc}") from None
            stream = ChunkReader(chunks, max_bytes - report.bytes + (1 << 20))
            try:
                with tarfile.open(fileobj=stream, mode="r|") as tar:
                    member = tar.next()
                    if member is None:
                        continue
                    if member.issym() and not link_ok(path, member.linkname):
                        report.skipped.append((path, f"a link to {member.linkname}"))
                        continue
                    if not (member.isfile() or member.isdir() or member.issym()):
                        report.skipped.append((path, "not a file, folder or link"))
                        continue
                    if report.bytes + member.size > max_bytes:
                        report.over_budget = True
                        report.skipped.append((path, "past the work product's byte budget"))
                        continue
                    member.name = path.lstrip("/")
                    member.uname = member.gname = ""
                    data = tar.extractfile(member) if member.isfile() else None
                    out.addfile(member, data)
                    report.bytes += member.size if member.isfile() else 0
                    report.entries += 1
            except StreamTooLong:
                report.over_budget = True
                report.skipped.append((path, "past the work product's byte budget"))
            finally:
                close = getattr(chunks, "close", None)
                if close is not None:
                    close()
    return report
