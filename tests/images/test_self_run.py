"""Worker-local self-run: green, worker and purple images on one Docker network, `assess` end to end.

The published README's local worker-backed Amber self-run, with plain Docker: a user-defined
bridge network (labelled, removed afterwards), the worker container with the host's Docker socket
(task containers are its siblings on the engine, started with no network: the a2a bridge runs in
the worker process, so only the worker must reach the purple agent), the green agent pointed at
the worker through `SKILLSBENCH_WORKER_SLOT_URL` as `scenario-worker-local.json5` does, and the
gateway's part played by `skillsbench-agentbeats assess` in a container on the same network.
The placeholder scores 0; the agent under test with a scripted command solves the task and scores 1.
"""

from __future__ import annotations

import io
import json
import secrets
import tarfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from tests.support.docker_images import ensure_test_image

TASK_ID = "csv-sales-summary"
SOCKET = "/var/run/docker.sock"
# Run by the agent under test in its copy of the workspace (/root): the task's answer, computed.
SOLVER = """python3 - <<'PY'
import csv, json
totals = {}
with open("sales.csv", newline="") as f:
    for row in csv.DictReader(f):
        totals[row["region"]] = totals.get(row["region"], 0.0) + int(row["units"]) * float(row["unit_price"])
summary = {"total_revenue": round(sum(totals.values()), 2),
           "revenue_by_region": {k: round(v, 2) for k, v in sorted(totals.items())},
           "top_region": max(totals, key=totals.get)}
with open("summary.json", "w") as f:
    json.dump(summary, f)
PY"""


def listen(alias: str) -> list[str]:
    return ["--host", "0.0.0.0", "--port", "9010", "--card-url", f"http://{alias}:9010/"]


@contextmanager
def scenario_network(client: Any) -> Iterator[Any]:
    name = f"skillsbench-selfrun-{secrets.token_hex(4)}"
    # Not labelled skillsbench.managed: the worker's reaper must leave it alone.
    network = client.networks.create(name, driver="bridge", labels={"skillsbench.test": "self-run"})
    containers: list[Any] = []
    network.started = containers
    try:
        yield network
    finally:
        for container in containers:
            with suppress(Exception):
                container.remove(force=True, v=True)
        network.remove()


def start(network: Any, client: Any, image: str, alias: str, **kwargs: Any) -> Any:
    container = client.containers.run(
        image,
        detach=True,
        name=f"{network.name}-{alias}",
        network=network.name,
        labels={"skillsbench.test": "self-run"},
        **kwargs,
    )
    network.started.append(container)
    # containers.run(network=...) gives no alias; reconnect with one so peers resolve `alias`.
    network.disconnect(container)
    network.connect(container, aliases=[alias])
    return container


def wait_listening(container: Any, port: int, timeout: float = 120.0) -> None:
    probe = f"import socket,sys\ns=socket.create_connection(('127.0.0.1',{port}),timeout=2)\n"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        container.reload()
        if container.status != "running":
            raise AssertionError(f"{container.name} stopped:\n{container.logs().decode()[-3000:]}")
        code, _ = container.exec_run(["python", "-c", probe], user="skillsbench")
        if code == 0:
            return
        time.sleep(1)
    raise AssertionError(
        f"{container.name} never listened on {port}:\n{container.logs().decode()[-3000:]}"
    )


def run_assess(network: Any, client: Any, image: str, participant: str) -> dict[str, Any]:
    config = {"task_set": "examples", "task_ids": [TASK_ID], "condition": "with_skills"}
    args = [
        "--participant", participant,
        "--green", "http://green:9009/",
        "--config", json.dumps(config),
        "--output", "/tmp/results.json",
    ]  # fmt: skip
    container = client.containers.create(
        image,
        entrypoint=["skillsbench-agentbeats", "assess"],
        command=args,
        network=network.name,
        labels={"skillsbench.test": "self-run"},
        user="skillsbench",
    )
    network.started.append(container)
    container.start()
    status = container.wait(timeout=900)
    logs = container.logs().decode()
    assert status["StatusCode"] == 0, f"assess failed:\n{logs[-4000:]}"
    stream, _ = container.get_archive("/tmp/results.json")
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
        member = tar.extractfile("results.json")
        assert member is not None
        return dict(json.loads(member.read()))


def trial_records(worker: Any) -> str:
    """What each trial record in the worker container says of its outcome (failure kind, error,
    reason), for a failing assertion: the container and its jobs folder are gone afterwards."""
    try:
        stream, _ = worker.get_archive("/app/jobs")
        found = []
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            for member in tar:
                if not member.name.endswith("/result.json"):
                    continue
                handle = tar.extractfile(member)
                record = json.loads(handle.read()) if handle is not None else {}
                keys = ("failure", "infra_failure_type", "retried", "error", "reason")
                found.append({k: record.get(k) for k in keys} | {"file": member.name})
        return json.dumps(found, indent=1)[:6000]
    except Exception as exc:  # evidence only: never the test's own failure
        return f"(the trial records could not be read: {exc!r})"


def only_row(results: dict[str, Any]) -> dict[str, Any]:
    assert results["status"] == "completed", results
    [envelope] = results["results"]
    [row] = envelope["results"]
    return dict(row)


@pytest.mark.docker
@pytest.mark.slow
def test_worker_local_self_run(docker_client: Any, service_images: dict[str, str]) -> None:
    # The worker builds the task's image on this engine, `FROM python:3.11-slim`: that name is the
    # test `python` image's alias, made here (on a fresh machine this test runs first of all).
    ensure_test_image(docker_client, "python")
    token = secrets.token_hex(16)
    with scenario_network(docker_client) as network:
        start(
            network, docker_client, service_images["purple"], "placeholder",
            command=["placeholder", *listen("placeholder")],
        )  # fmt: skip
        start(
            network, docker_client, service_images["purple"], "solver",
            command=["agent-under-test", *listen("solver")],
            environment={"SKILLSBENCH_AGENT_HARNESS": "codex", "SKILLSBENCH_AGENT_COMMAND": SOLVER},
        )  # fmt: skip
        worker = start(
            network, docker_client, service_images["worker"], "worker",
            environment={"SKILLSBENCH_WORKER_TOKEN": token},
            volumes={SOCKET: {"bind": SOCKET, "mode": "rw"}},
            group_add=[str(Path(SOCKET).stat().st_gid)],  # the image runs as `skillsbench`
        )  # fmt: skip
        green = start(
            network, docker_client, service_images["green"], "green",
            command=["--host", "0.0.0.0", "--port", "9009", "--card-url", "http://green:9009/"],
            environment={
                "SKILLSBENCH_EMBEDDED_WORKER": "0",
                "SKILLSBENCH_WORKER_SLOT_URL": "http://worker:9010",
                "SKILLSBENCH_WORKER_TOKEN": token,
            },
        )  # fmt: skip
        wait_listening(worker, 9010)
        wait_listening(green, 9009)

        placeholder = only_row(
            run_assess(network, docker_client, service_images["green"], "http://placeholder:9010/")
        )
        solver = only_row(
            run_assess(network, docker_client, service_images["green"], "http://solver:9010/")
        )
        logs = worker.logs().decode()[-4000:]
        unscored = any(not row["score_eligible"] for row in (placeholder, solver))
        records = trial_records(worker) if unscored else ""

    for row in (placeholder, solver):
        assert row["task_id"] == TASK_ID
        assert row["task_set"] == "examples"
        outcome = {k: row.get(k) for k in ("infra_failure_type", "error_type", "reward")}
        assert row["score_eligible"] is True, f"{outcome}\n{records}\n{logs}"
        assert row["infra_failure_type"] is None, f"{outcome}\n{records}\n{logs}"
        assert row["agent_transport"] == "a2a"
    assert placeholder["reward"] == 0.0 and placeholder["passed"] is False
    assert solver["reward"] == 1.0 and solver["passed"] is True, (solver, logs)
