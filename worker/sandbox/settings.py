"""Deployment settings the worker reads from its environment (the Amber manifest sets them):
prebuilt task images and base-image substitutions for the docker environment, and the
participant proxy URLs."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

PREBUILT_IMAGES_VAR: Final = "SKILLSBENCH_WORKER_PREBUILT_IMAGES"
REQUIRE_PREBUILT_VAR: Final = "SKILLSBENCH_WORKER_REQUIRE_PREBUILT_IMAGES"
# "never": the worker builds no task image (under Amber the Docker gateway refuses `POST /build`);
# a run that would need one is refused before it starts. "allowed" (the default) builds them.
BUILDS_VAR: Final = "SKILLSBENCH_WORKER_BUILDS"
BUILDS_CHOICES: Final = ("allowed", "never")
PARTICIPANT_PROXY_VAR: Final = "SKILLSBENCH_WORKER_PARTICIPANT_PROXY_URL"
SANDBOX_PARTICIPANT_PROXY_VAR: Final = "SKILLSBENCH_WORKER_SANDBOX_PARTICIPANT_PROXY_URL"
BASE_IMAGE_MAP_VAR: Final = "SKILLSBENCH_BASE_IMAGE_MAP"

F = TypeVar("F", bound=Callable[..., Any])


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _check_ref(ref: str, what: str, source: str) -> str:
    ref = ref.strip()
    if not ref or any(c.isspace() for c in ref) or "=" in ref or len(ref) > 512:
        raise ValueError(f"{source}: {what} {ref!r} is not an image reference")
    return ref


def _map_file(path: str, source: str) -> dict[str, str]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{source}: cannot read {path}: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{source}: {path} is not JSON: {exc}") from None
    return _map_object(data, f"{source} ({path})")


def _map_object(data: object, source: str) -> dict[str, str]:
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ValueError(f"{source}: expected a JSON object FROM reference -> local image")
    return {
        _check_ref(str(k), "FROM reference", source): _check_ref(v, "local image", source)
        for k, v in data.items()
    }


def parse_base_image_map(items: Iterable[str], source: str) -> dict[str, str]:
    """``FROM=LOCAL`` items and ``@file.json`` (a JSON object) items, later ones winning."""
    mapping: dict[str, str] = {}
    for item in items:
        item = item.strip()
        if not item:
            continue
        if item.startswith("@"):
            mapping.update(_map_file(item[1:], source))
            continue
        ref, sep, local = item.partition("=")
        if not sep:
            raise ValueError(f"{source}: {item!r}: expected FROM=LOCAL or @file.json")
        mapping[_check_ref(ref, "FROM reference", source)] = _check_ref(
            local, "local image", source
        )
    return mapping


def base_image_map_from_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``$SKILLSBENCH_BASE_IMAGE_MAP``: a JSON object, or ``FROM=LOCAL``/``@file.json`` items
    separated by commas."""
    env = os.environ if env is None else env
    raw = (env.get(BASE_IMAGE_MAP_VAR) or "").strip()
    if raw.startswith("{"):
        try:
            return _map_object(json.loads(raw), BASE_IMAGE_MAP_VAR)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{BASE_IMAGE_MAP_VAR} is not JSON: {exc.msg}") from None
    return parse_base_image_map(raw.split(","), BASE_IMAGE_MAP_VAR)


@dataclass(frozen=True)
class PrebuiltImages:
    """``{task_id: "<image>@sha256:<digest>"}``; with ``required`` a task without one fails
    instead of being built from its Dockerfile. ``bases``: base-image substitution for builds
    on hosts without a registry, ``{FROM reference: local image}`` (a Dockerfile's ``FROM`` of
    a mapped reference builds from the local image instead)."""

    images: dict[str, str] = field(default_factory=dict)
    required: bool = False
    bases: dict[str, str] = field(default_factory=dict)
    builds: bool = True  # False: no image is built here (BUILDS_VAR=never)

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, bases: Mapping[str, str] | None = None
    ) -> PrebuiltImages:
        """``bases`` (the command line's ``--base-image-map``) win over the environment's."""
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
            bases={**base_image_map_from_env(env), **(bases or {})},
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


def base_image_map_option() -> Callable[[F], F]:
    """``--base-image-map FROM=LOCAL`` (repeatable; ``@file.json`` reads a JSON object): build
    a Dockerfile's ``FROM`` reference from a local image instead (hosts without a registry).
    Merged over ``$SKILLSBENCH_BASE_IMAGE_MAP``; the value is a ``{FROM: LOCAL}`` dict."""

    import click

    def parse(_ctx: click.Context, _param: click.Parameter, value: tuple[str, ...]) -> Any:
        try:
            return parse_base_image_map(value, "--base-image-map")
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--base-image-map") from None

    return click.option(
        "--base-image-map",
        "base_image_map",
        multiple=True,
        callback=parse,
        metavar="FROM=LOCAL",
        help="Build FROM this reference from this local image instead (repeatable, or "
        "@file.json with an object); also $SKILLSBENCH_BASE_IMAGE_MAP. Docker environment only.",
    )
