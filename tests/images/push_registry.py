"""A minimal registry that accepts pushes (OCI distribution API), for the Docker Engine on loopback.

Enough of the protocol for `docker push`: blob existence checks, chunked and monolithic uploads,
cross-repository mounts refused (the client then uploads), manifests stored by tag and by digest.
The engine treats 127.0.0.0/8 as an insecure registry, so plain HTTP on loopback works.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

API_HEADER = {"Docker-Distribution-API-Version": "registry/2.0"}


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass
class PushRegistry:
    blobs: dict[str, bytes] = field(default_factory=dict)
    manifests: dict[tuple[str, str], tuple[str, bytes]] = field(default_factory=dict)
    uploads: dict[str, bytearray] = field(default_factory=dict)

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v2/", self._root, methods=["GET"]),
                Route(
                    "/v2/{name:path}/blobs/uploads/",
                    self._start_upload,
                    methods=["POST"],
                ),
                Route(
                    "/v2/{name:path}/blobs/uploads/{upload}",
                    self._upload,
                    methods=["PATCH", "PUT", "GET", "DELETE"],
                ),
                Route("/v2/{name:path}/blobs/{digest}", self._blob, methods=["GET", "HEAD"]),
                Route(
                    "/v2/{name:path}/manifests/{reference}",
                    self._manifest,
                    methods=["GET", "HEAD", "PUT"],
                ),
            ]
        )

    def manifest_digests(self, name: str) -> set[str]:
        return {_digest(body) for (repo, _), (_, body) in self.manifests.items() if repo == name}

    async def _root(self, request: Request) -> Response:
        return JSONResponse({}, headers=API_HEADER)

    async def _start_upload(self, request: Request) -> Response:
        name = request.path_params["name"]
        upload = uuid.uuid4().hex
        self.uploads[upload] = bytearray()
        body = await request.body()
        digest = request.query_params.get("digest")
        if digest:  # monolithic upload in the POST itself
            return self._finish(name, upload, body, digest)
        return Response(
            status_code=202,
            headers={
                **API_HEADER,
                "Location": f"/v2/{name}/blobs/uploads/{upload}",
                "Docker-Upload-UUID": upload,
                "Range": "0-0",
            },
        )

    async def _upload(self, request: Request) -> Response:
        name, upload = request.path_params["name"], request.path_params["upload"]
        if upload not in self.uploads:
            return JSONResponse({"errors": [{"code": "BLOB_UPLOAD_UNKNOWN"}]}, status_code=404)
        if request.method == "DELETE":
            del self.uploads[upload]
            return Response(status_code=204)
        body = await request.body()
        if request.method == "PATCH":
            self.uploads[upload].extend(body)
            size = len(self.uploads[upload])
            return Response(
                status_code=202,
                headers={
                    **API_HEADER,
                    "Location": f"/v2/{name}/blobs/uploads/{upload}",
                    "Docker-Upload-UUID": upload,
                    "Range": f"0-{max(size - 1, 0)}",
                },
            )
        if request.method == "GET":
            size = len(self.uploads[upload])
            return Response(status_code=204, headers={"Range": f"0-{max(size - 1, 0)}"})
        return self._finish(name, upload, body, request.query_params.get("digest", ""))

    def _finish(self, name: str, upload: str, tail: bytes, digest: str) -> Response:
        data = bytes(self.uploads.pop(upload)) + tail
        if _digest(data) != digest:
            return JSONResponse({"errors": [{"code": "DIGEST_INVALID"}]}, status_code=400)
        self.blobs[digest] = data
        return Response(
            status_code=201,
            headers={
                **API_HEADER,
                "Location": f"/v2/{name}/blobs/{digest}",
                "Docker-Content-Digest": digest,
            },
        )

    async def _blob(self, request: Request) -> Response:
        digest = request.path_params["digest"]
        data = self.blobs.get(digest)
        if data is None:
            return JSONResponse({"errors": [{"code": "BLOB_UNKNOWN"}]}, status_code=404)
        headers = {**API_HEADER, "Docker-Content-Digest": digest, "Content-Length": str(len(data))}
        if request.method == "HEAD":
            return Response(status_code=200, headers=headers)
        return Response(data, headers=headers, media_type="application/octet-stream")

    async def _manifest(self, request: Request) -> Response:
        name, reference = request.path_params["name"], request.path_params["reference"]
        if request.method == "PUT":
            body = await request.body()
            media_type = request.headers.get("content-type", "")
            digest = _digest(body)
            self.manifests[(name, reference)] = (media_type, body)
            self.manifests[(name, digest)] = (media_type, body)
            return Response(
                status_code=201,
                headers={
                    **API_HEADER,
                    "Location": f"/v2/{name}/manifests/{digest}",
                    "Docker-Content-Digest": digest,
                },
            )
        stored = self.manifests.get((name, reference))
        if stored is None:
            return JSONResponse({"errors": [{"code": "MANIFEST_UNKNOWN"}]}, status_code=404)
        media_type, body = stored
        headers = {**API_HEADER, "Docker-Content-Digest": _digest(body), "Content-Type": media_type}
        if request.method == "HEAD":
            return Response(status_code=200, headers={**headers, "Content-Length": str(len(body))})
        return Response(body, headers=headers)
