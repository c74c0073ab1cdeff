"""``task-set fetch`` against a real git server on loopback (``git daemon``), through the real
entry point, and ``run --task-set`` finding what it fetched."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from task_sets.digest import TASK_DIGEST_ALGORITHM
from task_sets.manifest import TaskEntry, TaskSetManifest, build_manifest, dumps_manifest
from task_sets.task_cache import RECORD_NAME, entry_dir
from tests.support import REPO_ROOT, free_port, make_task
from tests.support.git_daemon import commit_all, git, git_daemon

TASK_SET = "fetch-test"
INSTRUCTION = "Write 42 to /root/answer.txt.\n"


@dataclass(frozen=True)
class Registry:
    url: str  # git://127.0.0.1:PORT/reg.git
    tag_commit: str
    entries: tuple[TaskEntry, ...]  # alpha and beta as tagged
    lfs_entry: TaskEntry  # a task holding a Git LFS pointer instead of its data file


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """A repository with tasks alpha, beta and extra (the oracle writes the answer, doing
    nothing fails), tag v1, and a later commit that changes alpha (so the tag, not the branch
    head, must be what is fetched)."""
    root = tmp_path_factory.mktemp("registry")
    work = root / "work"
    (work / "tasks").mkdir(parents=True)
    git(work, "init", "-q")
    for name in ("alpha", "beta", "extra", "lfs-data"):
        make_task(work / "tasks", name)
    (work / "tasks" / "lfs-data" / "environment" / "data.bin").write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64 + "\nsize 12345\n"
    )
    (work / "README.md").write_text("a registry of tasks\n")
    tag_commit = commit_all(work, "tasks v1")
    git(work, "tag", "-a", "v1", "-m", "v1")
    tagged = build_manifest(work / "tasks", TASK_SET, task_ids=["alpha", "beta", "lfs-data"])
    (work / "tasks" / "alpha" / "instruction.md").write_text("Changed after the tag.\n")
    commit_all(work, "after v1")
    served = root / "served"
    served.mkdir()
    git(root, "clone", "-q", "--bare", str(work), str(served / "reg.git"))
    with git_daemon(served) as base_url:
        yield Registry(f"{base_url}/reg.git", tag_commit, tuple(tagged.tasks[:2]), tagged.tasks[2])


def write_manifest(
    folder: Path,
    registry: Registry,
    *,
    entries: list[TaskEntry] | None = None,
    **source: Any,
) -> Path:
    source_registry = {
        "name": "loopback",
        "git_url": registry.url,
        "git_tag": "v1",
        "tasks_path": "tasks",
        "task_digest_algorithm": TASK_DIGEST_ALGORITHM,
    }
    for key, value in source.items():
        if value is None:
            source_registry.pop(key, None)
        else:
            source_registry[key] = value
    manifest = TaskSetManifest.create(
        task_set=TASK_SET,
        tasks=entries if entries is not None else list(registry.entries),
        source_registry=source_registry,
    )
    file = folder / "manifest.json"
    file.write_text(dumps_manifest(manifest))
    return file


def cli(*args: str | Path, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SKILLSBENCH_TASKS_DIR"}
    if cache is not None:
        env["SKILLSBENCH_TASK_CACHE"] = str(cache)
    return subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=env,
        timeout=300,
    )


def fetch(manifest: Path, cache: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return cli("task-set", "fetch", manifest, "--cache-dir", cache, *more)


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


def assert_nothing_cached(cache: Path) -> None:
    """No entry, and no half-written temporary folder, is left behind."""
    assert not cache.exists() or list(cache.iterdir()) == []


def test_fetch_gets_the_tagged_tasks_and_checks_them(tmp_path: Path, registry: Registry) -> None:
    manifest = write_manifest(tmp_path, registry)
    cache = tmp_path / "cache"
    done = fetch(manifest, cache)
    assert done.returncode == 0, done.stderr
    tasks = Path(done.stdout.strip())
    digest = json.loads(manifest.read_text())["task_set_digest"]
    assert tasks == entry_dir(cache, TASK_SET, digest) / "tasks"
    assert sorted(p.name for p in tasks.iterdir()) == ["alpha", "beta"]  # not extra
    assert (tasks / "alpha" / "instruction.md").read_text() == INSTRUCTION  # the tag's
    assert os.access(tasks / "alpha" / "solution" / "solve.sh", os.X_OK)
    assert [p.name for p in cache.iterdir()] == [tasks.parent.name]  # no temporary folder left
    record = json.loads((tasks.parent / RECORD_NAME).read_text())
    assert record["source"] == {
        "url": registry.url,
        "git_tag": "v1",
        "git_commit": registry.tag_commit,
        "tasks_path": "tasks",
    }
    assert record["task_digests_checked"] is True
    assert f"fetched {TASK_SET}: 2 tasks" in done.stderr
    assert f"commit {registry.tag_commit[:12]}" in done.stderr
    assert "task-set fetch" not in done.stderr and "run --task-set" in done.stderr  # next: hint
    verify = cli("task-set", "verify", manifest, "--tasks-dir", tasks, "--check-task-digests")
    assert verify.returncode == 0, verify.stderr


def test_refetch_is_idempotent_and_force_replaces(tmp_path: Path, registry: Registry) -> None:
    manifest = write_manifest(tmp_path, registry)
    cache = tmp_path / "cache"
    first = fetch(manifest, cache)
    assert first.returncode == 0, first.stderr
    entry = Path(first.stdout.strip()).parent
    inode = entry.stat().st_ino
    again = fetch(manifest, cache)
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout
    assert "already fetched" in again.stderr
    assert entry.stat().st_ino == inode  # kept, not rewritten
    # A damaged entry is fetched again (and replaced whole), as is one --force names.
    (entry / "tasks" / "beta" / "instruction.md").write_text("tampered\n")
    repaired = fetch(manifest, cache)
    assert repaired.returncode == 0, repaired.stderr
    assert "already fetched" not in repaired.stderr
    assert (entry / "tasks" / "beta" / "instruction.md").read_text() == INSTRUCTION
    inode = entry.stat().st_ino
    forced = fetch(manifest, cache, "--force")
    assert forced.returncode == 0, forced.stderr
    assert entry.stat().st_ino != inode
    assert [p.name for p in cache.iterdir()] == [entry.name]
    # A forced fetch that fails leaves the entry there as it was.
    inode = entry.stat().st_ino
    closed = f"git://127.0.0.1:{free_port()}/reg.git"
    one_line_error(fetch(manifest, cache, "--force", "--source", closed))
    assert entry.stat().st_ino == inode
    assert [p.name for p in cache.iterdir()] == [entry.name]
    assert fetch(manifest, cache).stdout == first.stdout


def test_a_killed_fetchs_leftovers_are_swept_once_stale(tmp_path: Path, registry: Registry) -> None:
    cache = tmp_path / "cache"
    stale, live = cache / ".fetch-killed", cache / ".fetch-running"
    for folder in (stale / "repo", live / "repo"):
        folder.mkdir(parents=True)
    two_days_ago = time.time() - 2 * 24 * 3600
    os.utime(stale, (two_days_ago, two_days_ago))
    assert fetch(write_manifest(tmp_path, registry), cache).returncode == 0
    assert not stale.exists()
    assert live.is_dir()  # another fetch may still be writing it


def test_a_commit_pin_must_match_the_tag(tmp_path: Path, registry: Registry) -> None:
    good = write_manifest(tmp_path, registry, git_commit=registry.tag_commit)
    assert fetch(good, tmp_path / "ok").returncode == 0
    wrong = write_manifest(tmp_path, registry, git_commit="0" * 40)
    cache = tmp_path / "cache"
    line = one_line_error(fetch(wrong, cache))
    assert f"tag 'v1' is commit {registry.tag_commit}" in line
    assert "0" * 40 in line
    assert_nothing_cached(cache)


def test_a_commit_alone_is_a_pin(tmp_path: Path, registry: Registry) -> None:
    manifest = write_manifest(tmp_path, registry, git_tag=None, git_commit=registry.tag_commit)
    done = fetch(manifest, tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    assert f"at commit {registry.tag_commit}" in done.stderr
    tasks = Path(done.stdout.strip())
    assert (tasks / "alpha" / "instruction.md").read_text() == INSTRUCTION
    unknown = write_manifest(tmp_path, registry, git_tag=None, git_commit="1" * 40)
    line = one_line_error(fetch(unknown, tmp_path / "other"))
    assert f"{registry.url} has no commit {'1' * 40}" in line
    assert_nothing_cached(tmp_path / "other")


def test_a_wrong_pinned_tag_is_refused(tmp_path: Path, registry: Registry) -> None:
    manifest = write_manifest(tmp_path, registry, git_tag="v9")
    cache = tmp_path / "cache"
    line = one_line_error(fetch(manifest, cache))
    assert f"{registry.url} has no tag 'v9'" in line
    assert_nothing_cached(cache)


def test_a_missing_task_is_refused_by_name(tmp_path: Path, registry: Registry) -> None:
    ghost = registry.entries[0].model_copy(update={"task_id": "ghost"})
    manifest = write_manifest(tmp_path, registry, entries=[*registry.entries, ghost])
    cache = tmp_path / "cache"
    line = one_line_error(fetch(manifest, cache))
    assert "the source has no folder for 1 task(s): ghost; nothing fetched" in line
    assert_nothing_cached(cache)


def test_a_digest_mismatch_is_refused_by_name(tmp_path: Path, registry: Registry) -> None:
    alpha, beta = registry.entries
    wrong = beta.model_copy(update={"task_digest": "sha256:" + "ab" * 32})
    manifest = write_manifest(tmp_path, registry, entries=[alpha, wrong])
    cache = tmp_path / "cache"
    line = one_line_error(fetch(manifest, cache))
    assert "task_digest differs from the manifest's for 1 task(s): beta" in line
    assert_nothing_cached(cache)


def test_git_lfs_pointers_are_refused_by_name(tmp_path: Path, registry: Registry) -> None:
    manifest = write_manifest(tmp_path, registry, entries=[*registry.entries, registry.lfs_entry])
    cache = tmp_path / "cache"
    line = one_line_error(fetch(manifest, cache))
    assert "Git LFS pointers instead of files (install git-lfs, then fetch again) in 1" in line
    assert line.endswith("lfs-data; nothing fetched")
    assert_nothing_cached(cache)


def test_digests_of_an_unknown_algorithm_are_not_checked(
    tmp_path: Path, registry: Registry
) -> None:
    """As for skillsbench-v1.1, whose task_digest algorithm is not public: ids only."""
    alpha, beta = registry.entries
    other = beta.model_copy(update={"task_digest": "sha256:" + "ab" * 32})
    manifest = write_manifest(
        tmp_path, registry, entries=[alpha, other], task_digest_algorithm=None
    )
    done = fetch(manifest, tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    assert "task digests not checked" in done.stderr


def test_an_unreachable_server_is_one_line(tmp_path: Path, registry: Registry) -> None:
    closed = f"git://127.0.0.1:{free_port()}/reg.git"
    manifest = write_manifest(tmp_path, registry, git_url=closed)
    cache = tmp_path / "cache"
    line = one_line_error(fetch(manifest, cache))
    assert line.startswith(f"error: cannot fetch tag 'v1' from {closed}: ")
    assert "unable to connect" in line
    assert_nothing_cached(cache)


def test_source_overrides_the_registry_url(tmp_path: Path, registry: Registry) -> None:
    manifest = write_manifest(tmp_path, registry, git_url=None, name="nowhere")
    line = one_line_error(fetch(manifest, tmp_path / "cache"))
    assert "registry 'nowhere', which has no git_url" in line and "--source URL" in line
    done = fetch(manifest, tmp_path / "cache", "--source", registry.url)
    assert done.returncode == 0, done.stderr


def test_a_set_without_source_registry_is_refused() -> None:
    line = one_line_error(cli("task-set", "fetch", "examples"))
    assert "task set 'examples' has no source_registry" in line


def test_run_finds_the_fetched_tasks(tmp_path: Path, registry: Registry) -> None:
    manifest = write_manifest(tmp_path, registry)
    cache = tmp_path / "cache"
    before = cli("run", "--task-set", manifest, "--agent", "oracle", cache=cache)
    line = one_line_error(before)
    assert "2 of its 2 tasks have no task folder" in line
    assert f"task-set fetch {manifest}" in line
    assert fetch(manifest, cache).returncode == 0
    done = cli(
        "run", "--task-set", manifest, "--agent", "oracle", "--expect", "passed",
        "--jobs-dir", tmp_path / "jobs", "--task-cache", cache,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "2/2 passed" in done.stdout
    (run,) = (tmp_path / "jobs" / "runs").iterdir()
    resume = ("run", "--resume", run.name, "--jobs-dir", tmp_path / "jobs")
    assert "have no folder in" in one_line_error(cli(*resume, cache=tmp_path / "elsewhere"))
    resumed = cli(*resume, "--task-cache", cache)  # the stored run's set, found in the cache
    assert resumed.returncode == 0, resumed.stderr
    assert f"run {run.name} had already ended" in resumed.stderr


def test_run_of_the_published_set_says_how_to_get_its_tasks(tmp_path: Path) -> None:
    line = one_line_error(
        cli("run", "--task-set", "skillsbench-v1.1", "--agent", "oracle", cache=tmp_path)
    )
    assert "87 of its 87 tasks have no task folder" in line
    assert "3d-scan-calc" in line
    assert "task-set fetch skillsbench-v1.1" in line


def test_git_missing_is_one_line(tmp_path: Path, registry: Registry) -> None:
    manifest = write_manifest(tmp_path, registry)
    bare_path = tmp_path / "bin"
    bare_path.mkdir()
    os.symlink(sys.executable, bare_path / "python")
    env = {**os.environ, "PATH": str(bare_path)}
    done = subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", "task-set", "fetch", str(manifest),
         "--cache-dir", str(tmp_path / "cache")],
        capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=120,
    )  # fmt: skip
    assert "git is not installed" in one_line_error(done)
    assert shutil.which("git") is not None  # the suite's own PATH still has it


def test_task_set_check_finds_the_fetched_tasks(tmp_path: Path, registry: Registry) -> None:
    manifest = write_manifest(tmp_path, registry)
    cache = tmp_path / "cache"
    before = cli("task-set", "check", "--task-set", manifest, cache=cache)
    assert f"task-set fetch {manifest}" in one_line_error(before)
    assert fetch(manifest, cache).returncode == 0
    done = cli(
        "task-set", "check", "--task-set", manifest, "--jobs-dir", tmp_path / "jobs", cache=cache
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2/2 tasks ok" in done.stdout


def test_building_images_of_an_unfetched_set_says_how_to_get_its_tasks(tmp_path: Path) -> None:
    done = cli("images", "build-tasks", "--task-set", "skillsbench-v1.1", cache=tmp_path)
    assert "task-set fetch skillsbench-v1.1" in one_line_error(done)


@pytest.mark.docker
def test_the_readme_flow_in_docker(tmp_path: Path, registry: Registry, docker_client: Any) -> None:
    """fetch, build the images, run the oracle in Docker: the README's real-benchmark steps, on
    the loopback registry, with a local base image standing in for python:3.11-slim."""
    from tests.support.docker_images import ensure_test_image

    base_map = f"python:3.11-slim={ensure_test_image(docker_client, 'python')}"
    manifest = write_manifest(tmp_path, registry)
    cache = tmp_path / "cache"
    assert fetch(manifest, cache).returncode == 0
    images = tmp_path / "prebuilt_images.json"
    built = cli(
        "images", "build-tasks", "--task-set", manifest, "--output", images,
        "--base-image-map", base_map, cache=cache,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    assert sorted(json.loads(images.read_text())) == ["alpha", "beta"]
    done = cli(
        "run", "--task-set", manifest, "--agent", "oracle", "--environment", "docker",
        "--expect", "passed", "--jobs-dir", tmp_path / "jobs", "--base-image-map", base_map,
        cache=cache,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2/2 passed" in done.stdout


def test_assess_of_an_unfetched_set_says_how_to_get_its_tasks(tmp_path: Path) -> None:
    """Refused before a green agent or worker starts (no participant answers on port 9)."""
    config = '{"task_set": "skillsbench-v1.1", "tasks": "all"}'
    done = cli("assess", "--participant", "http://127.0.0.1:9/", "--config", config, cache=tmp_path)
    assert "task-set fetch skillsbench-v1.1" in one_line_error(done)
