"""Removing what the docker sandbox left: one trial's containers, a run's, and the reaper that
sweeps the containers and networks carrying our labels whose run is no longer active (never an
image: task images are a cache that any run may use)."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from worker.sandbox._docker.client import (
    LABEL_MANAGED,
    LABEL_OWNER,
    LABEL_RUN,
    LABEL_TRIAL,
    docker_client,
)
from worker.sandbox._docker.client import errors as docker_errors
from worker.sandbox.base import SandboxEnd, SandboxError
from worker.sandbox.resources import HostCapacity


def remove_containers(client: Any, run_id: str, trial_id: str | None, known: str | None) -> int:
    """Remove the containers of one trial, or of a whole run when ``trial_id`` is None (what a
    killed worker left behind); returns how many were removed."""
    errors = docker_errors()
    ids = {known} if known else set()
    labels = [f"{LABEL_RUN}={run_id}"]
    if trial_id is not None:
        labels.append(f"{LABEL_TRIAL}={trial_id}")
    with contextlib.suppress(errors.DockerException):
        ids |= {c["Id"] for c in client.api.containers(all=True, filters={"label": labels})}
    removed = 0
    for cid in ids:
        try:
            client.api.remove_container(cid, force=True, v=True)
        except errors.NotFound:
            continue
        except errors.APIError as exc:
            if "already in progress" not in str(exc):
                raise SandboxError(f"cannot remove container {cid[:12]}: {exc}") from None
            continue
        removed += 1
    return removed


def container_end(client: Any, container_id: str) -> SandboxEnd | None:
    """Who ended the container: None while it runs (paused too: only the host pauses it).

    The init (init.sh) never exits by itself and no signal from inside reaches it, so an init
    that ended by a signal (exit code 128+n) was ended from outside, unless the container's own
    memory limit killed it (``OOMKilled``, the agent's doing). An init that exited by itself
    (a code below 128) did so because of what ran inside. A container the engine no longer
    knows, or an engine that does not answer, is the host's fault."""
    errors = docker_errors()
    try:
        state = client.api.inspect_container(container_id)["State"]
    except errors.DockerException:
        return SandboxEnd.OUTSIDE
    if state.get("Running"):
        return None
    if state.get("OOMKilled"):
        return SandboxEnd.INSIDE
    code = state.get("ExitCode")
    if isinstance(code, int) and 0 <= code < 128 and not state.get("Error"):
        return SandboxEnd.INSIDE
    return SandboxEnd.OUTSIDE


def engine_capacity(client: Any) -> HostCapacity:
    """What one container can be given on this engine (``docker info``), asked once per client."""
    cached = _CAPACITY.get(id(client))
    if cached is None:
        try:
            info = client.info()
        except docker_errors().DockerException as exc:
            raise SandboxError(f"docker info failed: {exc}") from None
        cached = HostCapacity(
            cpus=float(info.get("NCPU") or 1), memory_mb=int(info.get("MemTotal") or 0) >> 20
        )
        _CAPACITY[id(client)] = cached
    return cached


_CAPACITY: dict[int, HostCapacity] = {}


def set_pids_limit(client: Any, container_id: str, limit: int) -> bool:
    """Change a running container's process cap (``POST /containers/{id}/update``; the SDK's
    ``update_container`` lacks ``PidsLimit``); False when the engine refuses."""
    api = client.api
    try:
        answer = api._post_json(
            api._url("/containers/{0}/update", container_id), data={"PidsLimit": limit}
        )
        api._raise_for_status(answer)
    except docker_errors().DockerException:
        return False
    return True


def limit_state(client: Any, container_id: str) -> dict[str, int] | None:
    """What the engine tells of a container's limits when nothing can run in it: at its process
    cap now (stats' ``pids_stats``), or killed by its memory limit (``OOMKilled``, set once the
    container ended); None when the engine cannot say."""
    errors = docker_errors()
    try:
        state = client.api.inspect_container(container_id)["State"]
        stats = client.api.stats(container_id, stream=False, one_shot=True)
    except (errors.DockerException, KeyError, TypeError):
        return None
    pids = stats.get("pids_stats") or {}
    at_cap = bool(pids.get("limit")) and pids.get("current", 0) >= pids["limit"]
    return {"oom_kills": int(bool(state.get("OOMKilled"))), "pids_max_hits": int(at_cap)}


# -- reaper ---------------------------------------------------------------------------------


@dataclass
class ReapReport:
    containers: list[str] = field(default_factory=list)
    networks: list[str] = field(default_factory=list)


async def reap_stale(
    active_run_ids: Collection[str],
    *,
    owner: str | None = None,
    only_runs: Collection[str] | None = None,
) -> ReapReport:
    """Remove containers (a build's too) and networks whose run is no longer active.

    Images stay, self-built ones too: a task image is tagged by its build context's content,
    made by whichever run first needed it and used by every later run of that content (an
    unfinished run about to resume among them), so the label of the run that built it says
    nothing of who needs it; removing them is the operator's call (docs/sandboxes.md).
    ``owner`` limits the sweep to what that worker made (``skillsbench.owner``: what a worker's
    start passes, so that workers and tests sharing an engine never reap each other's);
    ``only_runs`` to those run ids.
    """
    client = await asyncio.to_thread(docker_client)
    scope = None if only_runs is None else set(only_runs)
    return await asyncio.to_thread(_reap, client, set(active_run_ids), scope, owner)


def _reap(client: Any, active: set[str], scope: set[str] | None, owner: str | None) -> ReapReport:
    errors = docker_errors()
    report = ReapReport()
    mine = [f"{LABEL_MANAGED}=true"] + ([f"{LABEL_OWNER}={owner}"] if owner else [])
    managed = {"label": mine}

    def stale(labels: Mapping[str, str] | None) -> bool:
        run = (labels or {}).get(LABEL_RUN)
        return run not in active and (scope is None or run in scope)

    # Low-level listings: no per-object inspect that races with concurrent removals.
    for container in client.api.containers(all=True, filters=managed):
        if stale(container.get("Labels")):
            with contextlib.suppress(errors.NotFound, errors.APIError):
                client.api.remove_container(container["Id"], force=True, v=True)
                report.containers.append(container["Id"])
    for network in client.api.networks(filters=managed):
        if stale(network.get("Labels")):
            with contextlib.suppress(errors.NotFound, errors.APIError):
                client.api.remove_network(network["Id"])
                report.networks.append(network["Id"])
    return report


def bridge_gateway(client: Any) -> str:
    """The address of the worker's host on Docker's default bridge network."""
    configs = client.networks.get("bridge").attrs["IPAM"]["Config"] or []
    for config in configs:
        if config.get("Gateway"):
            return str(config["Gateway"])
        subnet = ipaddress.ip_network(str(config.get("Subnet", "")), strict=False)
        if subnet.version == 4:
            return str(next(subnet.hosts()))  # Docker gives the bridge the subnet's first address
    raise OSError("the docker bridge network has no IPv4 gateway")
