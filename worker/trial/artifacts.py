"""What a separate verifier gets of the agent's sandbox: Harbor's artifacts and collect hooks.

A task whose verifier runs in a sandbox of its own (``[verifier].environment_mode =
"separate"``, docs/task-sets.md) is graded on nothing of the agent's sandbox but its artifacts:
``/logs/artifacts`` and the paths ``task.toml`` declares (``artifacts = [...]``). As in Harbor
0.25 (``trial/artifact_handler.py``): the ``[[verifier.collect]]`` commands run first in the
agent's sandbox (best effort), then each artifact is copied to the trial folder's
``artifacts/<destination or source>``, and laid in the verifier's fresh sandbox at its own
``source`` path (a folder there emptied first). Links and special files are never copied.
"""

from __future__ import annotations

import fnmatch
import posixpath
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Final

from task_sets.task import Artifact, CollectHook
from worker.core.capped import CopyBudget
from worker.sandbox.base import ROOT_ENV, ROOT_USER, Sandbox, SandboxError
from worker.trial.verifier import REWARD_FILES

ARTIFACT_ENTRIES: Final = 20_000  # files and folders copied per trial
HOOK_OUTPUT_BYTES: Final = 4096  # of a collect hook's stderr kept in result.json


@dataclass
class Collected:
    """The artifacts brought to the host: each entry's host path (absent ones left out)."""

    paths: list[tuple[Artifact, Path]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def reward_names(self) -> frozenset[str]:
        """Reward file names among the artifacts: files of the agent's that a verifier's ``cp``
        could carry into its logs, so they never decide (``read_reward``'s ``influenced``)."""
        names = set()
        for _, path in self.paths:
            found = [path] if path.is_file() else list(path.rglob("*"))
            names |= {p.name for p in found if p.name in REWARD_FILES}
        return frozenset(names)


async def run_collect_hooks(sandbox: Sandbox, hooks: Sequence[CollectHook]) -> list[dict[str, Any]]:
    """Each hook in the agent's sandbox, in order; a failing one is recorded, never fatal."""
    done: list[dict[str, Any]] = []
    for hook in hooks:
        doc: dict[str, Any] = {"command": hook.command}
        try:
            result = await sandbox.exec(
                hook.command,
                user=None if hook.user is None else str(hook.user),
                timeout_sec=hook.timeout_sec,
                max_output_bytes=HOOK_OUTPUT_BYTES,
            )
        except SandboxError as exc:
            doc["error"] = str(exc)
        else:
            doc.update(exit_code=result.exit_code, timed_out=result.timed_out)
            if result.exit_code != 0:
                doc["stderr"] = result.stderr[-HOOK_OUTPUT_BYTES:]
        done.append(doc)
    return done


def host_path(artifacts_dir: Path, artifact: Artifact) -> Path:
    """Harbor's place of an artifact in the trial folder: its destination, else its source
    without the leading ``/``."""
    parts = [p for p in PurePosixPath(artifact.destination or artifact.source).parts if p != "/"]
    return artifacts_dir.joinpath(*parts) if parts else artifacts_dir


async def collect(
    sandbox: Sandbox, entries: Sequence[Artifact], artifacts_dir: Path, max_bytes: int
) -> Collected:
    """Copy each artifact out of the agent's sandbox; a path that is not there is skipped."""
    found = Collected()
    budget = CopyBudget(max_bytes, max_bytes, ARTIFACT_ENTRIES)
    for artifact in entries:
        source = posixpath.join(sandbox.workdir, artifact.source)
        probe = await sandbox.exec(
            ["/bin/sh", "-c", 'test -e "$1" && ! test -L "$1"', "sh", source],
            user=ROOT_USER,
            env=ROOT_ENV,
            timeout_sec=60,
        )
        if probe.exit_code != 0:
            continue  # absent (Harbor skips it too) or a link, never followed
        target = host_path(artifacts_dir, artifact)
        try:
            await sandbox.download(source, target, budget=budget)
        except SandboxError as exc:
            found.notes.append(f"{artifact.source}: not collected: {exc}")
            continue
        _exclude(target, artifact.exclude)
        found.paths.append((artifact, target))
    report = budget.report()
    if report.get("truncated") or report.get("skipped"):
        found.notes.append(f"artifacts over the caps: {report}")
    return found


def _exclude(target: Path, patterns: Sequence[str]) -> None:
    """Drop what ``exclude`` names (tar's ``--exclude``: a pattern matches a name or a path
    relative to the artifact)."""
    if not patterns or not target.is_dir():
        return
    for path in sorted(target.rglob("*"), reverse=True):
        relative = path.relative_to(target).as_posix()
        if any(fnmatch.fnmatch(path.name, p) or fnmatch.fnmatch(relative, p) for p in patterns):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


async def lay(sandbox: Sandbox, found: Collected) -> list[str]:
    """Put each collected artifact at its source path in the verifier's fresh sandbox (a
    folder there emptied first, as Harbor does); what could not be laid, as notes."""
    notes: list[str] = []
    for artifact, path in found.paths:
        source = posixpath.normpath(posixpath.join(sandbox.workdir, artifact.source))
        if path.is_dir():
            prepare = 'rm -rf -- "$1" && mkdir -p -- "$1"'
        else:
            prepare = 'mkdir -p -- "$(dirname -- "$1")" && rm -rf -- "$1"'
        try:
            ready = await sandbox.exec(
                ["/bin/sh", "-c", prepare, "sh", source],
                user=ROOT_USER,
                env=ROOT_ENV,
                cwd="/",
                timeout_sec=120,
            )
            if ready.exit_code != 0:
                notes.append(f"{source}: not laid: {' '.join(ready.stderr.split())[-300:]}")
                continue
            await sandbox.upload(path, source)
        except SandboxError as exc:
            notes.append(f"{source}: not laid: {exc}")
    return notes
