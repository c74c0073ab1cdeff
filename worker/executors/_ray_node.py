"""What runs on a Ray node for the ``ray`` executor (imported there by Ray; no Ray import here
except the node's identity, so it is testable without a cluster).

A node receives a :class:`NodeTrial` (everything of a :class:`~worker.trial.TrialPlan` that is
data) and the task folder as one archive, runs the whole trial exactly as the ``inprocess``
executor would (its own sandbox backend, agent, bridge, model proxy, verifier) in a node-local
folder, and returns the trial folder as one bounded archive (:data:`ARCHIVE_MAX_BYTES_VAR`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.metadata
import io
import os
import shutil
import socket
import tarfile
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

from task_sets.task import Task, load_task
from worker.api import RunRequest, RunTask
from worker.core.limits import OutputCaps
from worker.sandbox.resources import ResourceSettings
from worker.sandbox.settings import ParticipantProxies, PrebuiltImages
from worker.trial import TrialOutcome
from worker.trial_record.paths import CONFIG_FILE, RESULT_FILE, TIMING_FILE

# The custom resource that marks nodes able to run sandboxes (`ray start --resources`).
SANDBOX_RESOURCE = "skillsbench_sandbox"
NODE_DIR_VAR = "SKILLSBENCH_RAY_NODE_DIR"  # node-local folder (default: <tmp>/skillsbench-ray)
ARCHIVE_MAX_BYTES_VAR = "SKILLSBENCH_RAY_ARCHIVE_MAX_BYTES"
ARCHIVE_MAX_BYTES = 256 * 1024 * 1024  # a trial folder's files, uncompressed, per attempt
TASK_ARCHIVE_MAX_BYTES = 512 * 1024 * 1024  # a task folder, compressed
# Not sent back: the sandbox's own state (a layer, sockets) and the staged inputs.
NOT_ARCHIVED = frozenset({"sandbox", "sandbox-input"})
# The trial's documents go first, so a cut archive still carries them.
FIRST = (RESULT_FILE, CONFIG_FILE, TIMING_FILE)
PACKAGES = ("worker", "task_sets", "leaderboard")  # the code a node runs; hashed for the check


class NodeMismatch(RuntimeError):
    """This node runs another version of the project than the worker."""


class NodeLostDuringTrial(RuntimeError):
    """This node's raylet ended while the attempt ran: the node is being lost, and what the
    attempt saw (its sandbox killed from outside, an agent cut off) is not the agent's doing."""


@dataclass(frozen=True)
class NodeTrial:
    """One attempt, as data (what a :class:`~worker.trial.TrialPlan` holds, minus host paths)."""

    run_id: str
    key: str
    instance: int
    attempt: int
    trial_id: str
    task_id: str
    task_hash: str  # of the task archive: the node's unpacked copy is reused per hash
    run_task: RunTask
    request: RunRequest
    agent_spec: str
    environment: str
    owner: str
    code: str  # the worker's project_identity(); a node with another one refuses
    prebuilt: PrebuiltImages = field(default_factory=PrebuiltImages)
    proxies: ParticipantProxies = field(default_factory=ParticipantProxies)
    caps: OutputCaps = field(default_factory=OutputCaps)
    resources: ResourceSettings = field(default_factory=ResourceSettings)  # cap, overrides
    archive_max_bytes: int = ARCHIVE_MAX_BYTES


@dataclass(frozen=True)
class NodeResult:
    outcome: TrialOutcome
    archive: bytes  # the trial folder, tar.gz
    node: dict[str, Any]
    report: dict[str, Any]  # what the archive holds (pack_folder)


@lru_cache(maxsize=1)
def project_identity() -> str:
    """``<version>+<hash>``: the installed project's version and a hash of its source (the
    ``.py`` files of the packages a node runs), so an edited or other checkout differs too."""
    try:
        version = importlib.metadata.version("skillsbench-agentbeats")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    digest = hashlib.sha256()
    for package in PACKAGES:
        module = __import__(package)
        root = Path(module.__file__ or "").parent
        for path in sorted(root.rglob("*.py")):
            digest.update(f"{package}/{path.relative_to(root).as_posix()}\0".encode())
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return f"{version}+{digest.hexdigest()[:16]}"


def node_identity() -> dict[str, Any]:
    """Which node this is (recorded in the trial's result.json) and what it runs."""
    info: dict[str, Any] = {"hostname": socket.gethostname(), "code": project_identity()}
    try:
        import ray

        context = ray.get_runtime_context()
        info["node_id"] = context.get_node_id()
        info["node_ip"] = ray.util.get_node_ip_address()
    except Exception:  # outside a Ray worker
        info["node_id"] = None
    return info


def node_dir() -> Path:
    return Path(os.environ.get(NODE_DIR_VAR) or Path(tempfile.gettempdir()) / "skillsbench-ray")


# ---- archives ----------------------------------------------------------------------------------


def pack_folder(
    folder: Path, max_bytes: int, *, skip: frozenset[str] = frozenset()
) -> tuple[bytes, dict[str, Any]]:
    """``folder`` as tar.gz: regular files and folders only, its documents first, files that
    would take the total (uncompressed) past ``max_bytes`` left out and counted."""
    buffer = io.BytesIO()
    total = 0
    skipped: list[str] = []
    files: list[Path] = []
    dirs: list[Path] = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if rel.parts[0] in skip:
            continue
        if path.is_symlink():
            continue
        if path.is_dir():
            dirs.append(rel)
        elif path.is_file():
            files.append(rel)
    files.sort(key=lambda rel: (rel.as_posix() not in FIRST, rel.as_posix()))
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as tar:
        for rel in dirs:
            tar.add(folder / rel, arcname=rel.as_posix(), recursive=False)
        for rel in files:
            size = (folder / rel).stat().st_size
            if total + size > max_bytes:
                skipped.append(rel.as_posix())
                continue
            total += size
            tar.add(folder / rel, arcname=rel.as_posix(), recursive=False)
    report: dict[str, Any] = {
        "bytes": total,
        "files": len(files) - len(skipped),
        "max_bytes": max_bytes,
    }
    if skipped:
        report["skipped_files"] = skipped[:100]
        report["n_skipped_files"] = len(skipped)
    return buffer.getvalue(), report


def unpack_archive(data: bytes, dest: Path, max_bytes: int) -> None:
    """Write the archive's folders and regular files under ``dest`` (nothing else: no link, no
    device, no path leaving ``dest``), at most ``max_bytes`` in all."""
    dest.mkdir(parents=True, exist_ok=True)
    total = 0
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar:
            rel = PurePosixPath(member.name)
            if rel.is_absolute() or ".." in rel.parts or not rel.parts:
                raise ValueError(f"archive member {member.name!r} leaves its folder")
            target = dest.joinpath(*rel.parts)
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                target.chmod(0o755 | (member.mode & 0o777))
                continue
            if not member.isfile():
                continue
            total += member.size
            if total > max_bytes:
                raise ValueError(f"archive is larger than {max_bytes} bytes unpacked")
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            assert source is not None
            with source, open(target, "wb") as handle:
                shutil.copyfileobj(source, handle)
            target.chmod(0o644 | (member.mode & 0o755))


def task_folder(task_id: str, task_hash: str, archive: bytes) -> Task:
    """The task, unpacked once per content hash under the node folder (atomic rename)."""
    root = node_dir() / "tasks" / task_hash
    folder = root / task_id
    if not folder.is_dir():
        root.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{task_hash}.", dir=root.parent))
        try:
            unpack_archive(archive, staging / task_id, TASK_ARCHIVE_MAX_BYTES * 8)
            # OSError: another trial of the same task unpacked it first
            with contextlib.suppress(OSError):
                staging.rename(root)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return load_task(folder)


# ---- the trial -----------------------------------------------------------------------------


def run_on_node(trial: NodeTrial, task_archive: bytes) -> NodeResult:
    """Run one attempt on this node (the body of the Ray task)."""
    from worker.agents.registry import resolve_agent
    from worker.trial import TrialPlan, run_trial

    mine = project_identity()
    node = node_identity()
    if mine != trial.code:
        raise NodeMismatch(
            f"node {node.get('node_ip') or node['hostname']} runs skillsbench-agentbeats {mine}, "
            f"the worker {trial.code}: install the worker's version on every node"
        )
    # A Ray worker process is the raylet's child: when the raylet dies (the node is removed,
    # crashes or is killed), this process is re-parented, while it may still reach the worker.
    raylet = os.getppid()
    task = task_folder(trial.task_id, trial.task_hash, task_archive)
    work = node_dir() / "runs" / trial.run_id / trial.trial_id
    trial_dir = work / "trial"
    trial_dir.mkdir(parents=True, exist_ok=True)
    try:
        plan = TrialPlan(
            run_id=trial.run_id,
            key=trial.key,
            instance=trial.instance,
            attempt=trial.attempt,
            trial_id=trial.trial_id,
            trial_dir=trial_dir,
            task=task,
            run_task=trial.run_task,
            request=trial.request,
            agent=resolve_agent(trial.agent_spec),
            environment=trial.environment,
            prebuilt=trial.prebuilt,
            owner=trial.owner,
            proxies=trial.proxies,
            caps=trial.caps,
            resources=trial.resources,
        )
        outcome = asyncio.run(run_trial(plan))
        if os.getppid() != raylet:
            # Killing the node's processes may reach the sandbox first: the attempt then ends
            # as sandbox_lost or an agent failure. Its result is not sent: node_lost, retried.
            raise NodeLostDuringTrial(
                f"the raylet of node {node.get('node_ip') or node['hostname']} ended during the trial"
            )
        archive, report = pack_folder(trial_dir, trial.archive_max_bytes, skip=NOT_ARCHIVED)
        return NodeResult(outcome=outcome, archive=archive, node=node, report=report)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def cleanup_run_on_node(environment: str, run_id: str) -> int:
    """After a cancelled attempt was killed here: remove what the run left on this node (the
    backend's run cleanup: its containers; and the run's node-local folders)."""
    from worker.sandbox.base import sandbox_class

    removed = asyncio.run(sandbox_class(environment).run_cleanup(run_id))
    folder = node_dir() / "runs" / run_id
    if folder.is_dir():
        _remove_tree(folder)
        removed += 1
    return removed


def cleanup_attempt_on_node(environment: str, run_id: str, trial_id: str) -> int:
    """After an attempt was lost with its node or its Ray worker: remove what its sandbox left
    here (an engine this node shares with the lost one still runs its container)."""
    from worker.sandbox.base import sandbox_class

    return asyncio.run(sandbox_class(environment).attempt_cleanup(run_id, trial_id))


def _remove_tree(path: Path) -> None:
    """Remove ``path``, making read-only folders (a sandbox's layer) writable on the way."""
    for root, dirs, _files in os.walk(path):
        for name in dirs:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(root, name), 0o700)
    shutil.rmtree(path, ignore_errors=True)
