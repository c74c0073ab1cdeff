"""Grading a trial: harden the workspace the agent leaves behind, run ``tests/test.sh``, read the reward.

Order matters and is the anti-cheat story: the agent's processes are killed first (nothing can
write a reward later), then ``tests/`` is copied in (``Sandbox.kill_upload_exec``: one exec on
docker), then every ``conftest.py`` / ``sitecustomize.py`` / ``usercustomize.py`` / ``*.pth`` /
root-level pytest config that was not there before the agent ran (or changed since) is removed,
``/tests`` is left holding exactly the task's tests, ``/logs/verifier`` is emptied (a symlink
planted there is removed), and only then does ``tests/test.sh`` run. The reward is read from the
host copy of ``/logs/verifier``.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass
from pathlib import Path

from worker.sandbox.base import (
    LOGS_DIR,
    TESTS_DIR,
    VERIFIER_LOGS_DIR,
    ExecResult,
    Sandbox,
    SandboxError,
)

# Files that change how Python or pytest behave when merely present.
_PLANTABLE_NAMES = ("conftest.py", "sitecustomize.py", "usercustomize.py", "*.pth")
_ROOT_CONFIG_FILES = (
    "/conftest.py",
    "/pytest.ini",
    "/pyproject.toml",
    "/tox.ini",
    "/setup.cfg",
    "/sitecustomize.py",
    "/usercustomize.py",
)
# Writable places searched recursively (plus the workdir and the skills dir).
_SCAN_ROOTS = ("/root", "/home", "/tmp", "/var/tmp", "/app", "/logs")
# Python site dirs (shell globs). Only their top level matters: .pth files and
# site/usercustomize are read from the site dir itself, so they are not searched recursively.
_SITE_GLOBS = (
    "/usr/lib/python3*/site-packages",
    "/usr/lib/python3*/dist-packages",
    "/usr/local/lib/python3*/site-packages",
    "/usr/local/lib/python3*/dist-packages",
    "/usr/lib64/python3*/site-packages",
    "/usr/local/lib64/python3*/site-packages",
    "/opt/*/lib/python3*/site-packages",
    "/opt/*/*/lib/python3*/site-packages",
)


NO_CHECKSUM = "skillsbench: the sandbox has none of cksum, sha256sum, md5sum"


def _find_args(extra_roots: list[str]) -> tuple[str, str]:
    """Shell words for ``find``: the folders searched and the plantable ``-name`` tests."""
    roots = " ".join(shlex.quote(r) for r in dict.fromkeys([*extra_roots, *_SCAN_ROOTS]))
    names = " -o ".join(f"-name {shlex.quote(n)}" for n in _PLANTABLE_NAMES)
    return roots, names


def _drop_odd_names_script(extra_roots: list[str]) -> str:
    roots, names = _find_args(extra_roots)
    sites = " ".join(_SITE_GLOBS)
    return f"""
# Plantables whose paths hold a newline or a backslash cannot go through the line-based
# signature list intact (and Python still loads such a .pth): hardening removes them outright.
drop_odd_names() {{
  set +f
  find {roots} -xdev \\( {names} \\) \\( -path "*$nl*" -o -path '*\\\\*' \\) \\
    \\( -type f -o -type l \\) -exec rm -f -- {{}} \\; \\
    -exec echo "removed a plantable file with a newline or backslash in its path" \\; 2>/dev/null
  for s in {sites}; do
    for f in "$s"/*.pth; do
      case $f in
        *"$nl"*|*\\\\*) rm -f -- "$f" && echo "removed an odd-named .pth file in $s" ;;
      esac
    done
  done
}}
"""


def _scan_script(extra_roots: list[str]) -> str:
    """Shell defining ``sigs``: one signature line (``<cksum> <size> <path>``, or ``L <path>`` for
    a symlink) per plantable file, sorted.

    Cheap on purpose, it runs in every trial: one ``find``, shell globs for the site dirs and a
    single checksum run (``cksum``, else ``sha256sum`` or ``md5sum``) for all files.
    """
    roots, names = _find_args(extra_roots)
    root_files = " ".join(shlex.quote(f) for f in _ROOT_CONFIG_FILES)
    sites = " ".join(_SITE_GLOBS)
    return f"""
# Fail closed: without a checksum tool every signature would be empty and nothing planted found.
if command -v cksum >/dev/null 2>&1; then checksum=cksum
elif command -v sha256sum >/dev/null 2>&1; then checksum=sha256sum
elif command -v md5sum >/dev/null 2>&1; then checksum=md5sum
else echo "{NO_CHECKSUM}" >&2; exit 3
fi
scan() {{
  set +f  # callers may have globbing off; the site-dir patterns need it
  find {roots} -xdev \\( {names} \\) \\( -type f -o -type l \\) 2>/dev/null
  for s in {sites}; do
    [ -d "$s" ] || continue
    for f in "$s"/*.pth "$s"/sitecustomize.py "$s"/usercustomize.py; do
      if [ -e "$f" ] || [ -L "$f" ]; then echo "$f"; fi
    done
  done
  for f in {root_files}; do if [ -e "$f" ] || [ -L "$f" ]; then echo "$f"; fi; done
}}
sigs() {{
  found=$(scan | sort -u)
  set -f
  regular=""
  for f in $found; do
    if [ -L "$f" ]; then echo "L $f"; elif [ -f "$f" ]; then regular="$regular
$f"; fi
  done
  # "<sum> <size> <path>" (cksum) or "<sum>  <path>": either way the path starts after the
  # second space.
  if [ -n "$regular" ]; then "$checksum" $regular 2>/dev/null; fi
  set +f
}}
IFS='
'
"""


def snapshot_command(workdir: str, skills_dir: str | None) -> str:
    """Before the agent: signatures of the plantable files that legitimately exist."""
    roots = [workdir] + ([skills_dir] if skills_dir else [])
    return _scan_script(roots) + "sigs | sort\n"


TESTS_MARK = "--skillsbench-tests--"
HARDENED_MARK = "skillsbench-hardened"


def expected_tests(tests_dir: Path) -> list[str]:
    """Relative paths of every file and folder of the task's tests/ (what /tests must hold)."""
    return sorted(p.relative_to(tests_dir).as_posix() for p in tests_dir.rglob("*"))


def harden_input(snapshot: str, tests: list[str]) -> bytes:
    return (snapshot.rstrip("\n") + f"\n{TESTS_MARK}\n" + "\n".join(tests) + "\n").encode()


def harden_command(workdir: str, skills_dir: str | None, *, then_test: bool = False) -> str:
    """After the agent is stopped and tests/ uploaded (stdin: :func:`harden_input`): remove what
    the agent planted, leave /tests holding exactly the task's tests, make the workdir again if
    it is gone, reset the verifier logs; with ``then_test`` go on to run tests/test.sh in the
    same process, from the workdir. Runs from ``/``: the workdir may be missing."""
    roots = [workdir] + ([skills_dir] if skills_dir else [])
    w = shlex.quote(workdir)
    tail = f"echo {HARDENED_MARK}\n" + (
        f"cd {w} 2>/dev/null || cd /\n{TEST_COMMAND}\n" if then_test else "exit 0\n"
    )
    return (
        _scan_script(roots)
        + _drop_odd_names_script(roots)
        + f"""
nl='
'
drop_odd_names
input=$(cat)
before="${{input%%{TESTS_MARK}*}}"
expected="$nl${{input#*{TESTS_MARK}$nl}}$nl"
set -f
for line in $(sigs | grep -vxF -f /dev/fd/3 3<<SKILLSBENCH_SNAPSHOT
$before
SKILLSBENCH_SNAPSHOT
); do
  case "$line" in
    "L "*) f="${{line#L }}" ;;
    *) f="${{line#* }}"; f="${{f#* }}" ;;
  esac
  rm -rf -- "$f" && echo "removed $f"
done
t={TESTS_DIR}
if [ -L "$t" ]; then rm -f "$t" && echo "removed $t"; fi
if [ -d "$t" ]; then
  for p in $(find "$t" -mindepth 1 -depth 2>/dev/null); do
    rel="${{p#$t/}}"
    if [ -L "$p" ]; then rm -f -- "$p" && echo "removed $p"; continue; fi
    case "$expected" in
      *"$nl$rel$nl"*) ;;
      *) rm -rf -- "$p" && echo "removed $p" ;;
    esac
  done
fi
set +f
# The workdir is where the tests run (and a later exec's cwd): one the agent removed is made
# again, so that the verifier starts (an exec into a missing cwd fails before it runs).
if [ ! -d {w} ]; then
  if [ -e {w} ] || [ -L {w} ]; then rm -f {w} && echo "removed "{w}; fi
  mkdir -p {w}
fi
# /logs and /logs/verifier are folders again (not links, files or locked away) and the latter
# is empty: what the agent did to them must not keep test.sh from writing the reward nor the
# worker from reading it.
for d in {LOGS_DIR} {VERIFIER_LOGS_DIR}; do
  if [ -L "$d" ] || {{ [ -e "$d" ] && [ ! -d "$d" ]; }}; then rm -f "$d"; fi
  [ -d "$d" ] || mkdir "$d"
done
chmod 755 {LOGS_DIR}
v={VERIFIER_LOGS_DIR}
chmod 777 "$v"
for f in "$v"/* "$v"/.[!.]* "$v"/..?*; do if [ -e "$f" ] || [ -L "$f" ]; then rm -rf -- "$f"; fi; done
"""
        + tail
    )


TEST_COMMAND = (
    f"chmod +x {TESTS_DIR}/test.sh 2>/dev/null; "
    f"exec {TESTS_DIR}/test.sh > {VERIFIER_LOGS_DIR}/test-stdout.txt 2>&1"
)


class RewardError(ValueError):
    """The verifier ran but left no usable reward."""


@dataclass(frozen=True)
class Reward:
    value: float
    source: str  # "reward.json" | "reward.txt"


def read_reward(verifier_dir: Path) -> Reward:
    """The reward left in ``verifier_dir``: reward.json preferred, reward.txt otherwise; both must agree."""
    json_path = verifier_dir / "reward.json"
    txt_path = verifier_dir / "reward.txt"
    from_json = _read_json_reward(json_path) if _present(json_path) else None
    from_txt = _read_txt_reward(txt_path) if _present(txt_path) else None
    if from_json is None and from_txt is None:
        raise RewardError("the verifier wrote neither reward.json nor reward.txt")
    if from_json is not None and from_txt is not None and abs(from_json - from_txt) > 1e-9:
        raise RewardError(f"reward.json says {from_json} but reward.txt says {from_txt}")
    if from_json is not None:
        return Reward(from_json, "reward.json")
    assert from_txt is not None
    return Reward(from_txt, "reward.txt")


def _present(path: Path) -> bool:
    if path.is_symlink():
        raise RewardError(f"{path.name} is a symlink, not a file the verifier wrote")
    return path.exists()


def _checked(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RewardError(f"{name}: reward must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise RewardError(f"{name}: reward {number} is outside [0, 1]")
    return number


def _read_txt_reward(path: Path) -> float:
    text = path.read_text(encoding="utf-8", errors="replace").strip()
    if not text:
        raise RewardError("reward.txt is empty")
    try:
        number = float(text)
    except ValueError:
        raise RewardError(f"reward.txt does not hold one number: {text[:40]!r}") from None
    return _checked(number, "reward.txt")


def _read_json_reward(path: Path) -> float:
    text = path.read_text(encoding="utf-8", errors="replace").strip()
    if not text:
        raise RewardError("reward.json is empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RewardError(f"reward.json is not JSON: {exc.msg}") from None
    if isinstance(data, dict):
        if "reward" not in data:
            raise RewardError("reward.json has no 'reward' key")
        data = data["reward"]
    return _checked(data, "reward.json")


async def kill_agent_processes(sandbox: Sandbox) -> None:
    """Nothing the agent started may run on: a process left behind could write a reward later.
    (:func:`harden` kills them too, as its first step.)"""
    await sandbox.kill_processes()


async def snapshot_plantables(sandbox: Sandbox, skills_dir: str | None) -> str:
    result = await sandbox.exec(
        snapshot_command(sandbox.workdir, skills_dir), user="root", timeout_sec=120
    )
    if result.timed_out or result.exit_code != 0:
        # Never trust (or cache) a partial snapshot: hardening would delete the image's own files.
        detail = result.stderr.strip()[-300:]
        raise SandboxError(f"plantable snapshot failed (exit {result.exit_code}): {detail}")
    return result.stdout


def _removed(stdout: str) -> list[str]:
    return [line[len("removed ") :] for line in stdout.splitlines() if line.startswith("removed ")]


def _hardening_failed(result: ExecResult) -> SandboxError:
    return SandboxError(
        f"workspace hardening failed (exit {result.exit_code}): {result.stderr[-300:]}"
    )


async def harden(
    sandbox: Sandbox, snapshot: str, skills_dir: str | None, tests_dir: Path
) -> list[str]:
    """Kill the agent's processes, copy tests/ in and harden (as root); the paths removed."""
    result = await sandbox.kill_upload_exec(
        harden_command(sandbox.workdir, skills_dir),
        upload=tests_dir,
        target=TESTS_DIR,
        cwd="/",
        timeout_sec=120,
        stdin=harden_input(snapshot, expected_tests(tests_dir)),
    )
    if result.timed_out or HARDENED_MARK not in result.stdout:
        raise _hardening_failed(result)
    return _removed(result.stdout)


async def harden_and_test(
    sandbox: Sandbox,
    snapshot: str,
    skills_dir: str | None,
    tests_dir: Path,
    *,
    env: dict[str, str],
    timeout_sec: float,
) -> tuple[list[str], ExecResult]:
    """:func:`harden`, then tests/test.sh in the same sandbox process (for a root verifier):
    on docker the whole verifier start is one exec."""
    result = await sandbox.kill_upload_exec(
        harden_command(sandbox.workdir, skills_dir, then_test=True),
        upload=tests_dir,
        target=TESTS_DIR,
        cwd="/",
        env=env,
        timeout_sec=timeout_sec,
        stdin=harden_input(snapshot, expected_tests(tests_dir)),
    )
    if HARDENED_MARK not in result.stdout and not result.timed_out:
        raise _hardening_failed(result)
    return _removed(result.stdout), result
