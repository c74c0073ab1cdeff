"""The ``ray`` executor on a real multi-node Ray cluster on this machine (tests/worker/executors/support.py:
head and nodes on 127.0.0.1, no dashboard), running real trials with the local sandbox.

One cluster for the module (a cluster start costs tens of seconds on a busy 2-core host): two
one-slot sandbox nodes; tests that need another node add it and remove it again."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from task_sets.task import discover_tasks
from tests.support import REPO_ROOT, make_task
from tests.worker.executors.support import LocalCluster, descendants, local_cluster, ray_missing
from tests.worker.support import make_engine, process_cmdlines_containing
from worker.api import RunRequest, RunTask
from worker.core.failures import RetryPolicy
from worker.executors._ray_node import SANDBOX_RESOURCE
from worker.runs.engine import Engine
from worker.runs.records import RunRecord

pytestmark = [
    pytest.mark.slow,
    pytest.mark.ray_cluster,  # make test runs these after the rest, on their own
    # One cluster for the module: its tests stay on one xdist worker (make test: --dist loadgroup)
    pytest.mark.xdist_group("ray-cluster"),
    pytest.mark.skipif(ray_missing() is not None, reason=ray_missing() or ""),
]

REPO = REPO_ROOT
TASKS_DIR = REPO / "tasks"
EXAMPLES = list(discover_tasks(TASKS_DIR)) if TASKS_DIR.is_dir() else []
WAIT_SEC = 240.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with local_cluster(tmp_path_factory.mktemp("ray-nodes"), [1, 1]) as running:
        yield running


def engine_for(
    jobs: Path, tasks_dir: Path, executor: str, *, concurrency: int = 2, attempts: int = 1
) -> Engine:
    return make_engine(
        jobs,
        tasks_dir,
        "local",
        concurrency=concurrency,
        retry=RetryPolicy(max_attempts=attempts, backoff_base_sec=0.1),
        executor=executor,
    )


def request_for(task_ids: list[str], agent: str = "oracle", instances: int = 1) -> RunRequest:
    return RunRequest(
        config={"condition": "with_skills", "num_instances": instances},
        task_set="examples",
        task_set_digest="sha256:" + "0" * 64,
        tasks=[RunTask(task_id=task_id) for task_id in task_ids],
        agent=agent,
    )


def comparable(row: dict[str, Any]) -> dict[str, Any]:
    """A row without what differs between two runs of the same trial (timings, the id)."""
    return {k: v for k, v in row.items() if k not in ("trial_id", "time_used")}


def trial_files(folder: Path) -> set[str]:
    """A trial folder's files, without the sandbox's own state (not sent back by a node)."""
    return {
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file() and path.relative_to(folder).parts[0] not in ("sandbox", "sandbox-input")
    }


def results(jobs: Path, run: RunRecord) -> list[dict[str, Any]]:
    docs = []
    for trial in run.trials.values():
        assert trial.result_path is not None
        docs.append(json.loads((jobs / trial.result_path).read_text()))
    return docs


async def until(condition: Any, what: str, timeout: float = WAIT_SEC) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, f"timed out waiting for {what}\n{diagnosis()}"
        await asyncio.sleep(0.2)


async def finished(engine: Engine, run_id: str) -> RunRecord:
    """The run once it ended; on a hang, what every coroutine and the cluster were doing."""
    try:
        return await asyncio.wait_for(engine.wait(run_id), WAIT_SEC)
    except TimeoutError:
        raise AssertionError(
            f"run {run_id} did not end in {WAIT_SEC:.0f}s\n{diagnosis()}"
        ) from None


def diagnosis() -> str:
    import io

    import ray

    out = io.StringIO()
    for task in asyncio.all_tasks():
        task.print_stack(limit=8, file=out)
    nodes = [(n["NodeManagerAddress"], n["Alive"], n.get("Resources")) for n in ray.nodes()]
    out.write(f"nodes: {nodes}\navailable: {ray.available_resources()}\n")
    return out.getvalue()


def sandbox_free() -> float:
    import ray

    return float(ray.available_resources().get(SANDBOX_RESOURCE, 0.0))


def sandbox_total() -> float:
    import ray

    return float(ray.cluster_resources().get(SANDBOX_RESOURCE, 0.0))


@pytest.mark.skipif(not EXAMPLES, reason="no example tasks in tasks/")
async def test_examples_give_the_same_rows_inprocess_and_on_two_nodes(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    files: dict[str, dict[str, set[str]]] = {}
    for executor in ("inprocess", "ray"):
        jobs = tmp_path / executor
        engine = engine_for(jobs, TASKS_DIR, executor)
        await engine.start(resume=False)
        run = await finished(engine, (await engine.submit(request_for(EXAMPLES))).run_id)
        await engine.close()
        assert run.status == "completed", run.error
        rows[executor] = {row["task_id"]: comparable(row) for row in run.rows()}
        files[executor] = {
            trial.task_id: trial_files((jobs / str(trial.result_path)).parent)
            for trial in run.trials.values()
        }
        if executor == "ray":
            docs = results(jobs, run)
            nodes = {doc["executor"]["node"]["node_id"] for doc in docs}
            assert len(nodes) == 2, f"trials ran on {nodes}"
            assert all(doc["executor"]["archive"]["files"] > 0 for doc in docs)
    # The trial folders came back whole: the same files as the in-process trials wrote.
    assert files["ray"] == files["inprocess"]
    assert rows["ray"] == rows["inprocess"]
    assert all(row["passed"] for row in rows["ray"].values())


async def test_a_node_lost_mid_run_loses_no_row_and_records_none_twice(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    marker = "7.25"  # each trial's oracle sleeps this long: findable under its node's raylet
    tasks = tmp_path / "tasks"
    for i in range(4):
        make_task(
            tasks, f"slow-{i}", solve_sh=f"#!/bin/sh\nsleep {marker}\necho 42 > /root/answer.txt\n"
        )
    doomed = cluster.add_node(1)
    raylet = doomed.all_processes["raylet"][0].process.pid
    jobs = tmp_path / "jobs"
    engine = engine_for(jobs, tasks, "ray", concurrency=3, attempts=3)
    await engine.start(resume=False)
    ids = [f"slow-{i}" for i in range(4)]
    run = await engine.submit(request_for(ids))

    def on_doomed() -> bool:
        return any(f"sleep {marker}" in _cmdline(pid) for pid in descendants(raylet))

    await until(on_doomed, "a trial running on the node about to be removed")
    cluster.remove_node(doomed)
    run = await finished(engine, run.run_id)
    await engine.close()
    assert run.status == "completed", run.error
    assert sorted(row["task_id"] for row in run.rows()) == ids  # one row per trial
    assert all(row["passed"] for row in run.rows()), run.rows()
    lost = [t for t in run.trials.values() if len(t.attempts) > 1]
    assert lost, "no attempt was lost with the node"
    for trial in lost:
        first = trial.attempts[0]
        # node_lost as a rule. Removing a node kills its processes in no set order: a trial whose
        # sandbox died first while its Ray worker lived on is node_lost too when the raylet was
        # gone by then (run_on_node checks), else sandbox_lost. Both: infra, retried, no row.
        assert first.outcome == "retried", first
        assert first.failure in ("node_lost", "sandbox_lost"), first
        assert trial.row is not None and trial.row["trial_id"] == trial.attempts[-1].trial_id
    assert not process_cmdlines_containing(f"sleep {marker}")


async def test_cancelling_a_run_leaves_no_ray_task_sandbox_or_process(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    marker = "311.5"
    tasks = tmp_path / "tasks"
    for i in range(3):
        make_task(tasks, f"stuck-{i}", agent_timeout=600, solve_sh=f"#!/bin/sh\nsleep {marker}\n")
    jobs = tmp_path / "jobs"
    engine = engine_for(jobs, tasks, "ray", concurrency=3)
    await engine.start(resume=False)
    total = sandbox_total()
    run = await engine.submit(request_for([f"stuck-{i}" for i in range(3)]))
    await until(
        lambda: len(process_cmdlines_containing(f"sleep {marker}")) >= 2,
        "both nodes running a trial",
    )
    run = await engine.cancel(run.run_id)
    assert run.status == "cancelled"
    seen = [
        (t.task_id, t.failure, [(a.failure, a.error) for a in t.attempts])
        for t in run.trials.values()
    ]
    assert {row["infra_failure_type"] for row in run.rows()} == {"worker_cancelled"}, seen
    await engine.executor.wait_cleanups()  # type: ignore[attr-defined]
    await until(lambda: not process_cmdlines_containing(f"sleep {marker}"), "no trial process")
    await until(lambda: sandbox_free() == total, "every sandbox slot free (no Ray task left)")
    leftovers = list((cluster.node_dir / "runs").glob(f"{run.run_id}/*"))
    assert not leftovers, leftovers
    await engine.close()


async def test_a_node_of_another_project_version_is_refused(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    for package in ("worker", "task_sets", "leaderboard"):
        shutil.copytree(
            REPO / package, other / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    with (other / "worker" / "executors" / "_ray_node.py").open("a") as handle:
        handle.write("\n# another version\n")
    node = cluster.add_node(1, env_vars={"PYTHONPATH": str(other)})
    try:
        # The CLI in its own process, from a folder that is not a checkout (Ray puts the
        # driver's current folder on its workers' path).
        env = {**os.environ, "RAY_ADDRESS": cluster.address}
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "skillsbench_agentbeats",
                "run",
                "--tasks-dir",
                str(TASKS_DIR),
                "--task-id",
                EXAMPLES[0],
                "--agent",
                "oracle",
                "--environment",
                "local",
                "--executor",
                "ray",
                "--jobs-dir",
                str(tmp_path / "jobs"),
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=WAIT_SEC,
        )
        assert done.returncode != 0, done.stdout
        assert "every node must run the worker's version" in done.stderr, done.stderr
        assert "127.0.0.1" in done.stderr
        assert "Traceback" not in done.stderr, done.stderr  # one line, no traceback
        assert not (tmp_path / "jobs" / "runs").exists()  # refused before any run
    finally:
        cluster.remove_node(node)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.mark.skipif(not EXAMPLES, reason="no example tasks in tasks/")
def test_a_worker_started_by_uv_run_runs_its_trials_on_the_nodes(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """`uv run skillsbench-agentbeats …` (as the docs start a worker): Ray would ship the
    driver's folder and `uv run` to every Ray worker process, which then cannot start; the
    executor turns that off unless the operator asks for it."""
    uv = shutil.which("uv") or str(REPO / ".tools" / "bin" / "uv")
    if not Path(uv).exists():
        pytest.skip("no uv here (make sync brings one to .tools/bin)")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_UV_RUN_RUNTIME_ENV"}
    env["RAY_ADDRESS"] = cluster.address
    done = subprocess.run(
        [
            *(uv, "run", "--frozen", "--project", str(REPO), "skillsbench-agentbeats", "run"),
            *("--tasks-dir", str(TASKS_DIR), "--task-id", EXAMPLES[0], "--agent", "oracle"),
            *("--environment", "local", "--executor", "ray", "--expect", "passed"),
            *("--jobs-dir", str(tmp_path / "jobs")),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT_SEC,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1/1 passed" in done.stdout, done.stdout
