"""Dockerfile emulation for the bubblewrap sandbox: ``COPY`` steps copied from the build context
(kept inside it) into the writable binds or the read-only layer, ``RUN`` steps run in the
sandbox. What cannot be emulated says the task needs the docker environment."""

from __future__ import annotations

import asyncio
import posixpath
import re
from pathlib import Path
from typing import TYPE_CHECKING

from worker.sandbox._bubblewrap.files import copy_in, inside, is_glob, top
from worker.sandbox._bubblewrap.host import HIDDEN_TOP_LEVEL
from worker.sandbox.base import ExecResult, SandboxError, SandboxUnsupported
from worker.sandbox.dockerfile import (
    Copy,
    DockerfileError,
    ImageRecipe,
    Run,
    is_skills_source,
    parse_dockerfile,
)
from worker.sandbox.errors import ImageBuildFailed

if TYPE_CHECKING:
    from worker.sandbox._bubblewrap.sandbox import BubblewrapSandbox


# Programs that install or update system packages: they write under /usr, /etc and /var, which
# the local sandbox shows read-only (the host's own). Refused before anything runs.
SYSTEM_INSTALLERS = frozenset(
    {"apt-get", "apt", "aptitude", "dpkg", "apk", "yum", "dnf", "microdnf", "zypper", "pacman",
     "rpm", "add-apt-repository", "apt-key", "snap", "emerge", "xbps-install"}
)  # fmt: skip
_COMMAND_SEPARATORS = re.compile(r"&&|\|\||[;|&()\n]")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]")
_QUOTE_LIMIT = 120
_KILLED = 128 + 9  # SIGKILL: no step's own exit; the kernel's or the host's
# Words before the program of a simple command: shell keywords and wrappers that run the rest.
_PREFIX_WORDS = frozenset(
    {"sudo", "env", "exec", "command", "nohup", "time", "then", "do", "else", "elif", "if",
     "while", "until", "!", "{"}
)  # fmt: skip


def system_installer(command: str) -> str | None:
    """The package manager a shell command runs (``apt-get``, ``apk``, ...), if any: looked
    for at the start of every simple command, after ``sudo``/``env`` and variable assignments."""
    for part in _COMMAND_SEPARATORS.split(command):
        words = part.split()
        while words and (_ASSIGNMENT.match(words[0]) or words[0] in _PREFIX_WORDS):
            words.pop(0)
        program = posixpath.basename(words[0]) if words else ""
        if program in ("dpkg", "rpm") and not _installs(words[1:]):
            continue  # dpkg --print-architecture, rpm -q: only reading
        if program in SYSTEM_INSTALLERS:
            return program
    return None


# Images the host's own system stands in for: plain distributions and the language images built
# on them (the host's /usr is what the task sees). Anything else (a user's or a vendor's image,
# another registry) carries software the host lacks.
GENERAL_BASES = frozenset({"ubuntu", "debian", "python", "busybox", "buildpack-deps", "scratch"})


def specialised_base(reference: str | None) -> str | None:
    """``reference`` when it names an image the host cannot stand in for (see GENERAL_BASES)."""
    if reference is None:
        return None
    name = reference.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name = name[: len(name) - len(last)] + last.split(":", 1)[0]
    for prefix in ("docker.io/library/", "library/", "index.docker.io/library/"):
        name = name.removeprefix(prefix)
    return None if name.lower() in GENERAL_BASES else reference


def script_installer(text: str) -> str | None:
    """The package manager a shell script (test.sh) runs on any of its lines, if any."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            continue
        if program := system_installer(stripped):
            return program
    return None


def read_recipe(dockerfile: Path) -> ImageRecipe | None:
    """The task's Dockerfile read once, when the task's config is made (the start uses it);
    None when it cannot be read: the start says what is wrong with it."""
    try:
        return parse_dockerfile(dockerfile)
    except DockerfileError:
        return None


def local_refusal(task_id: str, recipe: ImageRecipe | None, test_script: Path) -> str | None:
    """Why the local sandbox cannot run the task right, found before anything runs: a
    multi-stage Dockerfile, a specialised base image, a ``RUN`` or a test.sh that installs
    system packages (test.sh would fail in place and score 0)."""
    head = f"task {task_id} needs the docker environment"
    if recipe is None:
        return None  # the start says what is wrong with the Dockerfile
    if recipe.stages > 1:
        return f"{head}: a multi-stage Dockerfile"
    if (base := specialised_base(recipe.base)) is not None:
        return (
            f"{head}: Dockerfile FROM {base} is a specialised image; the local sandbox stands "
            "in only for plain distribution and Python bases (it shows the host's system)"
        )
    for step in recipe.steps:
        if isinstance(step, Run) and (program := system_installer(step.command)):
            return _installer_refusal(task_id, step, program)
    try:
        script = test_script.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if (program := script_installer(script)) is not None:
        return (
            f"{head}: tests/test.sh runs {program}, which installs system packages; the local "
            "sandbox shows the host's system folders read-only"
        )
    return None


def _installs(args: list[str]) -> bool:
    long = {"--install", "--unpack", "--configure", "--remove", "--purge", "--upgrade", "--erase"}
    short = [a[1:] for a in args if a.startswith("-") and not a.startswith("--")]
    return any(a in long for a in args) or any(set(flags) & set("iUePr") for flags in short)


def _run_refusal(task_id: str, run: Run, why: str) -> str:
    quoted = run.text if len(run.text) <= _QUOTE_LIMIT else run.text[: _QUOTE_LIMIT - 1] + "…"
    return (
        f"task {task_id} needs the docker environment: Dockerfile line {run.line} `{quoted}` {why}"
    )


def _installer_refusal(task_id: str, run: Run, program: str) -> str:
    return _run_refusal(
        task_id,
        run,
        f"runs {program}, which installs system packages: that needs a writable root "
        "filesystem, and the local sandbox shows the host's system folders read-only",
    )


def _needs_docker(box: BubblewrapSandbox, run: Run, why: str) -> SandboxUnsupported:
    return SandboxUnsupported(_run_refusal(box.spec.config.task_id, run, why))


async def apply_recipe(box: BubblewrapSandbox, recipe: ImageRecipe) -> None:
    config = box.spec.config
    for step in recipe.steps:  # what cannot work here is refused before any step runs
        if isinstance(step, Run) and (program := system_installer(step.command)):
            raise SandboxUnsupported(_installer_refusal(config.task_id, step, program))
    for step in recipe.steps:
        if isinstance(step, Copy):
            if not config.with_skills and all(map(is_skills_source, step.sources)):
                continue  # no-skills condition: the task's bundled skills stay out
            await asyncio.to_thread(_apply_copy, box, config.environment_dir, step)
        else:
            await _apply_run(box, step, config.build_timeout_sec)


def _apply_copy(box: BubblewrapSandbox, context: Path, copy: Copy) -> None:
    sources: list[Path] = []
    for pattern in copy.sources:
        matches = sorted(context.glob(pattern.lstrip("/"))) if is_glob(pattern) else []
        if not is_glob(pattern):
            matches = [context / pattern.lstrip("/")]
        for match in matches:
            resolved = match.resolve()
            if not resolved.is_relative_to(context.resolve()):
                raise ImageBuildFailed(
                    f"Dockerfile line {copy.line}: {pattern} is outside the build context"
                )
            if not resolved.exists():
                raise ImageBuildFailed(
                    f"Dockerfile line {copy.line}: {pattern} not found in environment/"
                )
            sources.append(resolved)
    if not sources:
        raise ImageBuildFailed(
            f"Dockerfile line {copy.line}: no file matches {' '.join(copy.sources)}"
        )
    for source in sources:
        if source.is_dir():
            target = copy.dest
        elif copy.dest_is_dir:
            target = posixpath.join(copy.dest, source.name)
        else:
            target = copy.dest
        host = _build_target(box, target, copy.text)
        copy_in(source, host)


def _build_target(box: BubblewrapSandbox, path: str, what: str) -> Path:
    """Where a build step's file goes: into a writable bind, else into the layer."""
    found = box.bind_for(path)
    if found is not None:
        return inside(found[1], found[2])
    first = top(path)
    if first in HIDDEN_TOP_LEVEL or not first:
        raise SandboxUnsupported(
            f"task {box.spec.config.task_id} needs the docker environment: {what} writes to {path}"
        )
    return box.layer / path.lstrip("/")


async def _apply_run(box: BubblewrapSandbox, run: Run, timeout: float) -> None:
    result = await box.exec(run.command, cwd=run.workdir, env=run.env, timeout_sec=timeout)
    if result.exit_code == 0:
        return
    if (why := _not_the_steps_failure(result)) is not None:
        # Not the step's doing, so it says nothing of whether the task runs here: a plain
        # SandboxError is a start failure, tried again in a fresh sandbox.
        raise SandboxError(f"Dockerfile line {run.line}: the local sandbox {why}")
    output = _ANSI.sub("", f"{result.stderr}\n{result.stdout}")
    read_only = [line.strip() for line in output.splitlines() if "Read-only file system" in line]
    if read_only:
        raise _needs_docker(
            box,
            run,
            "writes outside the local sandbox's writable places (a writable root filesystem "
            f"is needed): {read_only[0][:200]}",
        )
    tail = _ANSI.sub("", result.stderr).strip() or _ANSI.sub("", result.stdout).strip()
    last = " | ".join(tail.splitlines()[-3:])[:400]
    reason = "timed out" if result.timed_out else f"exit {result.exit_code}"
    raise _needs_docker(box, run, f"failed in the local sandbox ({reason}): {last}")


def _not_the_steps_failure(result: ExecResult) -> str | None:
    """Why the step's failure is the sandbox's, not the step's (None: the step's own exit).

    bwrap says so itself when it cannot set the command up (its own "bwrap: ..." message, seen
    on a loaded host), and a SIGKILL that was not our timeout came from outside the step (the
    host, or its memory cgroup): neither tells whether the step can be emulated here.
    """
    if result.timed_out:
        return None
    bwrap = [line for line in result.stderr.splitlines() if line.startswith("bwrap: ")]
    if bwrap:
        return f"could not run the step: {bwrap[0][:200]}"
    if result.exit_code == _KILLED:
        return "saw the step killed (SIGKILL) by something other than its timeout"
    return None
