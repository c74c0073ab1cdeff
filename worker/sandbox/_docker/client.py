"""The shared Docker SDK client and the labels on everything the docker sandbox creates."""

from __future__ import annotations

import threading
from typing import Any

from worker.sandbox.base import SandboxError

LABEL_MANAGED = "skillsbench.managed"
LABEL_RUN = "skillsbench.run"
LABEL_TRIAL = "skillsbench.trial"
LABEL_BUILT = "skillsbench.built"  # on images we built (prebuilt images never carry it)
LABEL_OWNER = "skillsbench.owner"  # the worker that made it (SandboxSpec.owner), for its reaper

client_lock = threading.Lock()
_client: Any = None


def docker_client() -> Any:
    """One shared SDK client; SandboxError when no engine answers."""
    global _client
    with client_lock:
        if _client is None:
            try:
                import docker

                client = docker.from_env(timeout=300)
                client.ping()
            except Exception as exc:  # DockerException, requests' ConnectionError, ...
                raise SandboxError(f"no Docker Engine answers: {exc}") from None
            _client = client
        return _client


def errors() -> Any:
    """``docker.errors`` (imported on first use, like the SDK itself)."""
    import docker.errors

    return docker.errors
