"""Image evidence for the green, worker and purple images, resolved from the registry.

Each reference is resolved anonymously; the evidence records the digest-pinned reference, the
digest and the ``linux/amd64`` platform the registry proved, in the shape of readiness
``images`` (and of the deploy bundle's ``public_readiness_images``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from integrations.agentbeats.registry import RegistryClient, RegistryError, ResolvedImage
from leaderboard.evidence import IMAGE_ROLES
from leaderboard.image_refs import REQUIRED_PLATFORM, parse_image_ref, public_image_problems

IMAGE_EVIDENCE_SCHEMA_VERSION = "skillsbench.agentbeats.image_evidence.v1"


def images_section(resolved: Mapping[str, ResolvedImage]) -> dict[str, str]:
    section: dict[str, str] = {}
    for role, image in resolved.items():
        section[f"{role}_image"] = image.pinned
        section[f"{role}_image_digest"] = image.digest
        section[f"{role}_image_platform"] = image.platform
    return section


async def resolve_public_images(
    refs: Mapping[str, str], client: RegistryClient, platform: str = REQUIRED_PLATFORM
) -> dict[str, ResolvedImage]:
    """Resolve every ``role -> reference``; one ValueError lists every image that fails."""
    problems: list[str] = []
    parsed = {}
    for role, ref in refs.items():
        # The readiness image rules, less the pin: resolving is what pins a tag to its digest.
        found = [m for rule, m in public_image_problems(ref) if rule != "image_not_pinned"]
        if found:
            problems.extend(f"{role}: {message}" for message in found)
            continue
        parsed[role] = parse_image_ref(ref)
    results = await asyncio.gather(
        *(client.resolve(image, platform) for image in parsed.values()), return_exceptions=True
    )
    resolved: dict[str, ResolvedImage] = {}
    for role, result in zip(parsed, results, strict=True):
        if isinstance(result, RegistryError):
            problems.append(f"{role}: {result}")
        elif isinstance(result, BaseException):
            raise result
        else:
            resolved[role] = result
    if problems:
        raise ValueError("image evidence failed: " + "; ".join(problems))
    return resolved


async def collect_image_evidence(refs: Mapping[str, str], client: RegistryClient) -> dict[str, Any]:
    missing = [role for role in IMAGE_ROLES if not refs.get(role)]
    if missing:
        raise ValueError(f"image evidence needs the {', '.join(missing)} image")
    resolved = await resolve_public_images({r: refs[r] for r in IMAGE_ROLES}, client)
    return {"schema_version": IMAGE_EVIDENCE_SCHEMA_VERSION, **images_section(resolved)}
