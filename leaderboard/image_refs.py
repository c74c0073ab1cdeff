"""Container image references: parsing and the public-readiness rules for them.

Grammar follows the distribution reference format: ``[host[:port]/]path[:tag][@algo:hex]``. A
public reference must name its registry explicitly, point at a non-local host and be pinned
to a ``sha256`` digest, so the bytes AgentBeats pulls are the bytes the evidence describes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from leaderboard.rows import DIGEST_PATTERN, is_local_host

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_PATH = re.compile(rf"^{_COMPONENT}(?:/{_COMPONENT})*$")
_TAG = re.compile(r"^[\w][\w.-]{0,127}$")
SHA256_DIGEST = DIGEST_PATTERN

_HOST = re.compile(r"^(?:\[[0-9a-fA-F:]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(?::[0-9]+)?$")

DEFAULT_REGISTRY = "docker.io"
REQUIRED_PLATFORM = "linux/amd64"


@dataclass(frozen=True)
class ImageRef:
    registry: str
    repository: str
    tag: str | None
    digest: str | None
    explicit_registry: bool

    @property
    def reference(self) -> str:
        """What the manifest API is asked for: the digest when pinned, else the tag."""
        return self.digest or self.tag or "latest"

    def pinned(self, digest: str) -> str:
        return f"{self.registry}/{self.repository}@{digest}"

    def __str__(self) -> str:
        text = f"{self.registry}/{self.repository}"
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text


def parse_image_ref(ref: str) -> ImageRef:
    """Parse ``ref`` or raise ValueError naming what is wrong with it."""
    if not ref or ref != ref.strip() or any(c.isspace() for c in ref):
        raise ValueError(f"image reference {ref!r} is empty or contains whitespace")
    if "://" in ref:
        raise ValueError(f"image reference {ref!r} must not carry a URL scheme")
    rest, _, digest = ref.partition("@")
    if digest and not re.match(r"^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[0-9a-fA-F]{32,}$", digest):
        raise ValueError(f"image reference {ref!r} has a malformed digest {digest!r}")
    first, slash, remainder = rest.partition("/")
    explicit = bool(slash) and ("." in first or ":" in first or first == "localhost")
    if explicit:
        registry, path = first, remainder
        if not _HOST.match(registry):
            raise ValueError(f"image reference {ref!r} has a malformed registry host {registry!r}")
    else:
        registry, path = DEFAULT_REGISTRY, rest
    tag: str | None = None
    last_slash = path.rfind("/")
    colon = path.rfind(":")
    if colon > last_slash:
        path, tag = path[:colon], path[colon + 1 :]
        if not _TAG.match(tag):
            raise ValueError(f"image reference {ref!r} has a malformed tag {tag!r}")
    if not _PATH.match(path):
        raise ValueError(f"image reference {ref!r} has a malformed repository path {path!r}")
    if registry == DEFAULT_REGISTRY and "/" not in path:
        path = f"library/{path}"
    return ImageRef(registry, path, tag, digest or None, explicit)


def public_image_problems(ref: str) -> list[tuple[str, str]]:
    """(rule, message) pairs for every way ``ref`` fails the public image rules."""
    try:
        parsed = parse_image_ref(ref)
    except ValueError as exc:
        return [("image_ref_malformed", str(exc))]
    problems: list[tuple[str, str]] = []
    if not parsed.explicit_registry:
        problems.append(
            ("image_registry_implicit", f"{ref!r} must name its registry host (e.g. ghcr.io/...)")
        )
    elif is_local_host(parsed.registry):
        problems.append(
            ("image_registry_local", f"{ref!r} points at local registry {parsed.registry!r}")
        )
    if parsed.digest is None:
        problems.append(("image_not_pinned", f"{ref!r} must be pinned with @sha256:<digest>"))
    elif not SHA256_DIGEST.match(parsed.digest):
        problems.append(("image_not_pinned", f"{ref!r} must be pinned with a sha256 digest"))
    return problems
