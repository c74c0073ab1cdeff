"""What the agent changed in a container: every path of the container's writable layer against
its image, read from that layer on this host where the worker can (milliseconds), else by the
engine's own account, ``GET /containers/{id}/changes`` (``docker diff``, up to seconds on a
driver without a native diff); the rules of :mod:`worker.sandbox.tamper` decide what of it
touches the verifier, with a look at single paths (``HEAD /containers/{id}/archive``) only for
the few new files that could shadow something."""

from __future__ import annotations

import errno
import io
import json
import tarfile
from typing import Any, Final

from worker.sandbox._docker import layer
from worker.sandbox._docker.client import errors as docker_errors
from worker.sandbox.base import SandboxError
from worker.sandbox.tamper import (
    DEFAULT_PATH,
    HOME_BIN_DIRS,
    SYSTEM_ROOTS,
    Change,
    ChangeKind,
    PathStat,
    Tampering,
    find_tampering,
)

# A layer the agent made unlistable (a path past PATH_MAX, a loop of links): its doing, never
# an infrastructure failure (the engine's own diff fails on it too, with a 500).
UNLISTABLE_ERRNOS: Final = frozenset({errno.ENAMETOOLONG, errno.ELOOP})
UNLISTABLE_MESSAGES: Final = ("file name too long", "too many levels of symbolic links")

# The engine's change kinds (``Kind`` of each entry).
_KINDS: dict[int, ChangeKind] = {0: "modified", 1: "added", 2: "deleted"}
_DIR_BIT = 1 << 31  # Go's os.ModeDir in the archive stat's mode
_LINK_BIT = 1 << 27  # os.ModeSymlink


class _ContainerProbe:
    """:class:`~worker.sandbox.tamper.FileProbe` over the engine's archive endpoint."""

    def __init__(self, client: Any, container: str) -> None:
        self.api = client.api
        self.container = container

    def _url(self) -> str:
        return str(self.api._url("/containers/{0}/archive", self.container))

    def _stat(self, path: str) -> dict[str, Any] | None:
        response = self.api.head(self._url(), params={"path": _raw(path)})
        if response.status_code == 404:
            return None
        self.api._raise_for_status(response)
        from docker.utils import decode_json_header

        header = response.headers.get("x-docker-container-path-stat")
        return dict(decode_json_header(header)) if header else {}

    def signature(self, path: str) -> str | None:
        """Size, mode, modification time and link target of ``path`` (None: it is gone)."""
        stat = self._stat(path)
        return None if stat is None else json.dumps(stat, sort_keys=True)

    def stat(self, path: str) -> PathStat | None:
        stat = self._stat(path)
        if stat is None:
            return None
        mode = int(stat.get("mode") or 0)
        link = stat.get("linkTarget") or None
        return PathStat(
            is_dir=bool(mode & _DIR_BIT), link_target=link if mode & _LINK_BIT else None
        )

    def head(self, path: str, limit: int) -> bytes | None:
        try:
            stream, _ = self.api.get_archive(self.container, _raw(path), chunk_size=64 * 1024)
        except docker_errors().NotFound:
            return None
        data = bytearray()
        for chunk in stream:
            data += chunk
            if len(data) > limit + 8192:  # the tar header, the first ``limit`` bytes, padding
                break
        try:
            with tarfile.open(fileobj=io.BytesIO(bytes(data)), mode="r|") as archive:
                member = archive.next()
                if member is None or not member.isfile():
                    return None
                handle = archive.extractfile(member)
                return handle.read(min(limit, member.size)) if handle is not None else None
        except (tarfile.TarError, OSError):
            return None


def _raw(path: str) -> bytes:
    """The path's own bytes for the engine: a name that is not UTF-8 (read from the layer, it
    holds lone surrogates) reaches the file it names, not an error or another name."""
    return path.encode("utf-8", "surrogateescape")


def container_layers(client: Any, container: str) -> layer.Layers | None:
    """The container's layer folders where this process can read them (one inspect; the
    caller keeps the answer for the container's life), else None: ask the engine."""
    return layer.layers_of(client.api.inspect_container(container))


def container_changes(
    client: Any, container: str, layers: layer.Layers | None = None
) -> list[Change]:
    """Every path of the container's writable layer: read from ``layers`` (milliseconds, see
    :mod:`worker.sandbox._docker.layer`), else as the engine lists it (``docker diff``)."""
    if layers is not None:
        try:
            return layer.layer_changes(layers)
        except OSError as exc:  # the layer went away or is not readable after all: ask the engine
            if exc.errno in UNLISTABLE_ERRNOS:
                raise  # the agent's paths themselves (nothing else would list them either)
    entries = client.api.diff(container) or []
    return [Change(str(e["Path"]), _KINDS.get(int(e["Kind"]), "modified")) for e in entries]


def _container_path(client: Any, container: str) -> str:
    """The PATH a command of the container runs with (its image's, else Docker's default)."""
    env = client.api.inspect_container(container).get("Config", {}).get("Env") or []
    for item in env:
        if item.startswith("PATH="):
            return str(item[len("PATH=") :])
    return DEFAULT_PATH


# Evidence the harness itself left (path -> its change and the path's signature then).
Trusted = dict[str, tuple[str, str | None]]


def tampering(
    client: Any,
    container: str,
    trusted: Trusted | None = None,
    layers: layer.Layers | None = None,
    listed: list[Change] | None = None,
) -> list[Tampering]:
    """What of the container's changes touches what the verifier runs (blocking: a thread),
    except what ``trusted`` holds unchanged since (see :func:`trust`); ``layers``: see
    :func:`container_layers`."""
    try:
        changes = listed if listed is not None else container_changes(client, container, layers)
        relevant = [
            c
            for c in changes
            if c.path.startswith(("/etc/", *SYSTEM_ROOTS, *HOME_BIN_DIRS, "/root/.local"))
        ]
        if not relevant:
            return []
        path = (
            _container_path(client, container)
            if any(c.kind == "added" for c in relevant)
            else DEFAULT_PATH
        )
        probe = _ContainerProbe(client, container)
        found = find_tampering(changes, probe, path=path)
        if trusted:
            found = [
                item
                for item in found
                if trusted.get(item.path) != (item.change, probe.signature(item.path))
            ]
        return found
    except (docker_errors().DockerException, OSError) as exc:
        raise SandboxError(f"cannot list the container's changes: {exc}") from None


def trust(client: Any, container: str, layers: layer.Layers | None = None) -> Trusted:
    """What :func:`tampering` finds now, with each path's signature: the harness's own doing
    (an agent's install), which a later look forgives while the path stays as it is."""
    found = tampering(client, container, layers=layers)
    if not found:
        return {}
    probe = _ContainerProbe(client, container)
    try:
        return {item.path: (item.change, probe.signature(item.path)) for item in found}
    except docker_errors().DockerException as exc:
        raise SandboxError(f"cannot look at the container's changes: {exc}") from None
