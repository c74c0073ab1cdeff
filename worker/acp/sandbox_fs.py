"""ACP ``fs/read_text_file`` and ``fs/write_text_file`` performed in the trial's sandbox.

When the caller names allowed roots, the path is resolved *inside the sandbox* (``realpath -m``,
or :data:`CANONICAL`'s walk where there is none; either follows every existing symlink) and refused unless it stays under one of them, so a symlink
planted in the workspace cannot redirect a write outside it.
"""

from __future__ import annotations

from collections.abc import Sequence

from worker.sandbox.base import Sandbox

MAX_READ_BYTES = 10 << 20


class PathRefused(ValueError):
    """The path leaves the allowed roots (after resolving symlinks in the sandbox)."""


class SandboxFileError(OSError):
    """The sandbox could not read or write the file."""


# `realpath -m` where the sandbox has it (coreutils); else the same walk in plain sh (busybox's
# realpath has no -m): every existing symlink followed, missing components taken as they are.
# Every command substitution ends in a sentinel ``x``: ``$(…)`` drops trailing newlines, and a
# name or link target ending in one would otherwise be checked under a name it does not have.
CANONICAL = r"""
nl='
'
canon() {
  if out=$(realpath -m -- "$1" 2>/dev/null && printf x); then
    out=${out%x}; printf '%s' "${out%"$nl"}"; return 0
  fi
  case $1 in /*) rest=$1 ;; *) rest=$(pwd -P && printf x) || return 1
    rest=${rest%x}; rest=${rest%"$nl"}/$1 ;; esac
  resolved=
  hops=0
  while :; do
    while :; do case $rest in /*) rest=${rest#/} ;; *) break ;; esac; done
    [ -n "$rest" ] || break
    comp=${rest%%/*}
    case $rest in */*) rest=${rest#*/} ;; *) rest= ;; esac
    case $comp in
      .) ;;
      ..) resolved=${resolved%/*} ;;
      *)
        if [ -L "$resolved/$comp" ]; then
          hops=$((hops + 1))
          [ "$hops" -le 40 ] || return 1
          target=$(readlink -- "$resolved/$comp" && printf x) || return 1
          target=${target%x}; target=${target%"$nl"}
          case $target in /*) resolved= ;; esac
          rest=$target${rest:+/$rest}
        else
          resolved=$resolved/$comp
        fi ;;
    esac
  done
  printf '%s' "${resolved:-/}"
}
"""

# $1 = path; $2.. = allowed roots. Prints the resolved path, exit 3 when outside every root.
_RESOLVE = (
    CANONICAL
    + r"""
p=$(canon "$1" && printf x) || exit 4
p=${p%x}
shift
[ "$#" -eq 0 ] && { printf '%s' "$p"; exit 0; }
for root in "$@"; do
  r=$(canon "$root" && printf x) || continue
  r=${r%x}
  case "$p" in "$r"|"$r"/*) printf '%s' "$p"; exit 0;; esac
done
exit 3
"""
)

_WRITE = _RESOLVE.replace(
    "printf '%s' \"$p\"; exit 0",
    'd=${p%/*}; mkdir -p -- "${d:-/}" && cat > "$p"; exit $?',
)


async def read_text_file(
    sandbox: Sandbox,
    path: str,
    *,
    within: Sequence[str] = (),
    line: int | None = None,
    limit: int | None = None,
    user: str | None = None,
) -> str:
    script = _RESOLVE.replace("printf '%s' \"$p\"; exit 0", 'exec cat -- "$p"')
    result = await sandbox.exec(
        ["sh", "-c", script, "sh", path, *within], user=user, max_output_bytes=MAX_READ_BYTES
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
    result = await sandbox.exec(["sh", "-c", _WRITE, "sh", path, *within], stdin=data, user=user)
    _check(result.exit_code, result.stderr, path)


def _check(exit_code: int, stderr: str, path: str) -> None:
    if exit_code == 3:
        raise PathRefused(f"{path}: resolves outside the allowed folders")
    if exit_code != 0:
        detail = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit {exit_code}"
        raise SandboxFileError(f"{path}: {detail}")
