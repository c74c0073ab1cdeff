"""Readiness rules for images: digest-pinned public green/worker/purple images with linux/amd64
evidence, and a prebuilt environment image for every task of the task set.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from leaderboard.evidence import IMAGE_ROLES, SECTION_KEYS, TASK_IMAGE_KEYS
from leaderboard.findings import EvidenceCollector, Finding, child, json_path
from leaderboard.image_refs import (
    REQUIRED_PLATFORM,
    SHA256_DIGEST,
    parse_image_ref,
    public_image_problems,
)
from leaderboard.task_set_lookup import TaskSetSummary

TaskSetLoader = Callable[[str], TaskSetSummary]


def _check_image(
    c: EvidenceCollector, paths: tuple[str, str, str], ref: Any, digest: Any, platform: Any
) -> None:
    ref_path, digest_path, platform_path = paths
    if not isinstance(ref, str):
        c.add(ref_path, "image_ref_malformed", "must be an image reference string")
    else:
        for rule, message in public_image_problems(ref):
            c.add(ref_path, rule, message)
    if not (isinstance(digest, str) and SHA256_DIGEST.match(digest)):
        c.add(digest_path, "image_digest", "must be sha256:<64 hex>")
    elif isinstance(ref, str):
        try:
            pinned = parse_image_ref(ref).digest
        except ValueError:
            pinned = None
        if pinned is not None and pinned != digest:
            c.add(
                digest_path,
                "image_digest_mismatch",
                f"{digest} is not the digest pinned in {ref!r}",
            )
    if platform != REQUIRED_PLATFORM:
        c.add(
            platform_path,
            "image_platform",
            f"platform evidence must be {REQUIRED_PLATFORM!r}, got {platform!r}",
        )


def check_images(c: EvidenceCollector, section: dict[str, Any]) -> None:
    for role in IMAGE_ROLES:
        key = f"{role}_image"
        if key not in section:
            continue
        paths = (
            json_path("images", key),
            json_path("images", f"{key}_digest"),
            json_path("images", f"{key}_platform"),
        )
        _check_image(
            c, paths, section.get(key), section.get(f"{key}_digest"), section.get(f"{key}_platform")
        )


def check_task_images(c: EvidenceCollector, section: dict[str, Any], loader: TaskSetLoader) -> None:
    base = json_path("task_environment_images")
    name = section.get("task_set")
    summary: TaskSetSummary | None = None
    if isinstance(name, str):
        try:
            summary = loader(name)
        except ValueError as exc:
            c.add(child(base, "task_set"), "task_set_unknown", str(exc))
    elif "task_set" in section:
        c.add(child(base, "task_set"), "task_set_unknown", "must be a task-set name")
    digest = section.get("task_set_digest")
    if summary is not None and "task_set_digest" in section and digest != summary.task_set_digest:
        c.add(
            child(base, "task_set_digest"),
            "task_set_digest_mismatch",
            f"{digest!r} is not the digest of task set {summary.task_set!r} ({summary.task_set_digest})",
        )
    images = section.get("images")
    if "images" in section and not isinstance(images, list):
        c.add(child(base, "images"), "task_image_entry", "must be a list of task image entries")
        return
    seen: Counter[str] = Counter()
    for i, entry in enumerate(images or []):
        path = child(base, "images", i)
        if not isinstance(entry, dict):
            c.add(
                path,
                "task_image_entry",
                "must be an object {task_id, image, image_digest, image_platform}",
            )
            continue
        c.keys(entry, path, TASK_IMAGE_KEYS, TASK_IMAGE_KEYS)
        task_id = entry.get("task_id")
        if isinstance(task_id, str):
            seen[task_id] += 1
            if seen[task_id] == 2:
                c.add(
                    child(path, "task_id"),
                    "task_image_duplicate",
                    f"{task_id!r} has more than one image",
                )
            if summary is not None and task_id not in summary.task_ids:
                c.add(
                    child(path, "task_id"),
                    "task_image_unexpected",
                    f"{task_id!r} is not in task set {summary.task_set!r}",
                )
        paths = (child(path, "image"), child(path, "image_digest"), child(path, "image_platform"))
        _check_image(
            c, paths, entry.get("image"), entry.get("image_digest"), entry.get("image_platform")
        )
    if summary is not None:
        missing = [t for t in summary.task_ids if t not in seen]
        if missing:
            shown = ", ".join(missing[:10]) + (
                f" and {len(missing) - 10} more" if len(missing) > 10 else ""
            )
            c.add(
                child(base, "images"),
                "task_image_coverage",
                f"{len(missing)} of {len(summary.task_ids)} tasks of {summary.task_set!r} have no image: {shown}",
            )


def check_images_section(section: dict[str, Any]) -> list[Finding]:
    """The image rules alone (digest-pinned, public registry, linux/amd64) for one section."""
    c = EvidenceCollector()
    c.keys(section, json_path("images"), SECTION_KEYS["images"], frozenset())
    check_images(c, section)
    return c.findings


def check_task_images_section(section: dict[str, Any], loader: TaskSetLoader) -> list[Finding]:
    """Task environment image rules: pinned public images covering the whole task set."""
    c = EvidenceCollector()
    check_task_images(c, section, loader)
    return c.findings
