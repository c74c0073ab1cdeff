"""Reproducibility metadata and private-proof settings, read from the worker's environment.

The revision and image variables are recorded as given (null when unset) on every run, with the
task-set digest and manifest, so a published row can be traced to the code and data that made it.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from worker.api import RunRequest

META_SCHEMA_VERSION: Final = "skillsbench.agentbeats.worker_meta.v1"

# env var -> key in worker_meta
REVISION_VARS: Final = {
    "SKILLSBENCH_WORKER_REVISION": "worker_revision",
    "SKILLSBENCH_REVISION": "skillsbench_revision",
    "BENCHFLOW_REVISION": "benchflow_revision",
    "SKILLSBENCH_WORKER_IMAGE": "worker_image",
    "SKILLSBENCH_WORKER_IMAGE_DIGEST": "worker_image_digest",
}

PROOF_DIR_VAR: Final = "SKILLSBENCH_PRIVATE_PROOF_DIR"
PROOF_URI_PREFIX_VAR: Final = "SKILLSBENCH_PRIVATE_PROOF_URI_PREFIX"
PROOF_RETENTION_VAR: Final = "SKILLSBENCH_PRIVATE_PROOF_RETENTION"
REQUIRE_DURABLE_VAR: Final = "SKILLSBENCH_REQUIRE_DURABLE_PRIVATE_PROOF"
DEFAULT_PROOF_URI_PREFIX: Final = "local://agentbeats-private-proof"
DEFAULT_RETENTION: Final = "local-debug-only"
DURABLE_SCHEMES: Final = ("s3", "gs", "r2", "https")


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class ProofSettings:
    directory: Path
    uri_prefix: str
    retention: str
    require_durable: bool

    @classmethod
    def from_env(cls, jobs_dir: Path, env: Mapping[str, str] | None = None) -> ProofSettings:
        """Read and check the settings; ValueError when durable proof is required but not given."""
        env = os.environ if env is None else env
        directory = Path(env.get(PROOF_DIR_VAR) or jobs_dir / "private-proof")
        prefix = (env.get(PROOF_URI_PREFIX_VAR) or DEFAULT_PROOF_URI_PREFIX).rstrip("/")
        settings = cls(
            directory=directory,
            uri_prefix=prefix,
            retention=env.get(PROOF_RETENTION_VAR) or DEFAULT_RETENTION,
            require_durable=_truthy(env.get(REQUIRE_DURABLE_VAR)),
        )
        if settings.require_durable:
            check_durable_prefix(prefix)
        return settings


def check_durable_prefix(prefix: str) -> None:
    """A durable proof prefix: s3://, gs://, r2:// or https:// with no query, fragment or credentials."""
    where = f"{PROOF_URI_PREFIX_VAR}={prefix!r}"
    parts = urlsplit(prefix)
    if parts.scheme not in DURABLE_SCHEMES or not parts.netloc:
        raise ValueError(
            f"{REQUIRE_DURABLE_VAR} is set but {where} is not durable storage "
            "(need s3://, gs://, r2:// or access-controlled https://)"
        )
    if parts.username or parts.password or "@" in parts.netloc:
        raise ValueError(f"{where} must not carry credentials")
    if parts.query or parts.fragment or "?" in prefix or "#" in prefix:
        raise ValueError(f"{where} must not have a query or fragment")


def worker_version() -> str:
    try:
        return metadata.version("skillsbench-agentbeats")
    except metadata.PackageNotFoundError:
        return "unknown"


def manifest_of(request: RunRequest) -> dict[str, Any]:
    """The task-set manifest of a run: as sent, or rebuilt from the task list."""
    if request.manifest is not None:
        return dict(request.manifest)
    config = request.config
    return {
        "schema_version": "skillsbench.agentbeats.task_set.v1",
        "task_set": request.task_set,
        "condition": request.condition,
        "allow_excluded_tasks": bool(config.get("allow_excluded_tasks", False)),
        "shard_index": config.get("shard_index", 0),
        "num_shards": config.get("num_shards", 1),
        "task_count": len(request.tasks),
        "tasks": [task.model_dump() for task in request.tasks],
        "task_set_digest": request.task_set_digest,
    }


def manifest_digest(manifest: Mapping[str, Any]) -> str:
    """``sha256:`` of the manifest minus its ``task_set_digest`` (canonical JSON)."""
    body = {k: v for k, v in manifest.items() if k != "task_set_digest"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def worker_meta(
    request: RunRequest,
    *,
    environment: str,
    concurrency: int,
    agent: str,
    env: Mapping[str, str] | None = None,
    resource_limits: Mapping[str, Any] | None = None,
    base_image_map: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``resource_limits``: the process cap and overrides in force and how the sandbox enforces
    each limit here (what :class:`worker.runs.intake.Intake` passes; trials whose resources were
    capped or overridden are added to it as they finish, under ``changed``).
    ``base_image_map``: the ``FROM`` substitutions image builds use (``{}`` when none): a
    task image built FROM a local stand-in is not the image its Dockerfile names."""
    env = os.environ if env is None else env
    meta: dict[str, Any] = {
        "schema_version": META_SCHEMA_VERSION,
        "worker_version": worker_version(),
        "python": platform.python_version(),
        "environment": environment,
        "concurrency": concurrency,
        "agent": agent,
        "task_set": request.task_set,
        "task_set_digest": request.task_set_digest,
        "task_set_manifest": manifest_of(request),
        "resource_limits": dict(resource_limits or {}),
        "base_image_map": dict(sorted((base_image_map or {}).items())),
    }
    for var, key in REVISION_VARS.items():
        meta[key] = env.get(var) or None
    return meta
