"""Dockerfile emulation for the bubblewrap sandbox: ``COPY`` steps copied from the build context
(kept inside it) into the writable binds or the read-only layer, ``RUN`` steps run in the
sandbox. What cannot be emulated says the task needs the docker environment."""

from __future__ import annotations

import asyncio
import posixpath
from pathlib import Path
from typing import TYPE_CHECKING

from worker.sandbox._bubblewrap.files import copy_in, inside, is_glob, top
from worker.sandbox._bubblewrap.host import HIDDEN_TOP_LEVEL
from worker.sandbox.base import SandboxUnsupported
from worker.sandbox.dockerfile import Copy, ImageRecipe, Run, is_skills_source
from worker.sandbox.errors import ImageBuildFailed

if TYPE_CHECKING:
    from worker.sandbox._bubblewrap.sandbox import BubblewrapSandbox


async def apply_recipe(box: BubblewrapSandbox, recipe: ImageRecipe) -> None:
    config = box.spec.config
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
    result = await box.exec(run.command, cwd=run.workdir, timeout_sec=timeout)
    if result.exit_code != 0:
        tail = (result.stderr.strip() or result.stdout.strip()).splitlines()[-3:]
        reason = "timed out" if result.timed_out else f"exit {result.exit_code}"
        raise SandboxUnsupported(
            f"task {box.spec.config.task_id} needs the docker environment: Dockerfile line "
            f"{run.line} `{run.text}` failed in the local sandbox ({reason}): " + " | ".join(tail)
        )
