"""Copy a folder out of the task sandbox with nothing but ``exec`` actions.

The bridge caps each command's output (``limits.max_output_bytes``), so the folder is packed into
a gzipped tar inside the sandbox first, then read back one base64 chunk per turn:

1. ``find … > list; tar -czf /tmp/skillsbench-seed-<id>.tgz -T list`` (names as arguments where
   tar has no ``-T``, as in some busybox builds) — regular files only, on the
   folder's own file system (``-xdev``), without caches and toolchains (``.cache``,
   ``node_modules``, ``.venv``, ``.pyenv``, …) and files over :data:`MAX_FILE_BYTES`; prints the
   archive size.
2. ``tail -c +OFFSET … | head -c CHUNK | base64`` until the archive is read; the last chunk also
   removes the archive.

Anything that goes wrong (missing folder, archive over :data:`MAX_ARCHIVE_BYTES`, more chunks
than the turn budget allows, a truncated chunk) ends the copy with a note; the caller goes on
without the folder.
"""

from __future__ import annotations

import base64
import binascii
import io
import shlex
import shutil
import tarfile
import uuid
from pathlib import Path

from worker.bridge.protocol import ActionResult, ExecAction

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_ARCHIVE_BYTES = 32 * 1024 * 1024
DEFAULT_OUTPUT_LIMIT = 4 * 1024 * 1024  # when the bridge announces no max_output_bytes
COMMAND_TIMEOUT_SEC = 120.0
# caches and toolchains, never task data (a sandbox's /root may hold an interpreter under .pyenv)
_PRUNED = (
    ".cache",
    "node_modules",
    "__pycache__",
    ".venv",
    ".pyenv",
    ".rustup",
    ".cargo",
    ".nvm",
    ".npm",
    ".local",
    ".conda",
)


def chunk_size(max_output_bytes: int | None) -> int:
    """Raw bytes per chunk whose base64 text fits the bridge's output limit."""
    limit = max_output_bytes or DEFAULT_OUTPUT_LIMIT
    return max(3, (limit // 4) * 3 - 3)


class FolderFetch:
    """One folder's copy: :meth:`next_action` to send, :meth:`feed` with its result, repeat."""

    def __init__(self, name: str, remote: str, local: Path, chunk: int, max_chunks: int) -> None:
        self.name = name
        self.remote = remote
        self.local = local
        self.note: str | None = None  # why the copy was given up, if it was
        self._chunk = chunk
        self._max_chunks = max_chunks
        self._archive = f"/tmp/skillsbench-seed-{uuid.uuid4().hex[:12]}.tgz"
        self._size: int | None = None
        self._data = bytearray()
        self.done = False

    def next_action(self) -> ExecAction:
        assert not self.done
        if self._size is None:
            return ExecAction(command=self._pack_command(), timeout_sec=COMMAND_TIMEOUT_SEC)
        offset = len(self._data)
        archive = shlex.quote(self._archive)
        command = f"tail -c +{offset + 1} {archive} | head -c {self._chunk} | base64 | tr -d '\\n'"
        if offset + self._chunk >= self._size:
            command += f"; rm -f {archive}"
        return ExecAction(command=command, timeout_sec=COMMAND_TIMEOUT_SEC)

    def feed(self, result: ActionResult | None) -> None:
        """Take the result of the action :meth:`next_action` gave."""
        if result is None or result.error or result.exit_code != 0 or result.truncated:
            why = "was truncated" if result is not None and result.truncated else "failed"
            return self._give_up(f"copying the {self.name} folder {why}")
        if self._size is None:
            return self._sized(result.stdout)
        try:
            piece = base64.b64decode(result.stdout, validate=True)
        except binascii.Error:
            return self._give_up(f"a chunk of the {self.name} folder was not base64")
        expected = min(self._chunk, self._size - len(self._data))
        if len(piece) != expected:
            return self._give_up(f"a chunk of the {self.name} folder was short")
        self._data += piece
        if len(self._data) >= self._size:
            self.done = True

    def unpack(self) -> None:
        """Write the copy into ``local`` (blocking; run it in a thread)."""
        self.local.mkdir(parents=True, exist_ok=True)
        if self.note is not None or not self._data:
            return
        try:
            with tarfile.open(fileobj=io.BytesIO(bytes(self._data)), mode="r:gz") as tar:
                if hasattr(tarfile, "data_filter"):  # CPython >= 3.11.4 (and 3.12+)
                    tar.extractall(self.local, filter="data")
                else:  # Debian 12's 3.11.2: the same rule for what this copy holds, by hand
                    _extract_plain(tar, self.local)
        except (tarfile.TarError, OSError) as exc:
            self.note = f"the {self.name} copy could not be unpacked ({type(exc).__name__})"

    def _sized(self, stdout: str) -> None:
        try:
            size = int(stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return self._give_up(f"copying the {self.name} folder failed")
        if size > MAX_ARCHIVE_BYTES:
            return self._give_up(f"the {self.name} folder is too large to copy ({size} bytes)")
        chunks = -(-size // self._chunk)
        if chunks > self._max_chunks:
            return self._give_up(
                f"the {self.name} folder needs {chunks} turns to copy, more than the turn budget"
            )
        self._size = size
        self.done = size == 0

    def _give_up(self, why: str) -> None:
        self.note = why
        self.done = True

    def _pack_command(self) -> str:
        prune = " -o ".join(f"-name {shlex.quote(n)}" for n in _PRUNED)
        archive = shlex.quote(self._archive)
        listing = shlex.quote(self._archive + ".list")
        # `tar -T` reads the names from a file; busybox builds without it take them as
        # arguments instead (one per line: IFS is a newline, globbing off).
        return (
            f"cd {shlex.quote(self.remote)} && "
            f"find . -xdev \\( {prune} \\) -prune -o -type f -size -{MAX_FILE_BYTES // 1024}k -print"
            f" > {listing} && {{ if [ ! -s {listing} ]; then : > {archive}; "
            f"elif ! tar -czf {archive} -T {listing} 2>/dev/null; then "
            f"IFS='\n'; set -f; tar -czf {archive} $(cat {listing}); fi; }} && "
            f"rm -f {listing} && s=$(wc -c < {archive}) && "
            f'if [ "$s" -gt {MAX_ARCHIVE_BYTES} ] || [ "$s" -eq 0 ]; then rm -f {archive}; fi && '
            'echo "$s"'
        )


def _extract_plain(tar: tarfile.TarFile, target: Path) -> None:
    """Regular files and folders only, each inside ``target`` (what ``filter="data"`` keeps of
    a workspace copy; links, devices and escaping names are skipped)."""
    root = target.resolve()
    for member in tar.getmembers():
        dest = (root / member.name).resolve()
        if not dest.is_relative_to(root) or not (member.isfile() or member.isdir()):
            continue
        if member.isdir():
            dest.mkdir(parents=True, exist_ok=True)
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        source = tar.extractfile(member)
        if source is None:
            continue
        with source, open(dest, "wb") as handle:
            shutil.copyfileobj(source, handle)
        dest.chmod(member.mode & 0o755 | 0o600)
