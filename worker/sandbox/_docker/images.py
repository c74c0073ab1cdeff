"""Task images: the build context's content tag, its preparation for the skills condition, the
build itself (one at a time per tag, stoppable: :class:`BuildStop`) and prebuilt images."""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import socket
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from worker.core.digests import content_digest
from worker.sandbox._docker.client import client_lock
from worker.sandbox._docker.client import errors as docker_errors
from worker.sandbox.base import SandboxError
from worker.sandbox.dockerfile import (
    DockerfileError,
    base_images,
    map_base_images,
    skills_copy_lines,
)
from worker.sandbox.errors import ImageBuildFailed

IMAGE_REPOSITORY = "skillsbench-env"
_build_locks: dict[str, threading.Lock] = {}
# How often a build waiting for another build of its tag looks whether it was stopped.
_LOCK_POLL_SEC = 0.2


class BuildStopped(Exception):
    """The build was stopped (:meth:`BuildStop.stop`) before it ended."""


class BuildStop:
    """A build's stop switch: set from the event loop (a timeout, a cancel), seen by the thread
    that builds. The engine ends a build whose client goes away (its ``RUN`` container is killed
    and removed), so stopping shuts the build's connection down: the thread's read returns at
    once, and no build outlives its trial."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stopped = False
        self._connection: Any = None

    @property
    def stopped(self) -> bool:
        return self._stopped

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            connection = self._connection
        if connection is not None:
            _shut(connection)

    def attach(self, connection: Any) -> None:
        """The build's connection, once the engine answered (shut at once if already stopped)."""
        with self._lock:
            self._connection = connection
            stopped = self._stopped
        if stopped:
            _shut(connection)


def _shut(connection: Any) -> None:
    sock = getattr(connection, "_sock", connection)  # a SocketIO wraps the socket
    with contextlib.suppress(OSError):
        if isinstance(sock, socket.socket):
            sock.shutdown(socket.SHUT_RDWR)
        else:  # an ssh channel
            sock.close()


def build_context_digest(environment: Path, with_skills: bool, skills_dir: str) -> str:
    """Content hash of the build context and the skills condition (tags never collide); the
    context's own hash is remembered per (paths, sizes, mtimes) by :func:`content_digest`."""
    key = f"v2|skills={with_skills}|{skills_dir}|{content_digest(environment)}"
    return hashlib.sha256(key.encode()).hexdigest()[:20]


def image_tag(task_id: str, digest: str) -> str:
    name = re.sub(r"[^a-z0-9._-]+", "-", task_id.lower()).strip(".-_") or "task"
    return f"{IMAGE_REPOSITORY}/{name[:100]}:{digest}"


def local_build_tag(
    client: Any,
    task_id: str,
    environment: Path,
    with_skills: bool,
    skills_dir: str,
    base_map: Mapping[str, str] | None = None,
) -> str:
    """The tag a self-built task image goes by: the build context's content hash and the local
    image ids of its ``FROM`` images, so a base image that changed here (re-pulled, rebuilt,
    re-tagged) makes a new build instead of reusing one made from the old base. A ``FROM``
    substituted by ``base_map`` counts as ``ref->local=<local id>``: another tag."""
    digest = build_context_digest(environment, with_skills, skills_dir)
    bases = _base_image_ids(client, environment / "Dockerfile", base_map or {})
    if bases:
        digest = hashlib.sha256("|".join([digest, *bases]).encode()).hexdigest()[:20]
    return image_tag(task_id, digest)


def _base_image_ids(client: Any, dockerfile: Path, base_map: Mapping[str, str]) -> list[str]:
    try:
        refs = base_images(dockerfile.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, DockerfileError):
        return []  # the build itself reports an unreadable Dockerfile
    errors = docker_errors()
    ids = []
    for ref in refs:
        local = base_map.get(ref)
        if local is not None:
            try:
                ids.append(f"{ref}->{local}={client.images.get(local).id}")
            except errors.ImageNotFound:
                raise ImageBuildFailed(
                    f"base image map: {ref} -> {local}, but there is no local image {local}"
                ) from None
            except errors.DockerException as exc:
                raise SandboxError(f"cannot inspect base image {local}: {exc}") from None
            continue
        try:
            ids.append(f"{ref}={client.images.get(ref).id}")
        except errors.ImageNotFound:
            ids.append(f"{ref}=absent")  # the build pulls it; the next trial's tag then has its id
        except errors.DockerException as exc:
            raise SandboxError(f"cannot inspect base image {ref}: {exc}") from None
    return ids


def prepare_context(
    environment: Path,
    target: Path,
    with_skills: bool,
    skills_dir: str,
    base_map: Mapping[str, str] | None = None,
) -> None:
    """Copy the build context to ``target`` and fit it to the skills condition.

    With skills: ``COPY skills <skills_dir>`` is appended. Without: ``skills/`` is left out and
    the Dockerfile's own ``COPY skills ...`` lines are dropped (as BenchFlow's no-skill mode).
    ``base_map``: ``FROM`` references rewritten to local images.
    """
    shutil.copytree(environment, target, symlinks=True)
    dockerfile = target / "Dockerfile"
    text = dockerfile.read_text(encoding="utf-8")
    has_skills = (target / "skills").is_dir()
    if with_skills and has_skills:
        text = text.rstrip("\n") + f"\nCOPY skills {skills_dir.rstrip('/')}/\n"
    elif not with_skills:
        drop = skills_copy_lines(text)
        lines = text.splitlines()
        text = "\n".join(line for number, line in enumerate(lines, 1) if number not in drop) + "\n"
        if has_skills:
            shutil.rmtree(target / "skills")
    text, _ = map_base_images(text, base_map or {})
    dockerfile.write_text(text, encoding="utf-8")


def unbuilt_tasks(
    client: Any, configs: Sequence[tuple[str, Path, bool, str, Mapping[str, str]]]
) -> list[str]:
    """Of ``(task_id, environment dir, with_skills, skills_dir, base map)``, the tasks whose self-built
    image (its content tag, e.g. made by ``images build-tasks`` on this engine) is absent: running
    them would need ``POST /build``. Only inspects (what Amber's Docker gateway allows)."""
    errors = docker_errors()
    missing = []
    for task_id, environment, with_skills, skills_dir, base_map in configs:
        try:
            client.images.get(
                local_build_tag(client, task_id, environment, with_skills, skills_dir, base_map)
            )
        except errors.ImageNotFound:
            missing.append(task_id)
        except OSError as exc:
            raise SandboxError(f"task {task_id}: cannot read environment/: {exc}") from None
        except errors.DockerException as exc:
            raise SandboxError(f"cannot inspect the image of task {task_id}: {exc}") from None
    return missing


def ensure_prebuilt(client: Any, ref: str) -> str:
    errors = docker_errors()
    try:
        client.images.get(ref)
    except errors.ImageNotFound:
        try:
            client.images.pull(ref)
        except errors.DockerException as exc:
            raise SandboxError(f"prebuilt image {ref} is not available: {exc}") from None
    return ref


def image_defaults(client: Any, image: str) -> tuple[str | None, str | None]:
    """The image's ``WORKDIR`` and ``USER`` (None where it sets none)."""
    config = client.images.get(image).attrs.get("Config") or {}
    return config.get("WorkingDir") or None, config.get("User") or None


def build_image(
    client: Any,
    environment: Path,
    tag: str,
    labels: dict[str, str],
    with_skills: bool,
    skills_dir: str,
    base_map: Mapping[str, str] | None = None,
    stop: BuildStop | None = None,
) -> None:
    """Build ``tag`` unless it exists (blocking). With ``stop``: :class:`BuildStopped` once it is
    stopped, the engine's build ended with it (waiting for another build of the same tag too)."""
    errors = docker_errors()
    stop = stop or BuildStop()
    with client_lock:
        lock = _build_locks.setdefault(tag, threading.Lock())
    while not lock.acquire(timeout=_LOCK_POLL_SEC):  # one build at a time per tag
        if stop.stopped:
            raise BuildStopped
    try:
        if stop.stopped:
            raise BuildStopped
        try:
            client.images.get(tag)  # later callers reuse the image
            return
        except errors.ImageNotFound:
            pass
        with tempfile.TemporaryDirectory(prefix="skillsbench-build-") as tmp:
            context = Path(tmp) / "context"
            try:
                prepare_context(environment, context, with_skills, skills_dir, base_map)
            except (OSError, DockerfileError) as exc:
                raise ImageBuildFailed(f"cannot prepare the build context: {exc}") from None
            _build(context, tag, labels, stop)
    finally:
        lock.release()


def _build(context: Path, tag: str, labels: dict[str, str], stop: BuildStop) -> None:
    """``POST /build`` of ``context`` on a client of its own, whose connection ``stop`` can shut
    (requests' response hook hands it over as soon as the engine answers)."""
    import docker

    errors = docker_errors()
    try:
        builder = docker.from_env(timeout=300)
    except errors.DockerException as exc:
        raise SandboxError(f"no Docker Engine answers: {exc}") from None
    api = builder.api

    def hand_over(response: Any, *args: Any, **kwargs: Any) -> None:
        with contextlib.suppress(Exception):  # an error status: the build fails by itself
            stop.attach(api._get_raw_response_socket(response))

    api.hooks["response"].append(hand_over)
    try:
        if stop.stopped:
            raise BuildStopped
        builder.images.build(
            path=str(context), tag=tag, labels=labels, rm=True, forcerm=True, pull=False
        )
    except errors.BuildError as exc:
        if stop.stopped:
            raise BuildStopped from None
        logged = (str(e.get("stream") or e.get("error") or "") for e in exc.build_log)
        tail = [text.strip() for text in logged if text.strip()][-5:]
        detail = " | ".join(tail) or str(exc)
        raise ImageBuildFailed(f"image build failed: {exc.msg}: {detail}") from None
    except BuildStopped:
        raise
    except Exception as exc:  # the engine, not the Dockerfile: transient (or our stop)
        if stop.stopped:
            raise BuildStopped from None
        raise SandboxError(f"image build failed: {type(exc).__name__}: {exc}") from None
    finally:
        builder.close()
