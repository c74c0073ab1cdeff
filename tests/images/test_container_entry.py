"""The service images' entry: service-argument defaulting and the embedded worker supervisor."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from skillsbench_agentbeats.container_entry import (
    full_command,
    uses_embedded_worker,
    worker_endpoint,
)
from tests.support import REPO_ROOT, free_port

SERVICE = ["skillsbench-agentbeats", "green"]


def test_arguments_of_the_service_get_the_service_command() -> None:
    assert full_command(["--help"], SERVICE) == [*SERVICE, "--help"]
    assert full_command(["--host", "0.0.0.0"], SERVICE) == [*SERVICE, "--host", "0.0.0.0"]
    assert full_command(["placeholder", "--port", "1"], ["p"]) == [
        "p",
        "placeholder",
        "--port",
        "1",
    ]
    assert full_command([], SERVICE) == SERVICE


def test_a_program_runs_as_given() -> None:
    assert full_command(["sh", "-lc", "echo hi"], SERVICE) == ["sh", "-lc", "echo hi"]
    assert full_command(["/bin/true"], SERVICE) == ["/bin/true"]


def test_embedded_worker_only_when_no_other_worker_is_named() -> None:
    url = "http://127.0.0.1:9010"
    assert uses_embedded_worker({}, url)
    assert uses_embedded_worker({"SKILLSBENCH_WORKER_URL": url + "/"}, url)
    assert not uses_embedded_worker({"SKILLSBENCH_WORKER_URL": ""}, url)  # mock mode
    assert not uses_embedded_worker({"SKILLSBENCH_WORKER_URL": "http://worker:9010"}, url)
    assert not uses_embedded_worker({"SKILLSBENCH_WORKER_SLOT_URL": "http://w:9010"}, url)
    assert uses_embedded_worker({"SKILLSBENCH_WORKER_SLOT_URL": " "}, url)


def test_worker_endpoint() -> None:
    assert worker_endpoint(["--host", "127.0.0.1", "--port", "9123", "--jobs-dir", "j"]) == (
        "127.0.0.1",
        9123,
    )
    assert worker_endpoint([]) == ("127.0.0.1", 9010)


def test_embedded_worker_serves_the_service_and_stops_with_it(tmp_path: Path) -> None:
    port = free_port()
    probe = (
        "import json, os, urllib.request\n"
        "url = os.environ['SKILLSBENCH_WORKER_URL']\n"
        "print(json.dumps({'url': url, 'health': json.load(urllib.request.urlopen(url + '/healthz'))}))\n"
    )
    env = {
        **os.environ,
        "SKILLSBENCH_SERVICE_COMMAND": f"{sys.executable} -c",
        "SKILLSBENCH_RUN_AS": "root",
        "SKILLSBENCH_EMBEDDED_WORKER": "1",
        "SKILLSBENCH_EMBEDDED_WORKER_ARGS": (
            f"--host 127.0.0.1 --port {port} --jobs-dir {tmp_path / 'jobs'} "
            f"--tasks-dir {REPO_ROOT / 'tasks'} --environment local"
        ),
    }
    env.pop("SKILLSBENCH_WORKER_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats.container_entry", probe],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["url"] == f"http://127.0.0.1:{port}"
    assert result["health"]["status"] == "ok"
    # The service exited, so the supervisor stopped the worker: nothing listens any more.
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0


def test_embedded_worker_that_cannot_start_fails_the_container(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "SKILLSBENCH_SERVICE_COMMAND": f"{sys.executable} -c",
        "SKILLSBENCH_RUN_AS": "root",
        "SKILLSBENCH_EMBEDDED_WORKER": "1",
        "SKILLSBENCH_EMBEDDED_WORKER_ARGS": f"--host 127.0.0.1 --port {free_port()} "
        f"--tasks-dir {tmp_path / 'missing'}",
    }
    done = subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats.container_entry", "print('never')"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "the embedded worker exited" in done.stderr
    assert "never" not in done.stdout


def test_the_embedded_worker_default_lives_in_code() -> None:
    from skillsbench_agentbeats.container_entry import wants_embedded_worker

    green = ["skillsbench-agentbeats", "green"]
    assert wants_embedded_worker({}, green) is True
    assert wants_embedded_worker({"SKILLSBENCH_EMBEDDED_WORKER": "0"}, green) is False
    assert wants_embedded_worker({}, ["skillsbench-agentbeats", "worker"]) is False
    assert wants_embedded_worker({"SKILLSBENCH_EMBEDDED_WORKER": "1"}, ["x"]) is True
