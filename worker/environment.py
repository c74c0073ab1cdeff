"""Deployment settings the worker reads from its environment (the Amber manifest sets them):
prebuilt task images for the docker environment and the participant proxy URLs."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

PREBUILT_IMAGES_VAR: Final = "SKILLSBENCH_WORKER_PREBUILT_IMAGES"
REQUIRE_PREBUILT_VAR: Final = "SKILLSBENCH_WORKER_REQUIRE_PREBUILT_IMAGES"
# "never": the worker builds no task image (under Amber the Docker gateway refuses `POST /build`);
# a run that would need one is refused before it starts. "allowed" (the default) builds them.
BUILDS_VAR: Final = "SKILLSBENCH_WORKER_BUILDS"
BUILDS_CHOICES: Final = ("allowed", "never")
PARTICIPANT_PROXY_VAR: Final = "SKILLSBENCH_WORKER_PARTICIPANT_PROXY_URL"
SANDBOX_PARTICIPANT_PROXY_VAR: Final = "SKILLSBENCH_WORKER_SANDBOX_PARTICIPANT_PROXY_URL"


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class PrebuiltImages:
    """``{task_id: "<image>@sha256:<digest>"}``; with ``required`` a task without one fails
    instead of being built from its Dockerfile."""

    images: dict[str, str] = field(default_factory=dict)
    required: bool = False
    builds: bool = True  # False: no image is built here (BUILDS_VAR=never)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PrebuiltImages:
        env = os.environ if env is None else env
        raw = (env.get(PREBUILT_IMAGES_VAR) or "").strip()
        images: dict[str, str] = {}
        if raw:
            try:
                data = json.loads(raw)
                if isinstance(data, str):  # passed through one more JSON encoding
                    data = json.loads(data)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{PREBUILT_IMAGES_VAR} is not JSON: {exc.msg}") from None
            if not isinstance(data, dict):
                raise ValueError(f"{PREBUILT_IMAGES_VAR} must be a JSON object task_id -> image")
            for task_id, ref in data.items():
                if not isinstance(ref, str) or "@sha256:" not in ref:
                    raise ValueError(
                        f"{PREBUILT_IMAGES_VAR}: the image of {task_id!r} must be pinned "
                        f"as <image>@sha256:<digest>, got {ref!r}"
                    )
                images[str(task_id)] = ref
        return cls(
            images=images,
            required=_truthy(env.get(REQUIRE_PREBUILT_VAR)),
            builds=builds_allowed(env.get(BUILDS_VAR)),
        )

    def image_for(self, task_id: str) -> str | None:
        """The prebuilt image of a task; ValueError when one is required and none is declared."""
        image = self.images.get(task_id)
        if image is None and self.required:
            raise ValueError(
                f"no prebuilt image for task {task_id!r} and {REQUIRE_PREBUILT_VAR} is set"
            )
        return image


def builds_allowed(value: str | None) -> bool:
    """``SKILLSBENCH_WORKER_BUILDS``: unset or "allowed" -> True, "never" -> False."""
    text = (value or "allowed").strip().lower()
    if text not in BUILDS_CHOICES:
        raise ValueError(f"{BUILDS_VAR} must be one of {', '.join(BUILDS_CHOICES)}, not {value!r}")
    return text == "allowed"


def build_refusal(task_ids: list[str]) -> str:
    """The one line refusing a run whose tasks would need an image build where none may run."""
    listed = ", ".join(task_ids)
    return (
        f"task images: {listed} would need a build, and this worker builds none "
        f"({BUILDS_VAR}=never, as under Amber, whose Docker gateway refuses image builds); "
        "build them with `skillsbench-agentbeats images build-tasks --push --registry REGISTRY "
        f"--task-id ID` and give the map it writes as {PREBUILT_IMAGES_VAR} (the Amber config "
        "prebuilt_images)"
    )


@dataclass(frozen=True)
class ParticipantProxies:
    """Where the worker (``url``) and task sandboxes (``sandbox_url``) reach participant roles
    through a proxy: ``<proxy>/<role>``. Unset: the URLs of the run request are used."""

    url: str | None = None
    sandbox_url: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ParticipantProxies:
        env = os.environ if env is None else env
        return cls(
            url=(env.get(PARTICIPANT_PROXY_VAR) or "").rstrip("/") or None,
            sandbox_url=(env.get(SANDBOX_PARTICIPANT_PROXY_VAR) or "").rstrip("/") or None,
        )

    def resolve(
        self, role: str, url: str | None, sandbox_url: str | None
    ) -> tuple[str | None, str | None]:
        return (
            f"{self.url}/{role}" if self.url else url,
            f"{self.sandbox_url}/{role}" if self.sandbox_url else sandbox_url,
        )
