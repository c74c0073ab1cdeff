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
import logging
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from task_sets.task import Task
from worker.core.failures import FailureKind, plain_text
from worker.executors._ray_node import (
    ARCHIVE_MAX_BYTES,
    ARCHIVE_MAX_BYTES_VAR,
    SANDBOX_RESOURCE,
    TASK_ARCHIVE_MAX_BYTES,
    NodeLostDuringTrial,
    NodeMismatch,
    NodeResult,
    NodeTrial,
    cleanup_attempt_on_node,
    cleanup_run_on_node,
    node_identity,
    pack_folder,
    project_identity,
    run_on_node,
    unpack_archive,
)
from worker.executors.base import Executor, ExecutorError, executor
from worker.sandbox.resources import HostCapacity, fit
from worker.trial import TrialOutcome, TrialPlan
from worker.trial_record import harbor
from worker.trial_record.paths import RESULT_FILE
from worker.trial_record.public_row import build_row
from worker.trial_record.result import TrialResult
from worker.trial_record.trajectory import utc_now

log = logging.getLogger(__name__)

# Ray (>= 2.47) turns a driver started by `uv run` into a runtime environment that every Ray
# worker process rebuilds: `uv run` on each node, in a copy of the driver's folder uploaded to
# the cluster. Our nodes run their own installed project (checked at start, version for
# version), and the copy's relative uv path does not exist there: each Ray worker process dies
# at its start and the trials wait forever. Off unless the operator sets it.
UV_RUN_ENV_VAR = "RAY_ENABLE_UV_RUN_RUNTIME_ENV"

ADDRESS_VAR = "RAY_ADDRESS"
# Beyond the trial's own hard deadline (enforced on the node): the archive's way back.
TRANSFER_MARGIN_SEC = 300.0
CLEANUP_TIMEOUT_SEC = 60.0
# A node's first Ray worker process imports the project: tens of seconds on a busy host.
NODE_CHECK_TIMEOUT_SEC = 180.0
MIB = 1024 * 1024


def _no_uv_run_runtime_env() -> None:
    """Ray's `uv run` propagation off (see UV_RUN_ENV_VAR), before ray.init: Ray reads the
    variable when first imported, so a Ray imported earlier gets its constant set too."""
    os.environ.setdefault(UV_RUN_ENV_VAR, "0")
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None and os.environ[UV_RUN_ENV_VAR].strip().lower() in ("0", "false"):
        setattr(constants, "RAY_ENABLE_UV_RUN_RUNTIME_ENV", False)  # noqa: B010


def ray_failure(exc: BaseException) -> tuple[FailureKind, str]:
    """What a Ray exception means in our failure table (Ray's retries are off). An exception of
    ours raised on the node: a node of another project version is refused, anything else is a
    bug of the worker (both ``worker_error``, not retried), except a raylet that ended during
    the trial (``node_lost``). Everything else Ray reports (a lost
    node, a crashed or killed Ray worker process, a lost or unreachable result, a task Ray
    cannot place any more) is the infrastructure: ``node_lost``, retried by our rule."""
    import ray.exceptions as rex

    cause = getattr(exc, "cause", None) if isinstance(exc, rex.RayTaskError) else None
    if isinstance(cause, NodeMismatch):
        return FailureKind.WORKER_ERROR, str(cause)
    if isinstance(cause, NodeLostDuringTrial):
        return FailureKind.NODE_LOST, str(cause)
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
        self._inflight: dict[str, list[Any]] = {}  # run id -> its attempts' refs in flight
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
        _no_uv_run_runtime_env()
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
        import ray.exceptions as rex

        nodes = _sandbox_nodes()
        if not nodes:
            raise ExecutorError(
                f"executor ray: no live node of the cluster offers the {SANDBOX_RESOURCE} "
                f"resource (start sandbox nodes with "
                f"`ray start --resources '{{\"{SANDBOX_RESOURCE}\": N}}'`)"
            )
        answers = await _on_every_node(nodes, NODE_CHECK_TIMEOUT_SEC, node_identity)
        checked: list[dict[str, Any]] = []
        for node, answer in zip(nodes, answers, strict=True):
            where = f"node {node.get('NodeManagerAddress')} ({node['NodeID'][:12]})"
            if isinstance(answer, TimeoutError):
                raise ExecutorError(
                    f"executor ray: {where} did not answer within {NODE_CHECK_TIMEOUT_SEC:.0f}s "
                    f"(can it start a Ray worker process with this project installed?)"
                )
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
        return await _cleanup_nodes(run_id, environment)

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
        inflight = self._inflight.setdefault(plan.run_id, [])
        inflight.append(ref)
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
            if kind is FailureKind.NODE_LOST:  # before the retry: the attempt's leftovers
                await _cleanup_attempt(plan.run_id, plan.trial_id, plan.environment)
            return self._local_outcome(plan, kind, message, None)
        finally:
            inflight.remove(ref)
            if not inflight:
                self._inflight.pop(plan.run_id, None)
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
        path = plan.trial_dir / RESULT_FILE
        record = TrialResult.read(path)
        if record is None:
            raise FileNotFoundError(f"{path}: the node brought no result.json back")
        record.executor = {"name": "ray", "node": result.node, "archive": result.report}
        harbor.relocate(record, plan.trial_dir)  # Harbor's folder keys named the node's folder
        record.write(path)

    def _cleanup_run(self, run_id: str, environment: str) -> None:
        """Once per cancelled run: the run's leftovers removed on every sandbox node."""
        if run_id not in self._cleanups:
            cancelled = self._cancelled.setdefault(run_id, [])

            def ending() -> list[Any]:
                # Every attempt of the run still in flight is being cancelled with it: the
                # cleanup waits for them all, so it never kills a sandbox whose attempt still
                # runs (and would bring back an agent failure instead of a cancellation).
                return [*cancelled, *self._inflight.get(run_id, [])]

            self._cleanups[run_id] = asyncio.ensure_future(
                _cleanup_nodes(run_id, environment, ending)
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
        plan.trial_dir.mkdir(parents=True, exist_ok=True)
        finished_at = utc_now()
        TrialResult(
            run_id=plan.run_id,
            trial_id=plan.trial_id,
            trial_key=plan.key,
            instance=plan.instance,
            attempt=plan.attempt,
            agent=plan.agent.spec,
            environment=plan.environment,
            reward=None if row is None else row["reward"],
            passed=False,
            failure=kind.value,
            error=plain_text(message),
            finished_at=finished_at,
            # Harbor's keys (task_id among them): its viewer lists the attempt as errored.
            **harbor.trial_fields(
                run_id=plan.run_id,
                task_id=plan.task.task_id,
                trial_id=plan.trial_id,
                trial_dir=plan.trial_dir,
                task_set=plan.request.task_set,
                task_digest=plan.run_task.task_digest,
                agent_name=getattr(plan.agent, "manifest_name", None) or plan.agent.kind,
                model=None,
                environment=plan.environment,
                rewards={"reward": row["reward"]} if row and row["score_eligible"] else None,
                failure=kind,
                error=plain_text(message),
                finished_at=finished_at,
            ),
            executor={"name": "ray", "node": node},
        ).write(plan.trial_dir / RESULT_FILE)


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


def _sandbox_nodes() -> list[dict[str, Any]]:
    """The live nodes of the cluster that offer the sandbox resource."""
    import ray

    return [
        node
        for node in ray.nodes()
        if node.get("Alive") and node.get("Resources", {}).get(SANDBOX_RESOURCE, 0) > 0
    ]


async def _on_every_node(
    nodes: list[dict[str, Any]], timeout: float, function: Any, *args: Any
) -> list[Any]:
    """``function(*args)`` run on each of ``nodes`` (pinned to it, no CPU, no Ray retry): each
    node's answer, its exception, or a TimeoutError (see :func:`_answers`)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    remote = _remote(function)
    refs = [
        remote.options(
            num_cpus=0,
            max_retries=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False),
        ).remote(*args)
        for node in nodes
    ]
    return await _answers(refs, timeout)


async def _answers(refs: list[Any], timeout: float) -> list[Any]:
    """Each ref's value or exception, a TimeoutError for one without an answer in ``timeout``
    (its task cancelled)."""
    import ray

    waiting = [asyncio.ensure_future(_awaitable(ref)) for ref in refs]
    if waiting:
        await asyncio.wait(waiting, timeout=timeout)
    answers: list[Any] = []
    for ref, future in zip(refs, waiting, strict=True):
        if not future.done():
            future.cancel()
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
            answers.append(TimeoutError())
        elif future.exception() is not None:
            answers.append(future.exception())
        else:
            answers.append(future.result())
    return answers


async def _cleanup_nodes(
    run_id: str, environment: str, ending: Callable[[], list[Any]] | None = None
) -> int:
    """Once the run's attempts have ended (``ending``: their refs, cancelled with the run; their
    Ray worker processes and process groups are gone), the backend's run cleanup and the run's
    node folders on every node."""
    waited: set[int] = set()
    while ending is not None:
        await asyncio.sleep(0)  # the run's other attempts, cancelled at the same time, join in
        todo = [ref for ref in ending() if id(ref) not in waited]
        if not todo:
            break
        for ref in todo:
            waited.add(id(ref))
            with contextlib.suppress(Exception):
                await asyncio.wait_for(_awaitable(ref), CLEANUP_TIMEOUT_SEC)
    answers = await _on_every_node(
        _sandbox_nodes(), CLEANUP_TIMEOUT_SEC, cleanup_run_on_node, environment, run_id
    )
    return _removed(answers, f"run {run_id}")


async def _cleanup_attempt(run_id: str, trial_id: str, environment: str) -> int:
    """What a lost attempt's sandbox left, removed here and on every live sandbox node (nodes
    that share an engine, or a Ray worker that crashed on a node that lives on)."""
    from worker.sandbox.base import sandbox_class

    removed = 0
    try:
        removed += await asyncio.wait_for(
            sandbox_class(environment).attempt_cleanup(run_id, trial_id), CLEANUP_TIMEOUT_SEC
        )
    except Exception as exc:  # no engine here: the nodes' cleanups below still run
        log.debug("executor ray: attempt %s not cleaned here: %r", trial_id, exc)
    answers = await _on_every_node(
        _sandbox_nodes(),
        CLEANUP_TIMEOUT_SEC,
        cleanup_attempt_on_node,
        environment,
        run_id,
        trial_id,
    )
    return removed + _removed(answers, f"attempt {trial_id}")


def _removed(answers: list[Any], what: str) -> int:
    """How many things the nodes' cleanups removed; a node that failed is logged (one that went
    away has nothing left to clean)."""
    removed = 0
    for answer in answers:
        if isinstance(answer, int):
            removed += answer
        else:
            log.warning("executor ray: %s not cleaned on a node: %r", what, answer)
    return removed


def _default_prebuilt() -> Any:
    from worker.sandbox.settings import PrebuiltImages

    return PrebuiltImages()
