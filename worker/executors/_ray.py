"""``ray``: each trial attempt is a Ray task on a node of a Ray cluster
(``worker --executor ray --ray-address ADDR`` or ``RAY_ADDRESS``; ``skillsbench-agentbeats[ray]``).

The worker still owns the run. An attempt is one Ray task (:func:`~worker.executors._ray_node.
run_on_node`) that asks for the task's ``[environment] cpus`` and ``memory_mb`` and one unit of
:data:`~worker.executors._ray_node.SANDBOX_RESOURCE` (the nodes able to run sandboxes); Ray's own
retries are off (``max_retries=0``, ``retry_exceptions=False``): what Ray reports is mapped to our
failure table here. The task folder travels with the attempt (one archive per task, put in the
object store once); the trial folder comes back as one bounded archive and is written into the
run's folder before the engine records the row, so an attempt whose result never came back is
retried with a fresh trial id, never recorded twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Mapping
from typing import Any

from task_sets.task import Task
from worker.executors._ray_node import (
    ARCHIVE_MAX_BYTES,
    ARCHIVE_MAX_BYTES_VAR,
    SANDBOX_RESOURCE,
    TASK_ARCHIVE_MAX_BYTES,
    NodeMismatch,
    NodeResult,
    NodeTrial,
    cleanup_run_on_node,
    node_identity,
    pack_folder,
    project_identity,
    run_on_node,
    unpack_archive,
)
from worker.executors.base import Executor, ExecutorError, executor
from worker.failures import FailureKind, plain_text
from worker.public_rows import build_row
from worker.sandbox.resources import HostCapacity, fit
from worker.store import write_atomic
from worker.trajectory import utc_now
from worker.trial import RESULT_SCHEMA_VERSION, TrialOutcome, TrialPlan

log = logging.getLogger(__name__)

ADDRESS_VAR = "RAY_ADDRESS"
# Beyond the trial's own hard deadline (enforced on the node): the archive's way back.
TRANSFER_MARGIN_SEC = 300.0
CLEANUP_TIMEOUT_SEC = 60.0
MIB = 1024 * 1024


def ray_failure(exc: BaseException) -> tuple[FailureKind, str]:
    """What a Ray exception means in our failure table (Ray's retries are off). An exception of
    ours raised on the node: a node of another project version is refused, anything else is a
    bug of the worker (both ``worker_error``, not retried). Everything else Ray reports (a lost
    node, a crashed or killed Ray worker process, a lost or unreachable result, a task Ray
    cannot place any more) is the infrastructure: ``node_lost``, retried by our rule."""
    import ray.exceptions as rex

    cause = getattr(exc, "cause", None) if isinstance(exc, rex.RayTaskError) else None
    if isinstance(cause, NodeMismatch):
        return FailureKind.WORKER_ERROR, str(cause)
    if isinstance(cause, Exception) and not isinstance(cause, rex.RayError):
        return FailureKind.WORKER_ERROR, f"on the node: {type(cause).__name__}: {cause}"
    text = str(exc).strip()
    detail = plain_text(text).splitlines()[0] if text else ""
    return FailureKind.NODE_LOST, f"{type(exc).__name__}: {detail}".rstrip(": ")


@executor("ray")
class RayExecutor(Executor):
    def __init__(self, address: str | None, archive_max_bytes: int = ARCHIVE_MAX_BYTES) -> None:
        self.address = address
        self.archive_max_bytes = archive_max_bytes
        self.code = ""
        self._tasks: dict[str, tuple[str, Any]] = {}  # task folder -> (hash, object ref)
        self._task_locks: dict[str, asyncio.Lock] = {}
        self._cleanups: dict[str, asyncio.Task[int]] = {}  # run id -> its node cleanup
        self._cancelled: dict[str, list[Any]] = {}  # run id -> its killed attempts' refs
        self._started = False
        self._largest: HostCapacity | None = None  # the largest sandbox node (check_nodes)
        self._connected_here = False

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> RayExecutor:
        unknown = set(options) - {"address"}
        if unknown:
            raise ValueError(f"executor ray: unknown option(s) {', '.join(sorted(unknown))}")
        address = options.get("address") or os.environ.get(ADDRESS_VAR) or None
        raw = os.environ.get(ARCHIVE_MAX_BYTES_VAR)
        try:
            cap = int(raw) if raw else ARCHIVE_MAX_BYTES
        except ValueError:
            raise ValueError(f"{ARCHIVE_MAX_BYTES_VAR}: not a number of bytes: {raw!r}") from None
        return cls(address, cap)

    def describe(self) -> str:
        return f"ray ({self.address or 'the connected cluster'})"

    # ---- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        try:
            import ray
        except ImportError:
            raise ExecutorError(
                "executor ray: the ray package is not installed "
                "(pip install 'skillsbench-agentbeats[ray]')"
            ) from None
        self.code = await asyncio.to_thread(project_identity)
        if not ray.is_initialized():
            if not self.address:
                raise ExecutorError(
                    f"executor ray: no cluster address (--ray-address or {ADDRESS_VAR})"
                )
            try:
                await asyncio.to_thread(
                    ray.init,
                    address=self.address,
                    namespace="skillsbench",
                    log_to_driver=False,
                    logging_level=logging.WARNING,
                    configure_logging=False,
                )
            except Exception as exc:
                raise ExecutorError(
                    f"executor ray: cannot connect to {self.address}: {exc}"
                ) from None
            self._connected_here = True
        await self.check_nodes()
        self._started = True
        log.info("executor ray: connected, nodes checked (project %s)", self.code)

    async def check_nodes(self) -> list[dict[str, Any]]:
        """Ask every live sandbox node what it runs; ExecutorError naming the first that runs
        another project version (or when no node offers the sandbox resource)."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = [
            node
            for node in ray.nodes()
            if node.get("Alive") and node.get("Resources", {}).get(SANDBOX_RESOURCE, 0) > 0
        ]
        if not nodes:
            raise ExecutorError(
                f"executor ray: no live node of the cluster offers the {SANDBOX_RESOURCE} "
                f"resource (start sandbox nodes with "
                f"`ray start --resources '{{\"{SANDBOX_RESOURCE}\": N}}'`)"
            )
        identify = _remote(node_identity)
        refs = [
            identify.options(
                num_cpus=0,
                max_retries=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False),
            ).remote()
            for node in nodes
        ]
        import ray.exceptions as rex

        answers: list[Any] = await asyncio.gather(*refs, return_exceptions=True)
        checked: list[dict[str, Any]] = []
        for node, answer in zip(nodes, answers, strict=True):
            where = f"node {node.get('NodeManagerAddress')} ({node['NodeID'][:12]})"
            if isinstance(answer, rex.TaskUnschedulableError | rex.NodeDiedError):
                log.warning("executor ray: %s went away while being checked", where)
                continue
            if isinstance(answer, BaseException):
                raise ExecutorError(f"executor ray: {where} cannot be checked: {answer!r}")
            if answer["code"] != self.code:
                raise ExecutorError(
                    f"executor ray: {where} runs skillsbench-agentbeats {answer['code']}, "
                    f"this worker {self.code}: every node must run the worker's version"
                )
            checked.append(answer)
        if not checked:
            raise ExecutorError("executor ray: no sandbox node answered")
        # A request above every node would never be placed: fit it to the largest node.
        self._largest = HostCapacity(
            cpus=max(float(n.get("Resources", {}).get("CPU", 1)) for n in nodes),
            memory_mb=max(int(n.get("Resources", {}).get("memory", 0) // MIB) for n in nodes),
        )
        return checked

    async def cleanup_run(self, run_id: str, environment: str) -> int:
        """On every sandbox node: the backend's run cleanup and the run's node folders (the
        killed worker's Ray tasks ended with its connection, their containers may not have)."""
        return await _cleanup_nodes(run_id, environment, [])

    async def close(self) -> None:
        await self.wait_cleanups()
        self._tasks.clear()
        if self._connected_here:
            import ray

            await asyncio.to_thread(ray.shutdown)
            self._connected_here = False

    # ---- attempts --------------------------------------------------------------------------

    async def run(self, plan: TrialPlan) -> TrialOutcome:
        import ray

        if not self._started:
            raise RuntimeError("executor ray: start() was not called")
        cfg = plan.task.config.environment
        try:
            task_hash, task_ref = await self._task_archive(plan.task)
        except (OSError, ValueError) as exc:
            return self._local_outcome(plan, FailureKind.WORKER_ERROR, str(exc), None)
        trial = NodeTrial(
            run_id=plan.run_id,
            key=plan.key,
            instance=plan.instance,
            attempt=plan.attempt,
            trial_id=plan.trial_id,
            task_id=plan.task.task_id,
            task_hash=task_hash,
            run_task=plan.run_task,
            request=plan.request,
            agent_spec=plan.agent.spec,
            environment=plan.environment,
            owner=plan.owner,
            code=self.code,
            prebuilt=plan.prebuilt or _default_prebuilt(),
            proxies=plan.proxies,
            caps=plan.caps,
            resources=plan.resources,
            archive_max_bytes=self.archive_max_bytes,
        )
        wanted = (
            fit(cfg.cpus, cfg.memory_mb, plan.resources, self._largest)
            if self._largest is not None and self._largest.memory_mb > 0
            else None
        )
        remote = _remote(run_on_node).options(
            num_cpus=wanted.cpus if wanted is not None else cfg.cpus,
            memory=(wanted.memory_mb if wanted is not None else cfg.memory_mb) * MIB,
            resources={SANDBOX_RESOURCE: 1},
            max_retries=0,
            retry_exceptions=False,
            name=f"trial {plan.trial_id}",
        )
        ref = remote.remote(trial, task_ref)
        try:
            result: NodeResult = await asyncio.wait_for(
                _awaitable(ref), plan.deadline_sec() + TRANSFER_MARGIN_SEC
            )
        except asyncio.CancelledError:
            ray.cancel(ref, force=True)
            self._cancelled.setdefault(plan.run_id, []).append(ref)
            self._cleanup_run(plan.run_id, plan.environment)
            self._write_result(plan, FailureKind.WORKER_CANCELLED, "the run was cancelled", None)
            raise
        except TimeoutError:
            ray.cancel(ref, force=True)
            message = (
                f"no result from the node within {plan.deadline_sec() + TRANSFER_MARGIN_SEC:.0f}s"
            )
            return self._local_outcome(plan, FailureKind.WORKER_TIMEOUT, message, None)
        except Exception as exc:
            kind, message = ray_failure(exc)
            log.warning("trial %s on ray: %s (%s)", plan.trial_id, kind.value, message)
            return self._local_outcome(plan, kind, message, None)
        try:
            await asyncio.to_thread(self._write_back, plan, result)
        except (OSError, ValueError) as exc:  # a broken archive: as if it never came back
            message = f"the trial folder from node {result.node.get('node_ip')} is unusable: {exc}"
            return self._local_outcome(plan, FailureKind.NODE_LOST, message, result.node)
        return result.outcome

    async def _task_archive(self, task: Task) -> tuple[str, Any]:
        """The task folder as one archive in the object store, made once per folder."""
        import ray

        key = str(task.path.resolve())
        lock = self._task_locks.setdefault(key, asyncio.Lock())
        async with lock:
            if key not in self._tasks:
                data, _report = await asyncio.to_thread(
                    pack_folder, task.path, TASK_ARCHIVE_MAX_BYTES * 8
                )
                if len(data) > TASK_ARCHIVE_MAX_BYTES:
                    raise ValueError(
                        f"task folder {task.task_id} is {len(data)} bytes packed, over "
                        f"{TASK_ARCHIVE_MAX_BYTES}: put it on a path every node has"
                    )
                digest = hashlib.sha256(data).hexdigest()[:24]
                self._tasks[key] = (digest, ray.put(data))
            return self._tasks[key]

    def _write_back(self, plan: TrialPlan, result: NodeResult) -> None:
        """The node's trial folder into the run's folder, result.json telling which node."""
        unpack_archive(result.archive, plan.trial_dir, self.archive_max_bytes)
        path = plan.trial_dir / "result.json"
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc["executor"] = {"name": "ray", "node": result.node, "archive": result.report}
        write_atomic(path, json.dumps(doc, indent=2, default=str).encode(), durable=False)

    def _cleanup_run(self, run_id: str, environment: str) -> None:
        """Once per cancelled run: the run's leftovers removed on every sandbox node."""
        if run_id not in self._cleanups:
            refs = self._cancelled.setdefault(run_id, [])
            self._cleanups[run_id] = asyncio.ensure_future(
                _cleanup_nodes(run_id, environment, refs)
            )

    async def wait_cleanups(self) -> None:
        """Until the node cleanups of cancelled runs are done (for tests and close)."""
        if self._cleanups:
            await asyncio.wait(list(self._cleanups.values()), timeout=CLEANUP_TIMEOUT_SEC * 2)

    def _local_outcome(
        self,
        plan: TrialPlan,
        kind: FailureKind,
        message: str,
        node: dict[str, Any] | None,
    ) -> TrialOutcome:
        """The outcome of an attempt that brought no result back (its result.json written
        here): the failure table decides whether it is tried again."""
        row = build_row(
            plan.request,
            plan.run_task,
            trial_id=plan.trial_id,
            agent_transport=plan.agent.kind,
            reward=None,
            failure=kind,
            time_used=None,
        )
        self._write_result(plan, kind, message, node, row=row)
        return TrialOutcome(
            failure=kind, error=plain_text(message), row=row, reason=f"{kind.value}: {message}"
        )

    def _write_result(
        self,
        plan: TrialPlan,
        kind: FailureKind,
        message: str,
        node: dict[str, Any] | None,
        *,
        row: dict[str, Any] | None = None,
    ) -> None:
        doc = {
            "schema_version": RESULT_SCHEMA_VERSION,
            "run_id": plan.run_id,
            "task_id": plan.task.task_id,
            "trial_id": plan.trial_id,
            "trial_key": plan.key,
            "instance": plan.instance,
            "attempt": plan.attempt,
            "agent": plan.agent.spec,
            "environment": plan.environment,
            "reward": None if row is None else row["reward"],
            "passed": False,
            "failure": kind.value,
            "error": plain_text(message),
            "executor": {"name": "ray", "node": node},
            "finished_at": utc_now(),
        }
        plan.trial_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(
            plan.trial_dir / "result.json",
            json.dumps(doc, indent=2, default=str).encode(),
            durable=False,
        )


_REMOTES: dict[Any, Any] = {}


def _remote(function: Any) -> Any:
    """``function`` as a Ray remote function, made once per process: each new one is exported
    to the cluster again on its first call (tens of ms per trial otherwise)."""
    import ray

    if function not in _REMOTES:
        _REMOTES[function] = ray.remote(function)
    return _REMOTES[function]


async def _awaitable(ref: Any) -> Any:
    return await ref


async def _cleanup_nodes(run_id: str, environment: str, cancelled: list[Any]) -> int:
    """Once the run's killed attempts have ended (their Ray worker processes and process
    groups are gone), the backend's run cleanup and the run's node folders on every node."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    await asyncio.sleep(0)  # the run's other attempts, cancelled at the same time, join in
    for ref in list(cancelled):
        with contextlib.suppress(Exception):
            await asyncio.wait_for(_awaitable(ref), CLEANUP_TIMEOUT_SEC)
    cleanup = _remote(cleanup_run_on_node)
    refs = [
        cleanup.options(
            num_cpus=0,
            max_retries=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False),
        ).remote(environment, run_id)
        for node in ray.nodes()
        if node.get("Alive") and node.get("Resources", {}).get(SANDBOX_RESOURCE, 0) > 0
    ]
    removed = 0
    for ref in refs:
        try:
            removed += await asyncio.wait_for(_awaitable(ref), CLEANUP_TIMEOUT_SEC)
        except Exception as exc:  # a node that went away has nothing left to clean
            log.warning("executor ray: run %s not cleaned on a node: %r", run_id, exc)
    return removed


def _default_prebuilt() -> Any:
    from worker.environment import PrebuiltImages

    return PrebuiltImages()
