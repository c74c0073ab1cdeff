"""Where a published task set's tasks come from: its manifest's ``source_registry``, read as a git
repository at a pinned ref, and the shallow git fetch of that ref (git through a subprocess).

``source_registry`` keys used here (others, like ``version`` and ``bench_version``, are kept as
provenance): ``name`` (a known registry, or any name with ``git_url``), ``git_url`` (optional
for known registries), ``git_tag`` and/or ``git_commit`` (the pin; with both, the tag must point
at the commit), ``tasks_path`` (the tasks folder inside the repository, default ``tasks``) and
``task_digest_algorithm`` (the algorithm of the manifest's ``task_digest`` values, when known).
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from task_sets.digest import TASK_DIGEST_ALGORITHM

KNOWN_REGISTRIES: Final = {"skillsbench": "https://github.com/benchflow-ai/skillsbench.git"}
DEFAULT_TASKS_PATH: Final = "tasks"
GIT_TIMEOUT_SEC: Final = 3600
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


class FetchError(ValueError):
    """The tasks cannot be fetched or do not match their manifest; one line naming why."""


@dataclass(frozen=True)
class TaskSource:
    """A git repository, the pinned ref in it and the tasks folder inside."""

    url: str
    tag: str | None
    commit: str | None
    tasks_path: str
    digest_algorithm: str | None

    @property
    def ref(self) -> str:
        """What is fetched: the tag when pinned by one, else the commit."""
        return f"refs/tags/{self.tag}" if self.tag else str(self.commit)

    @property
    def pin(self) -> str:
        return f"tag {self.tag!r}" if self.tag else f"commit {self.commit}"

    @property
    def digests_known(self) -> bool:
        return self.digest_algorithm == TASK_DIGEST_ALGORITHM


def task_source(task_set: str, registry: dict[str, Any] | None, url: str | None) -> TaskSource:
    """The source of ``task_set`` from its ``source_registry``; ``url`` replaces its repository
    (a mirror or a local clone)."""
    if not registry:
        raise FetchError(
            f"task set {task_set!r} has no source_registry: its tasks are not published anywhere "
            "we know (give --tasks-dir to the commands that run it)"
        )
    name = registry.get("name")
    repo = url or registry.get("git_url") or KNOWN_REGISTRIES.get(str(name))
    if not isinstance(repo, str) or not repo:
        raise FetchError(
            f"task set {task_set!r}: source_registry names registry {name!r}, which has no "
            f"git_url and is not a known one ({', '.join(KNOWN_REGISTRIES)}); give --source URL"
        )
    tag, commit = registry.get("git_tag"), registry.get("git_commit")
    if tag is not None and (not isinstance(tag, str) or not tag or tag.startswith("-")):
        raise FetchError(f"task set {task_set!r}: source_registry.git_tag {tag!r} is not a tag")
    if commit is not None and (not isinstance(commit, str) or not _COMMIT.match(commit)):
        raise FetchError(
            f"task set {task_set!r}: source_registry.git_commit {commit!r} is not 40 hex digits"
        )
    if tag is None and commit is None:
        raise FetchError(
            f"task set {task_set!r}: source_registry pins no git_tag or git_commit to fetch"
        )
    tasks_path = registry.get("tasks_path", DEFAULT_TASKS_PATH)
    parts = tasks_path.split("/") if isinstance(tasks_path, str) else []
    if not parts or any(part in ("", ".", "..") for part in parts):
        raise FetchError(
            f"task set {task_set!r}: source_registry.tasks_path {tasks_path!r} is not a plain "
            "relative folder"
        )
    algorithm = registry.get("task_digest_algorithm")
    return TaskSource(
        url=repo,
        tag=tag,
        commit=commit,
        tasks_path=tasks_path,
        digest_algorithm=algorithm if isinstance(algorithm, str) else None,
    )


def git(args: list[str], cwd: Path) -> str:
    """Run git in ``cwd``; its stdout, or :class:`FetchError` with git's own last words."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_SEC,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise FetchError("git is not installed: task-set fetch needs git on PATH") from None
    except subprocess.TimeoutExpired:
        raise FetchError(f"git {args[0]} took more than {GIT_TIMEOUT_SEC} s") from None
    if done.returncode != 0:
        words = " ".join(line.strip() for line in done.stderr.splitlines() if line.strip())
        raise FetchError(words.removeprefix("fatal: ") or f"git {args[0]} failed")
    return done.stdout


def fetch_commit(source: TaskSource, repo: Path) -> str:
    """Shallow-fetch the pinned ref into a new repository at ``repo``; the commit it names."""
    repo.mkdir()
    git(["-c", "init.defaultBranch=fetch", "init", "-q"], repo)
    # A named remote, so that a Git LFS filter (where git-lfs is installed) knows where to go.
    git(["remote", "add", "origin", "--", source.url], repo)
    try:
        git(["fetch", "-q", "--depth", "1", "--no-tags", "origin", source.ref], repo)
    except FetchError as exc:
        if "couldn't find remote ref" in str(exc) or "not our ref" in str(exc):
            raise FetchError(
                f"{source.url} has no {source.pin} (the manifest's pinned source_registry)"
            ) from None
        raise FetchError(f"cannot fetch {source.pin} from {source.url}: {exc}") from None
    commit = git(["rev-parse", "--verify", "-q", "FETCH_HEAD^{commit}"], repo).strip()
    if source.commit is not None and commit != source.commit:
        raise FetchError(
            f"{source.url}: {source.pin} is commit {commit}, but the manifest pins "
            f"git_commit {source.commit}"
        )
    return commit


def task_folders(repo: Path, commit: str, tasks_path: str) -> set[str]:
    """The names of the folders directly under ``tasks_path`` at ``commit``."""
    try:
        listing = git(["ls-tree", "-d", "--name-only", "-z", f"{commit}:{tasks_path}"], repo)
    except FetchError:
        raise FetchError(f"commit {commit} has no folder {tasks_path}/") from None
    return {name for name in listing.split("\0") if name}


def check_out(repo: Path, commit: str, paths: list[str]) -> None:
    """Write ``paths`` of ``commit`` into ``repo``'s work tree, bytes as stored."""
    git(["-c", "core.autocrlf=false", "checkout", "-q", commit, "--", *paths], repo)
