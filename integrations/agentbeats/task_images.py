"""Task environment images in the three shapes operators hand us, read into one entry list.

Accepted: the worker's prebuilt map ``{task_id: "ref@sha256:…"}`` (what ``images build-tasks``
writes; built for linux/amd64), an entry list ``{"images": [{task_id, image, image_digest,
image_platform}]}``, or a deploy bundle (its ``public_readiness_task_environment_images``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from leaderboard.image_refs import REQUIRED_PLATFORM, parse_image_ref

BUNDLE_KEY = "public_readiness_task_environment_images"


def entry_from_ref(task_id: str, ref: str, platform: str = REQUIRED_PLATFORM) -> dict[str, Any]:
    try:
        digest = parse_image_ref(ref).digest
    except ValueError:
        digest = None
    return {"image": ref, "image_digest": digest, "image_platform": platform, "task_id": task_id}


def read_task_images(data: Any, source: str) -> list[dict[str, Any]]:
    if isinstance(data, dict) and isinstance(data.get(BUNDLE_KEY), dict):
        data = data[BUNDLE_KEY]
    if isinstance(data, dict) and isinstance(data.get("images"), list):
        entries = data["images"]
        if not all(isinstance(e, dict) for e in entries):
            raise ValueError(f"{source}: images[] entries must be objects")
        return [dict(e) for e in entries]
    if isinstance(data, dict) and data and all(isinstance(v, str) for v in data.values()):
        return [entry_from_ref(task_id, ref) for task_id, ref in sorted(data.items())]
    raise ValueError(
        f"{source}: expected a task_id -> image map, an images[] list or a deploy bundle"
    )


def load_task_images(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path.name} is not valid JSON: {exc}") from exc
    return read_task_images(data, path.name)
