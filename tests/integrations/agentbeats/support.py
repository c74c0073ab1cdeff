"""A fake container registry speaking the OCI distribution wire format, for loopback tests.

Every repository requires a Bearer token, like ghcr.io: a 401 with a ``WWW-Authenticate`` challenge
sends clients to ``/token``, which grants anonymous pull tokens only for public repositories.
Blobs are served through a redirect, as real registries hand them to a CDN.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass
class Repo:
    private: bool = False
    manifests: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # ref -> (type, body)
    blobs: dict[str, bytes] = field(default_factory=dict)


class FakeRegistry:
    def __init__(self, *, deny_private_tokens: bool = False) -> None:
        self.repos: dict[str, Repo] = {}
        self.requests: list[dict[str, Any]] = []
        self.base_url = ""  # set once served, for the token realm
        self.deny_private_tokens = deny_private_tokens
        self.app = Starlette(
            routes=[
                Route("/token", self._token),
                Route("/v2/", self._root),
                Route(
                    "/v2/{name:path}/manifests/{reference}", self._manifest, methods=["GET", "HEAD"]
                ),
                Route("/v2/{name:path}/blobs/{digest}", self._blob),
                Route("/blobstore/{name:path}/{digest}", self._blobstore),
            ]
        )

    # --- building images -------------------------------------------------------------------
    def _repo(self, name: str, private: bool) -> Repo:
        repo = self.repos.setdefault(name, Repo(private=private))
        repo.private = private
        return repo

    def add_manifest(
        self,
        name: str,
        tag: str,
        os_: str,
        arch: str,
        *,
        media_type: str = OCI_MANIFEST,
        private: bool = False,
    ) -> str:
        """A single-platform image; returns its manifest digest."""
        repo = self._repo(name, private)
        config = json.dumps(
            {"architecture": arch, "os": os_, "rootfs": {"type": "layers", "diff_ids": []}}
        ).encode()
        repo.blobs[digest_of(config)] = config
        manifest = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": media_type,
                "config": {
                    "mediaType": OCI_CONFIG,
                    "digest": digest_of(config),
                    "size": len(config),
                },
                "layers": [],
            }
        ).encode()
        digest = digest_of(manifest)
        repo.manifests[tag] = repo.manifests[digest] = (media_type, manifest)
        return digest

    def add_index(
        self,
        name: str,
        tag: str,
        platforms: list[tuple[str, str]],
        *,
        media_type: str = OCI_INDEX,
        private: bool = False,
    ) -> str:
        """A multi-platform image (OCI index or Docker manifest list); returns the index digest."""
        repo = self._repo(name, private)
        child_type = OCI_MANIFEST if media_type == OCI_INDEX else DOCKER_MANIFEST
        entries = []
        for os_, arch in platforms:
            child = self.add_manifest(
                name, f"{tag}-{os_}-{arch}", os_, arch, media_type=child_type, private=private
            )
            entries.append(
                {
                    "mediaType": child_type,
                    "digest": child,
                    "size": len(repo.manifests[child][1]),
                    "platform": {"os": os_, "architecture": arch},
                }
            )
        index = json.dumps(
            {"schemaVersion": 2, "mediaType": media_type, "manifests": entries}
        ).encode()
        digest = digest_of(index)
        repo.manifests[tag] = repo.manifests[digest] = (media_type, index)
        return digest

    # --- the wire protocol -----------------------------------------------------------------
    def _challenge(self, name: str) -> Response:
        realm = f"{self.base_url}/token"
        header = f'Bearer realm="{realm}",service="fake-registry",scope="repository:{name}:pull"'
        body = {"errors": [{"code": "UNAUTHORIZED", "message": "authentication required"}]}
        return JSONResponse(body, status_code=401, headers={"WWW-Authenticate": header})

    def _authorized(self, request: Request, name: str) -> bool:
        return request.headers.get("Authorization") == f"Bearer anon-pull-{name}"

    def _record(self, request: Request) -> None:
        self.requests.append(
            {
                "method": request.method,
                "path": request.url.path,
                "authorization": request.headers.get("Authorization"),
                "accept": request.headers.get("Accept"),
            }
        )

    async def _token(self, request: Request) -> Response:
        self._record(request)
        scope = request.query_params.get("scope", "")
        name = scope.removeprefix("repository:").rsplit(":", 1)[0]
        repo = self.repos.get(name)
        if repo is not None and repo.private:
            if self.deny_private_tokens:
                return JSONResponse({"errors": [{"code": "DENIED"}]}, status_code=403)
            return JSONResponse({"token": "anon-no-access"})
        return JSONResponse({"token": f"anon-pull-{name}", "access_token": f"anon-pull-{name}"})

    async def _root(self, request: Request) -> Response:
        return JSONResponse({})

    async def _manifest(self, request: Request) -> Response:
        self._record(request)
        name, reference = request.path_params["name"], request.path_params["reference"]
        if not self._authorized(request, name):
            return self._challenge(name)
        repo = self.repos.get(name)
        if repo is None or reference not in repo.manifests:
            return JSONResponse({"errors": [{"code": "MANIFEST_UNKNOWN"}]}, status_code=404)
        media_type, body = repo.manifests[reference]
        headers = {"Docker-Content-Digest": digest_of(body), "Content-Type": media_type}
        if request.method == "HEAD":
            return Response(b"", headers={**headers, "Content-Length": str(len(body))})
        return Response(body, headers=headers)

    async def _blob(self, request: Request) -> Response:
        self._record(request)
        name, digest = request.path_params["name"], request.path_params["digest"]
        if not self._authorized(request, name):
            return self._challenge(name)
        if digest not in self.repos.get(name, Repo()).blobs:
            return JSONResponse({"errors": [{"code": "BLOB_UNKNOWN"}]}, status_code=404)
        return RedirectResponse(f"{self.base_url}/blobstore/{name}/{digest}", status_code=307)

    async def _blobstore(self, request: Request) -> Response:
        name, digest = request.path_params["name"], request.path_params["digest"]
        return Response(self.repos[name].blobs[digest], media_type="application/octet-stream")
