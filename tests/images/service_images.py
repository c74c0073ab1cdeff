"""Build the three service images for tests, from the local Python base and a host wheelhouse.

Build containers here cannot verify TLS to the package index, so the wheels are downloaded on the
host (integrations/images/wheelhouse.sh, cached by a hash of uv.lock and the pinned tool versions)
and the images build with `WHEELHOUSE=1`. Each image is tagged with a hash of its Dockerfile,
its build context and the base image id, so a re-run with unchanged sources builds nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
SERVICES = {
    "green": "green_agent/Dockerfile",
    "worker": "worker/Dockerfile",
    "purple": "purple_agent/Dockerfile",
}
CONTEXT_SOURCES = (
    "pyproject.toml",
    "uv.lock",
    "README.md",
    "skillsbench_agentbeats",
    "task_sets",
    "leaderboard",
    "worker",
    "green_agent",
    "purple_agent",
    "serving",
    "tasks",
)
SKIP_NAMES = frozenset({"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"})
WHEELHOUSE_SCRIPT = REPO_ROOT / "integrations" / "images" / "wheelhouse.sh"
PLATFORM = "linux/amd64"

_lock = threading.Lock()


@contextlib.contextmanager
def _exclusive() -> Iterator[None]:
    """One builder at a time across threads and processes (pytest-xdist workers)."""
    path = Path(tempfile.gettempdir()) / "skillsbench-service-images.lock"
    with _lock, open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def cache_dir() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return root / "skillsbench-agentbeats"


def wheelhouse_key() -> str:
    digest = hashlib.sha256()
    for path in (REPO_ROOT / "uv.lock", WHEELHOUSE_SCRIPT):
        digest.update(path.read_bytes())
    for line in (REPO_ROOT / "worker" / "Dockerfile").read_text().splitlines():
        if line.startswith(("ARG UV_VERSION=", "ARG HATCHLING_VERSION=")):
            digest.update(line.encode())
    return digest.hexdigest()[:16]


def ensure_wheelhouse() -> Path:
    """The host wheelhouse for the current uv.lock (downloaded once, then reused)."""
    return _download_once(cache_dir() / f"wheelhouse-{wheelhouse_key()}", WHEELHOUSE_SCRIPT)


def _download_once(dest: Path, script: Path, *args: str) -> Path:
    """``dest`` as ``script DEST ARGS`` fills it, run only when no complete copy is cached (into
    a partial folder first, so an interrupted download is never taken for a whole one)."""
    done = dest / ".complete"
    if done.exists():
        return dest
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    done_proc = subprocess.run(
        ["bash", str(script), str(partial), *args],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done_proc.returncode != 0:
        raise RuntimeError(f"{script.name} failed: {done_proc.stderr.strip()[-2000:]}")
    shutil.rmtree(dest, ignore_errors=True)
    partial.rename(dest)
    done.touch()
    return dest


def _source_files() -> list[Path]:
    files: list[Path] = []
    for name in CONTEXT_SOURCES:
        path = REPO_ROOT / name
        if path.is_file():
            files.append(path)
            continue
        for sub in sorted(path.rglob("*")):
            rel = sub.relative_to(REPO_ROOT)
            if sub.is_file() and not SKIP_NAMES.intersection(rel.parts) and sub.suffix != ".pyc":
                files.append(sub)
    return files


def stage_context(dest: Path, wheelhouse: Path | None) -> str:
    """Copy the build context into dest; return a hash of its sources (wheelhouse excluded)."""
    digest = hashlib.sha256()
    for path in _source_files():
        rel = path.relative_to(REPO_ROOT)
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
        digest.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    for dockerfile in SERVICES.values():
        digest.update((REPO_ROOT / dockerfile).read_bytes())
    if wheelhouse is not None:
        wheels = dest / ".wheelhouse"
        wheels.mkdir()
        for wheel in wheelhouse.glob("*.whl"):
            os.link(wheel, wheels / wheel.name)
    return digest.hexdigest()


def image_tag(service: str, context_hash: str, base_id: str) -> str:
    key = hashlib.sha256(f"{context_hash}\0{base_id}\0{service}".encode()).hexdigest()[:12]
    return f"skillsbench-agentbeats-{service}:test-{key}"


def ensure_service_images(client: Any, base_image: str, work_dir: Path) -> dict[str, str]:
    """Build (or reuse) the green, worker and purple images; return service -> tag."""
    with _exclusive():
        base_id = client.images.get(base_image).id
        context = work_dir / "context"
        context_hash = stage_context(context, ensure_wheelhouse())
        tags = {name: image_tag(name, context_hash, base_id) for name in SERVICES}
        for name, dockerfile in SERVICES.items():
            if not _has_image(client, tags[name]):
                build_image(client, context, dockerfile, tags[name], base_image)
        _prune_older(client, tags)
        return tags


def ensure_ray_worker_image(client: Any, base_image: str, work_dir: Path) -> str:
    """Build (or reuse) the worker image with the `ray` extra (WITH_RAY=1): a Ray node."""
    return _ensure_variant(client, base_image, work_dir, "worker-ray", "worker", {"WITH_RAY": "1"})


def _ensure_variant(
    client: Any,
    base_image: str,
    work_dir: Path,
    name: str,
    service: str,
    build_args: dict[str, str],
    cli_wheels: Callable[[], Path] | None = None,
) -> str:
    """Build (or reuse) ``service``'s image with ``build_args``, tagged as ``name``; with
    ``cli_wheels`` in the context as .wheelhouse-clis."""
    with _exclusive():
        base_id = client.images.get(base_image).id
        context = work_dir / "context"
        context_hash = stage_context(context, ensure_wheelhouse())
        if cli_wheels is not None:
            wheels = context / ".wheelhouse-clis"
            wheels.mkdir()
            for wheel in cli_wheels().glob("*.whl"):
                os.link(wheel, wheels / wheel.name)
        variant = json.dumps(build_args, sort_keys=True)
        tag = image_tag(name, f"{context_hash}\0{variant}", base_id)
        if not _has_image(client, tag):
            build_image(client, context, SERVICES[service], tag, base_image, build_args)
        _prune_older(client, {name: tag})
        return tag


def _prune_older(client: Any, keep: dict[str, str]) -> None:
    """Remove test tags of earlier sources, so repeated runs do not fill the disk."""
    import docker.errors

    for current in keep.values():
        repository = current.rsplit(":", 1)[0]
        for image in client.images.list(name=repository):
            for tag in image.tags:
                if tag != current and tag.startswith(f"{repository}:test-"):
                    with contextlib.suppress(docker.errors.APIError):
                        client.images.remove(tag)


def build_image(
    client: Any,
    context: Path,
    dockerfile: str,
    tag: str,
    base_image: str,
    extra_args: dict[str, str] | None = None,
) -> None:
    stream = client.api.build(
        path=str(context),
        dockerfile=dockerfile,
        tag=tag,
        buildargs={"BASE_IMAGE": base_image, "WHEELHOUSE": "1", **(extra_args or {})},
        platform=PLATFORM,
        rm=True,
        forcerm=True,
        decode=True,
        timeout=1800,
    )
    log: list[str] = []
    for chunk in stream:
        if "error" in chunk:
            tail = "".join(log[-30:])
            raise RuntimeError(f"building {tag} from {dockerfile} failed: {chunk['error']}\n{tail}")
        if "stream" in chunk:
            log.append(chunk["stream"])
    if not _has_image(client, tag):
        raise RuntimeError(f"building {tag} produced no image:\n{''.join(log[-30:])}")


def _has_image(client: Any, ref: str) -> bool:
    import docker.errors

    try:
        client.images.get(ref)
    except docker.errors.ImageNotFound:
        return False
    return True


CLI_WHEELHOUSE_SCRIPT = REPO_ROOT / "integrations" / "images" / "cli-wheelhouse.sh"


def ensure_cli_wheelhouse(clis: tuple[str, ...]) -> Path:
    """The PyPI harness CLIs' wheels at the purple Dockerfile's pins (downloaded once)."""
    digest = hashlib.sha256(" ".join(clis).encode())
    for path in (CLI_WHEELHOUSE_SCRIPT, REPO_ROOT / SERVICES["purple"]):
        digest.update(path.read_bytes())
    dest = cache_dir() / f"wheelhouse-clis-{digest.hexdigest()[:16]}"
    return _download_once(dest, CLI_WHEELHOUSE_SCRIPT, *clis)


def ensure_purple_cli_image(
    client: Any,
    base_image: str,
    work_dir: Path,
    clis: tuple[str, ...],
    cli_python: str | None = None,
) -> str:
    """Build (or reuse) the purple image with HARNESS_CLIS=``clis`` from the two wheelhouses
    (and CLI_PYTHON=``cli_python``, a path in ``base_image``, when given)."""
    args = {"HARNESS_CLIS": " ".join(clis)}
    if cli_python is not None:
        args["CLI_PYTHON"] = cli_python
    return _ensure_variant(
        client,
        base_image,
        work_dir,
        "purple-clis",
        "purple",
        args,
        cli_wheels=lambda: ensure_cli_wheelhouse(clis),
    )
