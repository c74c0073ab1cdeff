"""A minimal, anonymous OCI distribution client: resolve a reference to its digest and platform.

It holds no credentials on purpose (no docker config, no netrc, no proxy env), so an image that
only a logged-in operator can pull never passes as public evidence. It speaks the distribution
API: ``GET /v2/<name>/manifests/<ref>`` with OCI index / Docker manifest-list and single-manifest
media types, the ``Docker-Content-Digest`` header, the config blob for a single manifest's
platform, and the anonymous Bearer token flow of a ``WWW-Authenticate`` challenge.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import httpx

from leaderboard.image_refs import ImageRef

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
INDEX_TYPES = (OCI_INDEX, DOCKER_LIST)
MANIFEST_TYPES = (OCI_MANIFEST, DOCKER_MANIFEST)
ACCEPT = ", ".join((*INDEX_TYPES, *MANIFEST_TYPES))

# "ghcr.io=http://127.0.0.1:5000,registry.example=https://mirror.example" (tests, mirrors).
URL_OVERRIDES_ENV = "SKILLSBENCH_REGISTRY_URL_OVERRIDES"
_DOCKER_HUB = {
    "docker.io": "https://registry-1.docker.io",
    "index.docker.io": "https://registry-1.docker.io",
}
_CHALLENGE_PARAM = re.compile(r'(\w+)="([^"]*)"')


class RegistryError(ValueError):
    """The registry would not anonymously prove this image's digest and platform."""


@dataclass(frozen=True)
class ResolvedImage:
    ref: ImageRef
    digest: str
    media_type: str
    platform: str
    platform_manifest_digest: str

    @property
    def pinned(self) -> str:
        return self.ref.pinned(self.digest)


def parse_url_overrides(text: str | None) -> dict[str, str]:
    overrides: dict[str, str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        host, sep, url = item.strip().partition("=")
        if not sep or not url.startswith(("http://", "https://")):
            raise ValueError(f"registry URL override {item!r} must be HOST=http(s)://URL")
        overrides[host] = url.rstrip("/")
    return overrides


class RegistryClient:
    def __init__(self, overrides: Mapping[str, str] | None = None, timeout: float = 30.0) -> None:
        if overrides is None:
            overrides = parse_url_overrides(os.environ.get(URL_OVERRIDES_ENV))
        self._overrides = dict(overrides)
        self._http = httpx.AsyncClient(timeout=timeout, follow_redirects=True, trust_env=False)
        self._tokens: dict[str, str] = {}

    async def __aenter__(self) -> RegistryClient:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._http.aclose()

    def base_url(self, registry: str) -> str:
        return self._overrides.get(registry) or _DOCKER_HUB.get(registry) or f"https://{registry}"

    async def resolve(self, ref: ImageRef, platform: str = "linux/amd64") -> ResolvedImage:
        url = f"{self.base_url(ref.registry)}/v2/{ref.repository}/manifests/{ref.reference}"
        response = await self._get(url, ref, {"Accept": ACCEPT})
        body = response.content
        digest = _verified_digest(body, response.headers.get("Docker-Content-Digest"), ref)
        if ref.digest is not None and ref.digest != digest:
            raise RegistryError(f"{ref}: the registry serves {digest}, not the pinned digest")
        document = _json(body, f"{ref}: manifest")
        media_type = response.headers.get("Content-Type", "").split(";")[0].strip()
        media_type = document.get("mediaType") or media_type
        if media_type in INDEX_TYPES:
            child = _platform_entry(document, platform, ref)
            await self._check_platform_manifest(ref, child, platform)
            return ResolvedImage(ref, digest, media_type, platform, child)
        if media_type in MANIFEST_TYPES:
            await self._check_config_platform(ref, document, platform)
            return ResolvedImage(ref, digest, media_type, platform, digest)
        raise RegistryError(f"{ref}: unsupported manifest media type {media_type!r}")

    async def _check_platform_manifest(self, ref: ImageRef, digest: str, platform: str) -> None:
        """The index's entry must exist, match its digest and describe the same platform."""
        url = f"{self.base_url(ref.registry)}/v2/{ref.repository}/manifests/{digest}"
        response = await self._get(url, ref, {"Accept": ACCEPT})
        if "sha256:" + hashlib.sha256(response.content).hexdigest() != digest:
            raise RegistryError(f"{ref}: the {platform} manifest does not match {digest}")
        manifest = _json(response.content, f"{ref}: {platform} manifest")
        if manifest.get("mediaType", MANIFEST_TYPES[0]) not in MANIFEST_TYPES:
            raise RegistryError(f"{ref}: the {platform} entry is not an image manifest")
        await self._check_config_platform(ref, manifest, platform)

    async def _check_config_platform(
        self, ref: ImageRef, manifest: dict[str, Any], platform: str
    ) -> None:
        config = manifest.get("config")
        config_digest = config.get("digest") if isinstance(config, dict) else None
        if not isinstance(config_digest, str):
            raise RegistryError(f"{ref}: manifest has no config descriptor")
        url = f"{self.base_url(ref.registry)}/v2/{ref.repository}/blobs/{config_digest}"
        response = await self._get(url, ref, {})
        if "sha256:" + hashlib.sha256(response.content).hexdigest() != config_digest:
            raise RegistryError(f"{ref}: config blob does not match {config_digest}")
        blob = _json(response.content, f"{ref}: config blob")
        found = f"{blob.get('os')}/{blob.get('architecture')}"
        if found != platform:
            raise RegistryError(f"{ref}: image platform is {found}, not {platform}")

    async def _get(self, url: str, ref: ImageRef, headers: dict[str, str]) -> httpx.Response:
        scope_key = f"{ref.registry}/{ref.repository}"
        token = self._tokens.get(scope_key)
        auth = {"Authorization": f"Bearer {token}"} if token else {}
        response = await self._request(url, {**headers, **auth}, ref)
        if response.status_code == 401 and not token:
            token = await self._anonymous_token(response, ref)
            self._tokens[scope_key] = token
            response = await self._request(
                url, {**headers, "Authorization": f"Bearer {token}"}, ref
            )
        if response.status_code in (401, 403):
            raise RegistryError(
                f"{ref}: anonymous pull denied (HTTP {response.status_code}); the image is private"
            )
        if response.status_code == 404:
            raise RegistryError(f"{ref}: not found in {ref.registry}")
        if response.status_code != 200:
            raise RegistryError(f"{ref}: registry answered HTTP {response.status_code}")
        return response

    async def _request(self, url: str, headers: dict[str, str], ref: ImageRef) -> httpx.Response:
        try:
            return await self._http.get(url, headers=headers)
        except httpx.HTTPError as exc:
            raise RegistryError(
                f"{ref}: cannot reach {ref.registry}: {type(exc).__name__}"
            ) from exc

    async def _anonymous_token(self, challenge: httpx.Response, ref: ImageRef) -> str:
        header = challenge.headers.get("WWW-Authenticate", "")
        scheme, _, rest = header.partition(" ")
        if scheme.lower() != "bearer":
            raise RegistryError(
                f"{ref}: the registry requires credentials ({scheme or 'no'} challenge); the image is private"
            )
        params = dict(_CHALLENGE_PARAM.findall(rest))
        realm = params.pop("realm", "")
        if not realm.startswith(("http://", "https://")):
            raise RegistryError(f"{ref}: malformed token challenge")
        params.setdefault("scope", f"repository:{ref.repository}:pull")
        try:
            response = await self._http.get(realm, params=params)
        except httpx.HTTPError as exc:
            raise RegistryError(f"{ref}: token service unreachable: {type(exc).__name__}") from exc
        if response.status_code != 200:
            raise RegistryError(
                f"{ref}: anonymous token denied (HTTP {response.status_code}); the image is private"
            )
        body = _json(response.content, f"{ref}: token response")
        token = body.get("token") or body.get("access_token")
        if not isinstance(token, str) or not token:
            raise RegistryError(f"{ref}: token response holds no token")
        return token


def _verified_digest(body: bytes, header: str | None, ref: ImageRef) -> str:
    computed = "sha256:" + hashlib.sha256(body).hexdigest()
    if header and header.startswith("sha256:") and header != computed:
        raise RegistryError(
            f"{ref}: Docker-Content-Digest {header} does not match the manifest bytes"
        )
    return computed


def _json(body: bytes, what: str) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RegistryError(f"{what} is not JSON") from exc
    if not isinstance(data, dict):
        raise RegistryError(f"{what} is not a JSON object")
    return data


def _platform_entry(index: dict[str, Any], platform: str, ref: ImageRef) -> str:
    want_os, _, want_arch = platform.partition("/")
    seen: list[str] = []
    for entry in index.get("manifests") or []:
        plat = entry.get("platform") if isinstance(entry, dict) else None
        if not isinstance(plat, dict):
            continue
        seen.append(f"{plat.get('os')}/{plat.get('architecture')}")
        if plat.get("os") == want_os and plat.get("architecture") == want_arch:
            digest = entry.get("digest")
            if isinstance(digest, str):
                return digest
    raise RegistryError(
        f"{ref}: no {platform} manifest in the index (has {', '.join(seen) or 'none'})"
    )
