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
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from worker.sandbox.base import (
    LOGS_DIR,
    TESTS_DIR,
    VERIFIER_LOGS_DIR,
    ExecResult,
    Sandbox,
    SandboxError,
)
from worker.sandbox.scripts import shell_script
from worker.trial.tests_report import report_problem

# Writable places searched recursively for plantable files (plus the workdir and the skills
# dir); which files are plantable, and the site dirs and root-level config files looked at, is
# the business of ``verifier_scripts/plantables.sh``.
_SCAN_ROOTS = ("/root", "/home", "/tmp", "/var/tmp", "/app", "/logs")
_SCRIPTS = "worker.trial.verifier_scripts"

NO_CHECKSUM = "skillsbench: the sandbox has none of cksum, sha256sum, md5sum"  # plantables.sh's


def _scan_roots(workdir: str, skills_dir: str | None) -> list[str]:
    roots = [workdir] + ([skills_dir] if skills_dir else [])
    return list(dict.fromkeys([*roots, *_SCAN_ROOTS]))


def snapshot_command(workdir: str, skills_dir: str | None) -> list[str]:
    """Before the agent: signatures of the plantable files that legitimately exist."""
    script = shell_script(_SCRIPTS, "plantables.sh", "snapshot.sh")
    return ["/bin/sh", "-c", script, "sh", *_scan_roots(workdir, skills_dir)]


TESTS_MARK = "--skillsbench-tests--"
HARDENED_MARK = "skillsbench-hardened"


def expected_tests(tests_dir: Path) -> list[str]:
    """Relative paths of every file and folder of the task's tests/ (what /tests must hold)."""
    return sorted(p.relative_to(tests_dir).as_posix() for p in tests_dir.rglob("*"))


def harden_input(snapshot: str, tests: list[str]) -> bytes:
    return (snapshot.rstrip("\n") + f"\n{TESTS_MARK}\n" + "\n".join(tests) + "\n").encode()


def harden_command(workdir: str, skills_dir: str | None, *, then_test: bool = False) -> list[str]:
    """After the agent is stopped and tests/ uploaded (stdin: :func:`harden_input`): remove what
    the agent planted, leave /tests holding exactly the task's tests, make the workdir again if
    it is gone, reset the verifier logs; with ``then_test`` go on to run tests/test.sh in the
    same process, from the workdir (``verifier_scripts/harden.sh``)."""
    script = shell_script(_SCRIPTS, "plantables.sh", "tests.sh", "harden.sh")
    return [
        "/bin/sh",
        "-c",
        script,
        "sh",
        "test" if then_test else "exit",
        workdir,
        TESTS_DIR,
        LOGS_DIR,
        VERIFIER_LOGS_DIR,
        TESTS_MARK,
        HARDENED_MARK,
        *_scan_roots(workdir, skills_dir),
    ]


# tests/test.sh, its output in the verifier logs (for a verifier that is not root).
TEST_COMMAND: Final = (
    "sh",
    "-c",
    shell_script(_SCRIPTS, "tests.sh", "run_tests.sh"),
    "sh",
    TESTS_DIR,
    VERIFIER_LOGS_DIR,
)


class RewardError(ValueError):
    """The verifier ran but left no usable reward."""


@dataclass(frozen=True)
class Reward:
    value: float
    source: str  # the file that decided: "reward.json" | "reward.txt"; "none" for a 0 by rule
    # What did not decide and why (files that disagree, that the agent could have supplied,
    # that did not parse); empty when one file, or two that agree, decided.
    notes: tuple[str, ...] = ()


REWARD_FILES: Final = ("reward.json", "reward.txt")


def read_reward(
    verifier_dir: Path, influenced: Collection[str] = (), report: str | None = None
) -> Reward:
    """The reward left in ``verifier_dir`` (docs/sandboxes.md, "Which reward counts").

    ``influenced``: the reward file names the agent could have supplied (its work product
    holds a file of that name, which a verifier's ``cp /root/*.json /logs/verifier/`` would
    carry over). Such a file never decides: the verifier's own files do, the lower value when
    both are there and disagree; with only the agent's, the reward is 0. RewardError only when
    no file the agent could not influence is there at all and the agent supplied none either.

    ``report``: the pytest report test.sh asks for under ``/logs/verifier``; a reward above 0
    that it does not back is 0 (worker/trial/tests_report.py).
    """
    readers = {"reward.json": _read_json_reward, "reward.txt": _read_txt_reward}
    values: dict[str, float] = {}
    notes: list[str] = []
    broken: list[str] = []
    for name in REWARD_FILES:
        path = verifier_dir / name
        try:
            if not _present(path):
                continue
            values[name] = readers[name](path)
        except RewardError as exc:
            broken.append(name)
            notes.append(str(exc))
    trusted = {name: v for name, v in values.items() if name not in influenced}
    supplied = sorted(name for name in (*values, *broken) if name in influenced)
    if supplied:
        notes.append(
            f"{', '.join(supplied)}: the agent's work product holds a file of that name, so it "
            "does not decide the reward"
        )
    if trusted:
        if len(set(trusted.values())) > 1:
            said = ", ".join(f"{name} says {v}" for name, v in trusted.items())
            notes.append(f"the reward files disagree ({said}): the lower counts")
        value = min(trusted.values())
        source = next(n for n in REWARD_FILES if trusted.get(n) == value)
        problem = report_problem(verifier_dir, report, value) if report and value > 0 else None
        if problem is not None:
            return Reward(0.0, "none", (*notes, problem))
        return Reward(value, source, tuple(notes))
    if supplied:
        return Reward(0.0, "none", tuple(notes))
    if broken:
        raise RewardError("; ".join(notes))
    raise RewardError("the verifier wrote neither reward.json nor reward.txt")


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
    sandbox: Sandbox,
    snapshot: str,
    skills_dir: str | None,
    tests_dir: Path,
    *,
    after_gate: Callable[[], Awaitable[None]] | None = None,
) -> list[str]:
    """Kill the agent's processes, copy tests/ in and harden (as root); the paths removed."""
    result = await sandbox.kill_upload_exec(
        harden_command(sandbox.workdir, skills_dir),
        upload=tests_dir,
        target=TESTS_DIR,
        cwd="/",
        timeout_sec=120,
        stdin=harden_input(snapshot, expected_tests(tests_dir)),
        after_gate=after_gate,
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
    after_gate: Callable[[], Awaitable[None]] | None = None,
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
        after_gate=after_gate,
    )
    if HARDENED_MARK not in result.stdout and not result.timed_out:
        raise _hardening_failed(result)
    return _removed(result.stdout), result


SURVIVOR_MARK: Final = "skillsbench-survivor "
VERDICT_MARK: Final = "skillsbench-verdict "


def verdict_seen(stdout: str) -> bool:
    """Whether the verifier's own shell lived until test.sh ended and the rest was stopped."""
    return any(line.startswith(VERDICT_MARK) for line in stdout.splitlines())


def survivors(stdout: str) -> list[str]:
    """The processes still running when tests/test.sh exited (tests.sh's report: "<pid>
    <command>"), which were then killed before the reward was read."""
    return [
        line[len(SURVIVOR_MARK) :] for line in stdout.splitlines() if line.startswith(SURVIVOR_MARK)
    ]
