"""A tar of chosen sandbox paths, read from the host side (the agent's processes are dead, and
nothing inside the sandbox takes part, so nothing in it can change or add to what is written).

Each entry is written as itself (a folder without its contents, a link as a link, never
followed); owners go by number (no names, which the sandbox's ``/etc/passwd`` could map
elsewhere). A path whose host folders above it hold a link, a special file, or anything past
the byte budget is skipped and said so.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tarfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class ExportReport:
    """What :func:`write_archive` wrote and what it left out (path, why)."""

    entries: int = 0
    bytes: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    over_budget: bool = False


@dataclass(frozen=True)
class HostEntry:
    """Sandbox ``path``, found on the host at ``root`` / ``rel`` (``root`` is trusted, the
    folders of ``rel`` are checked)."""

    path: str
    root: Path
    rel: str

    @property
    def host(self) -> Path:
        return self.root / self.rel if self.rel not in ("", ".") else self.root


def _inside(entry: HostEntry) -> bool:
    parent = os.path.dirname(entry.rel)
    real_root = os.path.realpath(entry.root)
    expected = os.path.normpath(os.path.join(real_root, parent)) if parent else real_root
    return os.path.realpath(os.path.join(entry.root, parent)) == expected


def write_archive(
    entries: Iterable[HostEntry],
    archive: Path,
    *,
    max_bytes: int,
    link_ok: Callable[[str, str], bool] = lambda path, target: True,
) -> ExportReport:
    """Write ``entries`` to the tar file ``archive``; ``link_ok(path, target)`` decides whether
    a link goes in."""
    report = ExportReport()
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "w", format=tarfile.GNU_FORMAT) as tar:
        for entry in entries:
            arcname = entry.path.lstrip("/")
            if not arcname:
                continue
            if not _inside(entry):
                report.skipped.append((entry.path, "a link in the folders above it"))
                continue
            host = entry.host
            try:
                info = os.lstat(host)
            except OSError:
                report.skipped.append((entry.path, "gone"))
                continue
            mode = info.st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                report.skipped.append((entry.path, "not a file, folder or link"))
                continue
            if stat.S_ISLNK(mode):
                target = os.readlink(host)
                if not link_ok(entry.path, target):
                    report.skipped.append((entry.path, f"a link to {target}"))
                    continue
            size = info.st_size if stat.S_ISREG(mode) else 0
            if report.bytes + size > max_bytes:
                report.over_budget = True
                report.skipped.append((entry.path, "past the work product's byte budget"))
                continue
            tarinfo = _tarinfo(info, arcname, host)
            if stat.S_ISREG(mode):
                try:
                    fd = os.open(host, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                except OSError as exc:
                    report.skipped.append((entry.path, f"unreadable: {exc.strerror}"))
                    continue
                with os.fdopen(fd, "rb") as handle:
                    tarinfo.size = os.fstat(fd).st_size
                    if report.bytes + tarinfo.size > max_bytes:
                        report.over_budget = True
                        report.skipped.append((entry.path, "past the work product's byte budget"))
                        continue
                    tar.addfile(tarinfo, handle)
                    report.bytes += tarinfo.size
            else:
                tar.addfile(tarinfo)
            report.entries += 1
    return report


def _tarinfo(info: os.stat_result, arcname: str, host: Path) -> tarfile.TarInfo:
    tarinfo = tarfile.TarInfo(arcname)
    tarinfo.mode = stat.S_IMODE(info.st_mode)
    tarinfo.uid, tarinfo.gid = info.st_uid, info.st_gid
    tarinfo.uname = tarinfo.gname = ""
    tarinfo.mtime = int(info.st_mtime)
    if stat.S_ISDIR(info.st_mode):
        tarinfo.type = tarfile.DIRTYPE
    elif stat.S_ISLNK(info.st_mode):
        tarinfo.type = tarfile.SYMTYPE
        tarinfo.linkname = os.readlink(host)
    else:
        tarinfo.type = tarfile.REGTYPE
    return tarinfo


def link_targets(entries: Iterable[HostEntry]) -> dict[str, str]:
    """The links among ``entries`` with their targets (host ``lstat``, nothing followed)."""
    found: dict[str, str] = {}
    for entry in entries:
        with contextlib.suppress(OSError):
            if _inside(entry) and stat.S_ISLNK(os.lstat(entry.host).st_mode):
                found[entry.path] = os.readlink(entry.host)
    return found


def keep_only(archive: Path, keep: set[str]) -> Path:
    """A copy of ``archive`` holding only the entries whose sandbox paths ``keep`` lists."""
    kept = archive.with_name(archive.name + ".applied")
    with tarfile.open(archive) as source, tarfile.open(kept, "w", format=tarfile.GNU_FORMAT) as out:
        for member in source:
            if "/" + member.name.lstrip("/") in keep:
                data = source.extractfile(member) if member.isfile() else None
                out.addfile(member, data)
    return kept


def remove_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
