"""ACP ``fs/read_text_file`` and ``fs/write_text_file`` performed in the trial's sandbox.

When the caller names allowed roots, the path is resolved *inside the sandbox* (``realpath -m``,
or the same walk in plain sh where there is none: ``scripts/canonical.sh``; either follows every
existing symlink) and refused unless it stays under one of them, so a symlink planted in the
workspace cannot redirect a write outside it.
"""

from __future__ import annotations

from collections.abc import Sequence

from worker.sandbox.base import Sandbox
from worker.sandbox.scripts import shell_script

MAX_READ_BYTES = 10 << 20


class PathRefused(ValueError):
    """The path leaves the allowed roots (after resolving symlinks in the sandbox)."""


class SandboxFileError(OSError):
    """The sandbox could not read or write the file."""


_SCRIPTS = "worker.acp.scripts"
# canon(): the walk (``scripts/canonical.sh``).
CANONICAL = shell_script(_SCRIPTS, "canonical.sh")
# Arguments: print|read|write, the path, the allowed roots (``scripts/resolve.sh``).
RESOLVE = shell_script(_SCRIPTS, "canonical.sh", "resolve.sh")


async def read_text_file(
    sandbox: Sandbox,
    path: str,
    *,
    within: Sequence[str] = (),
    line: int | None = None,
    limit: int | None = None,
    user: str | None = None,
) -> str:
    result = await sandbox.exec(
        ["sh", "-c", RESOLVE, "sh", "read", path, *within],
        user=user,
        max_output_bytes=MAX_READ_BYTES,
    )
    _check(result.exit_code, result.stderr, path)
    if result.truncated:  # a cut file read back as whole would lose its tail on the next write
        raise SandboxFileError(f"{path}: larger than {MAX_READ_BYTES} bytes")
    text = result.stdout
    if line is not None or limit is not None:
        lines = text.splitlines(keepends=True)
        start = max((line or 1) - 1, 0)
        end = None if limit is None else start + limit
        text = "".join(lines[start:end])
    return text


async def write_bytes(
    sandbox: Sandbox,
    path: str,
    data: bytes,
    *,
    within: Sequence[str] = (),
    user: str | None = None,
) -> None:
    """Write ``data`` to ``path`` as ``user`` (the file is theirs, and so is the refusal)."""
    result = await sandbox.exec(
        ["sh", "-c", RESOLVE, "sh", "write", path, *within], stdin=data, user=user
    )
    _check(result.exit_code, result.stderr, path)


def _check(exit_code: int, stderr: str, path: str) -> None:
    if exit_code == 3:
        raise PathRefused(f"{path}: resolves outside the allowed folders")
    if exit_code != 0:
        detail = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit {exit_code}"
        raise SandboxFileError(f"{path}: {detail}")
