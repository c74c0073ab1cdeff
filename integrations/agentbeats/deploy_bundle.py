"""The deploy bundle (``skillsbench.agentbeats.deploy_bundle.v1``): what a deployment registers.

It pins the green, worker and purple images and a prebuilt environment image for every task of
the task set, and refuses to exist otherwise: a bundle is only written when it passes the same
image and coverage rules as public-readiness evidence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from leaderboard.evidence import IMAGE_ROLES
from leaderboard.findings import Finding, json_path
from leaderboard.readiness_images import check_images_section, check_task_images_section
from leaderboard.task_set_lookup import TaskSetSummary

DEPLOY_BUNDLE_SCHEMA_VERSION = "skillsbench.agentbeats.deploy_bundle.v1"
DEFAULT_MANIFEST_PATHS: dict[str, str] = {
    "green": "integrations/agentbeats/green-agent.json5",
    "worker": "integrations/agentbeats/worker.json5",
    "purple": "integrations/agentbeats/participant-agent-under-test.json5",
}


def read_branch_images(data: Any, source: str) -> dict[str, str]:
    """Flat ``<role>_image{,_digest,_platform}`` from image evidence or a components map."""
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected a JSON object")
    if all(f"{role}_image" in data for role in IMAGE_ROLES):
        return {k: v for k, v in data.items() if k.startswith(IMAGE_ROLES) and isinstance(v, str)}
    components = data.get("components", data)
    flat: dict[str, str] = {}
    for role in IMAGE_ROLES:
        entry = components.get(role) if isinstance(components, dict) else None
        if not isinstance(entry, dict):
            raise ValueError(f"{source}: no {role} image (need {role}_image or components.{role})")
        for suffix in ("", "_digest", "_platform"):
            value = entry.get(f"image{suffix}")
            if isinstance(value, str):
                flat[f"{role}_image{suffix}"] = value
    return flat


def build_deploy_bundle(
    images: Mapping[str, str],
    task_images: list[dict[str, Any]],
    task_set: TaskSetSummary,
    *,
    manifest_paths: Mapping[str, str] = DEFAULT_MANIFEST_PATHS,
    image_tag: str | None = None,
    source_revision: str | None = None,
) -> tuple[dict[str, Any], list[Finding]]:
    """The bundle and the findings that block it (an empty list means it may be written)."""
    section = {"task_set": task_set.task_set, "images": task_images}
    findings = check_images_section(dict(images)) + check_task_images_section(
        section, lambda _: task_set
    )
    for role in IMAGE_ROLES:
        if f"{role}_image" not in images:
            findings.append(
                Finding(
                    path=json_path(f"{role}_image"), rule="missing_key", message=f"no {role} image"
                )
            )
    bundle: dict[str, Any] = {
        "schema_version": DEPLOY_BUNDLE_SCHEMA_VERSION,
        "components": {
            role: {
                "image": images.get(f"{role}_image"),
                "image_digest": images.get(f"{role}_image_digest"),
                "image_platform": images.get(f"{role}_image_platform"),
                "manifest_path": manifest_paths[role],
            }
            for role in IMAGE_ROLES
        },
        "image_tag": image_tag,
        "public_readiness_images": {
            f"{role}_image{s}": images.get(f"{role}_image{s}")
            for role in IMAGE_ROLES
            for s in ("", "_digest", "_platform")
        },
        "public_readiness_task_environment_images": {
            "images": sorted(task_images, key=lambda e: str(e.get("task_id")))
        },
        "source_revision": source_revision,
        "task_set": {
            "task_count": len(task_set.task_ids),
            "task_set": task_set.task_set,
            "task_set_digest": task_set.task_set_digest,
        },
        "worker_prebuilt_images": {
            str(e.get("task_id")): e.get("image")
            for e in sorted(task_images, key=lambda e: str(e.get("task_id")))
        },
    }
    return bundle, findings
