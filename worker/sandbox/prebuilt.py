"""Prebuilt task environment images: build them ahead of a run and pin each by digest.

`images build-tasks` builds every selected task's with-skills image through the docker sandbox's
own build path (same context preparation, same content tag), so a worker on the same engine finds
them already built. With a registry the images are pushed and the map holds
`registry/repository@sha256:<manifest digest>`: what `SKILLSBENCH_WORKER_PREBUILT_IMAGES`
(worker.sandbox.settings.PrebuiltImages) and the deploy bundle consume. Without one there is no
manifest digest yet: the map holds the local image ids (`sha256:…`), a record of what was built
(the worker on this engine reuses the images through their content tags, no map needed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from task_sets.task import Task
from worker.sandbox._docker.images import build_image, local_build_tag
from worker.sandbox.base import SandboxError

SUPPORTED_PLATFORMS = ("linux/amd64",)
DEFAULT_REPOSITORY = "skillsbench-task-env"
LABEL_TASK = "skillsbench.task"


@dataclass(frozen=True)
class BuiltImage:
    task_id: str
    local_tag: str
    image_id: str
    ref: str  # what the prebuilt map records


def check_platform(platform: str, client: Any) -> None:
    if platform not in SUPPORTED_PLATFORMS:
        raise ValueError(
            f"--platform {platform!r} is not supported (supported: {', '.join(SUPPORTED_PLATFORMS)})"
        )
    info = client.version()
    engine = f"{info.get('Os', '?')}/{_normalize_arch(info.get('Arch', '?'))}"
    if engine != platform:
        raise ValueError(f"--platform {platform}: this Docker Engine builds {engine} images")


def _normalize_arch(arch: str) -> str:
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(arch, arch)


def build_task_image(
    client: Any, task: Task, platform: str, base_map: Mapping[str, str] | None = None
) -> tuple[str, str]:
    """Build (or reuse) the task's with-skills image; return (local tag, image id).
    ``base_map``: ``FROM`` references built from local images instead (the docker sandbox's
    substitution, so the tag is the one a worker with the same map looks for)."""
    env = task.config.environment
    try:
        tag = local_build_tag(
            client, task.task_id, task.environment_dir, True, env.skills_dir, base_map
        )
        build_image(
            client,
            task.environment_dir,
            tag,
            {LABEL_TASK: task.task_id},
            True,
            env.skills_dir,
            base_map,
        )
    except SandboxError as exc:
        raise ValueError(f"task {task.task_id}: {exc}") from None
    image = client.images.get(tag)
    built = f"{image.attrs.get('Os')}/{image.attrs.get('Architecture')}"
    if built != platform:
        raise ValueError(f"task {task.task_id}: built a {built} image, not {platform}")
    return tag, str(image.id)


def push_image(client: Any, local_tag: str, registry: str, repository: str, task_id: str) -> str:
    """Push under `registry/repository:<task>-<content tag>`; return `registry/repository@digest`."""
    name = f"{registry.rstrip('/')}/{repository.strip('/')}"
    remote_tag = f"{task_id}-{local_tag.rsplit(':', 1)[1]}"[:128]
    image = client.images.get(local_tag)
    image.tag(name, remote_tag)
    digest: str | None = None
    for chunk in client.api.push(name, tag=remote_tag, stream=True, decode=True):
        if "error" in chunk:
            raise ValueError(f"push of {name}:{remote_tag} failed: {chunk['error']}")
        aux = chunk.get("aux") or {}
        if isinstance(aux, dict) and aux.get("Digest"):
            digest = str(aux["Digest"])
    if digest is None:
        repo_digests = client.images.get(local_tag).attrs.get("RepoDigests") or []
        matches = [d for d in repo_digests if d.startswith(name + "@")]
        if not matches:
            raise ValueError(f"push of {name}:{remote_tag} reported no digest")
        return str(matches[0])
    return f"{name}@{digest}"


def build_task_images(
    client: Any,
    tasks: Sequence[Task],
    platform: str = "linux/amd64",
    registry: str | None = None,
    repository: str = DEFAULT_REPOSITORY,
    progress: Callable[[str], None] | None = None,
    base_map: Mapping[str, str] | None = None,
) -> list[BuiltImage]:
    check_platform(platform, client)
    built: list[BuiltImage] = []
    for index, task in enumerate(tasks, 1):
        tag, image_id = build_task_image(client, task, platform, base_map)
        ref = (
            image_id
            if registry is None
            else push_image(client, tag, registry, repository, task.task_id)
        )
        built.append(BuiltImage(task.task_id, tag, image_id, ref))
        if progress is not None:
            progress(f"[{index}/{len(tasks)}] {task.task_id}: {ref}")
    return built


def prebuilt_map(images: Sequence[BuiltImage]) -> dict[str, str]:
    return {image.task_id: image.ref for image in images}
