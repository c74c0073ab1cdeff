"""The worker image as a Ray cluster: a head and two sandbox nodes, each a container of the
worker image built with the `ray` extra (WITH_RAY=1), on a private Docker network this test
makes (internal: nothing leaves the machine). The worker runs in the head's container, as in
docs/scaling.md's KubeRay layout, with the Docker sandbox: the nodes reach this machine's engine
through its socket. One node container is killed while it runs a trial: the run still completes
with one row per trial, none lost and none twice, and the lost attempt is retried elsewhere."""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import make_task
from worker.executors._ray_node import SANDBOX_RESOURCE
from worker.sandbox._docker.client import LABEL_OWNER

pytestmark = [pytest.mark.docker, pytest.mark.slow]

WAIT_SEC = 420.0
SOCKET = "/var/run/docker.sock"
MARKER = "13.75"  # each trial's oracle sleeps this long (findable in the trial containers)
OWN_IP = "$(python -c 'import socket; print(socket.gethostbyname(socket.gethostname()))')"
COMMON = "--object-store-memory 100000000 --disable-usage-stats --block"


def until(condition: Callable[[], Any], what: str, timeout: float = WAIT_SEC) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(1.0)


class Cluster:
    """The head and node containers on their own network; removed (with the run's trial
    containers) at the end."""

    def __init__(self, client: Any, image: str, tasks: Path, jobs: Path) -> None:
        self.client = client
        self.image = image
        self.name = f"skillsbench-ray-e2e-{uuid.uuid4().hex[:8]}"
        self.network = client.networks.create(self.name, driver="bridge", internal=True)
        self.containers: list[Any] = []
        self.head = self._start(
            "head",
            f"exec ray start --head --port 6379 --num-cpus 0 --include-dashboard false "
            f'--node-ip-address "{OWN_IP}" {COMMON}',
            volumes={str(tasks): {"bind": "/tasks", "mode": "ro"}, str(jobs): {"bind": "/jobs"}},
        )
        self.head_ip = self.ip(self.head)

    def ip(self, container: Any) -> str:
        container.reload()
        return str(container.attrs["NetworkSettings"]["Networks"][self.name]["IPAddress"])

    def _start(self, role: str, script: str, volumes: dict[str, Any] | None = None) -> Any:
        container = self.client.containers.run(
            self.image,
            entrypoint=["sh", "-c", script],
            command=[],
            name=f"{self.name}-{role}",
            user="0",
            network=self.name,
            shm_size="256m",
            volumes={SOCKET: {"bind": SOCKET}, **(volumes or {})},
            environment={"RAY_USAGE_STATS_ENABLED": "0"},
            detach=True,
        )
        self.containers.append(container)
        return container

    def add_node(self, role: str) -> Any:
        resources = json.dumps({SANDBOX_RESOURCE: 1}).replace('"', '\\"')
        return self._start(
            role,
            f"exec ray start --address {self.head_ip}:6379 --num-cpus 1 --memory 2147483648 "
            f'--resources "{resources}" --node-ip-address "{OWN_IP}" {COMMON}',
        )

    def head_python(self, code: str) -> tuple[int, str]:
        result = self.head.exec_run(["python", "-c", code], user="0")
        return int(result.exit_code), result.output.decode(errors="replace")

    def sandbox_slots(self) -> float:
        code, out = self.head_python(
            "import json, ray; ray.init(address='auto', logging_level='ERROR', "
            "configure_logging=False); print(json.dumps(ray.cluster_resources()))"
        )
        if code != 0:
            return 0.0
        # Ray may print a warning after the answer on a busy machine: the answer is the last
        # line that is a JSON object; none yet is "not ready", and the caller waits on.
        for line in reversed(out.strip().splitlines()):
            if line.startswith("{"):
                try:
                    return float(json.loads(line).get(SANDBOX_RESOURCE, 0.0))
                except ValueError:
                    continue
        return 0.0

    def logs(self) -> str:
        parts = []
        for container in self.containers:
            try:
                text = container.logs(tail=40).decode(errors="replace")
            except Exception as exc:  # removed already
                text = repr(exc)
            parts.append(f"--- {container.name}\n{text}")
        return "\n".join(parts)

    def remove(self, owner: str) -> None:
        import docker.errors

        leftovers = self.client.containers.list(
            all=True, filters={"label": f"{LABEL_OWNER}={owner}"}
        )
        for container in [*self.containers, *leftovers]:
            with contextlib.suppress(docker.errors.APIError):
                container.remove(force=True)
        with contextlib.suppress(docker.errors.APIError):
            self.network.remove()


@pytest.fixture
def cluster(docker_client: Any, ray_worker_image: str, tmp_path: Path) -> Iterator[Cluster]:
    tasks, jobs = tmp_path / "tasks", tmp_path / "jobs"
    tasks.mkdir()
    jobs.mkdir()
    made = Cluster(docker_client, ray_worker_image, tasks, jobs)
    owner = owner_of(JOBS_IN_HEAD)
    try:
        yield made
    finally:
        made.remove(owner)


JOBS_IN_HEAD = "/jobs/run"


def owner_of(jobs_dir: str) -> str:
    """The worker's owner label for its sandboxes (worker/runs/engine.py: a hash of its jobs folder)."""
    return hashlib.sha256(jobs_dir.encode()).hexdigest()[:16]


def test_a_killed_node_container_loses_no_row_and_records_none_twice(
    cluster: Cluster, docker_client: Any, tmp_path: Path
) -> None:
    ids = [f"slow-{i}" for i in range(3)]
    for task_id in ids:
        make_task(
            tmp_path / "tasks",
            task_id,
            agent_timeout=300,
            solve_sh=f"#!/bin/sh\nsleep {MARKER}\necho 42 > /root/answer.txt\n",
        )
    doomed, spared = cluster.add_node("node-a"), cluster.add_node("node-b")
    until(lambda: cluster.sandbox_slots() == 2, f"two sandbox nodes\n{cluster.logs()}")

    owner = owner_of(JOBS_IN_HEAD)
    finished: dict[str, Any] = {}

    def run() -> None:
        argv = [
            *("skillsbench-agentbeats", "run", "--tasks-dir", "/tasks", "--agent", "oracle"),
            *(arg for task_id in ids for arg in ("--task-id", task_id)),
            *("--environment", "docker", "--executor", "ray"),
            *("--ray-address", f"{cluster.head_ip}:6379", "--jobs-dir", JOBS_IN_HEAD),
            *("--concurrency", "3", "--expect", "passed"),
        ]
        result = cluster.head.exec_run(argv, user="0")
        finished["code"] = result.exit_code
        finished["output"] = result.output.decode(errors="replace")

    driver = threading.Thread(target=run, daemon=True)
    driver.start()

    def trial_containers() -> list[Any]:
        return docker_client.containers.list(filters={"label": f"{LABEL_OWNER}={owner}"})

    def both_nodes_busy() -> bool:
        """Two trials in their oracle stage: one per one-slot node, so the doomed one runs one."""
        busy = 0
        for container in trial_containers():
            try:
                top = container.top(ps_args="-eo pid,args")
            except Exception:
                continue
            busy += any(f"sleep {MARKER}" in " ".join(p) for p in top.get("Processes") or [])
        return busy >= 2

    until(both_nodes_busy, f"a trial running on each node\n{cluster.logs()}")
    doomed.kill()
    driver.join(WAIT_SEC)
    assert not driver.is_alive(), f"the run did not end\n{cluster.logs()}"
    assert finished["code"] == 0, finished["output"][-4000:]

    runs = list((tmp_path / "jobs" / "run" / "runs").iterdir())
    assert len(runs) == 1, runs
    record = json.loads((runs[0] / "run.json").read_text())
    trials = record["trials"]
    rows = [trial["row"] for trial in trials.values()]
    assert sorted(row["task_id"] for row in rows) == ids  # one row per trial
    assert all(row["passed"] for row in rows), rows
    lost = [trial for trial in trials.values() if len(trial["attempts"]) > 1]
    assert lost, "no attempt was lost with the killed node"
    for trial in lost:
        first = trial["attempts"][0]
        assert first["outcome"] == "retried" and first["failure"] == "node_lost", first
        assert trial["row"]["trial_id"] == trial["attempts"][-1]["trial_id"]
    # Which node ran each recorded attempt is in its result: the spared node ran the retry.
    spared_ip = cluster.ip(spared)
    for trial in lost:
        result = json.loads((tmp_path / "jobs" / "run" / trial["result_path"]).read_text())
        assert result["executor"]["node"]["node_ip"] == spared_ip, result["executor"]
    # The lost attempt's trial container is not left running on the shared engine.
    until(lambda: not trial_containers(), "no trial container of the run left")
