"""The worker's HTTP API over real loopback: bad requests get a 4xx naming the problem, never a
500; token auth on and off; non-loopback binds need a token."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.worker.support import make_engine, make_task, run_payload, serve
from worker.core.failures import RetryPolicy
from worker.runs.engine import Engine
from worker.service.app import create_app

TOKEN = "s3cret-token"


def _engine(tmp_path: Path) -> Engine:
    tasks = tmp_path / "tasks"
    tasks.mkdir(exist_ok=True)
    if not (tasks / "answer-42").exists():
        make_task(tasks, "answer-42")
    jobs = tmp_path / "jobs"
    return make_engine(jobs, tasks, concurrency=1, retry=RetryPolicy())


@pytest.fixture
async def base_url(tmp_path: Path) -> AsyncIterator[str]:
    async with serve(create_app(_engine(tmp_path))) as url:
        yield url


@pytest.fixture
async def client(base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base_url, timeout=10) as http:
        yield http


BAD_BODIES: list[tuple[Any, str]] = [
    ({"task_set": "x"}, "config"),
    (run_payload([]), "tasks"),
    ({**run_payload(["answer-42"]), "task_set_digest": "sha256:nothex"}, "task_set_digest"),
    ({**run_payload(["answer-42"]), "surprise": 1}, "surprise"),
    ({**run_payload(["answer-42"]), "tasks": [{"task_id": ""}]}, "tasks[0].task_id"),
    ({**run_payload(["answer-42"]), "tasks": "answer-42"}, "tasks"),
    ({**run_payload(["answer-42", "answer-42"])}, "tasks"),
    ({**run_payload(["answer-42"]), "participants": {"agent": {"url": ""}}}, "participants"),
    (run_payload(["answer-42"], agent="no-such-agent"), "agent"),
    (run_payload(["answer-42"], agent=None), "agent"),
    (run_payload(["answer-42"], agent="script:/no/such/file.sh"), "agent"),
    ([1, 2], "(body)"),
]


@pytest.mark.parametrize(("body", "field"), BAD_BODIES)
async def test_invalid_requests_get_400_naming_the_field(
    client: httpx.AsyncClient, body: Any, field: str
) -> None:
    response = await client.post("/runs", json=body)
    assert response.status_code == 400, response.text
    doc = response.json()
    assert doc["error"] == "invalid_request"
    assert doc["field"].startswith(field), doc
    assert doc["detail"]


async def test_not_json_gets_400(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/runs", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400 and response.json()["error"] == "invalid_json"


async def test_an_oversized_body_gets_413(client: httpx.AsyncClient) -> None:
    from worker.service.app import MAX_BODY_BYTES

    async def chunks() -> AsyncIterator[bytes]:  # streamed: no Content-Length to trust
        for _ in range(MAX_BODY_BYTES // (1 << 20) + 2):
            yield b" " * (1 << 20)

    response = await client.post("/runs", content=chunks())
    assert response.status_code == 413
    assert response.json()["error"] == "too_large"


async def test_unknown_task_gets_422(client: httpx.AsyncClient) -> None:
    response = await client.post("/runs", json=run_payload(["answer-42", "no-such-task"]))
    assert response.status_code == 422
    assert "no-such-task" in response.json()["detail"]


async def test_unknown_run_and_route_are_json_404(client: httpx.AsyncClient) -> None:
    for method, path in [
        ("GET", "/runs/run-nope"),
        ("GET", "/runs/run-nope/events"),
        ("POST", "/runs/run-nope/cancel"),
        ("GET", "/nowhere"),
    ]:
        response = await client.request(method, path)
        assert response.status_code == 404, path
        assert response.json()["error"] in ("unknown_run", "not_found")
    response = await client.delete("/runs")
    assert response.status_code == 405 and response.json()["error"] == "method_not_allowed"


async def test_healthz(client: httpx.AsyncClient) -> None:
    response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
near_valid = st.fixed_dictionaries(
    {},
    optional={
        "config": json_values,
        "task_set": json_values,
        "task_set_digest": json_values,
        "tasks": st.lists(
            st.fixed_dictionaries({"task_id": json_values}, optional={"tags": json_values}),
            max_size=2,
        ),
        "agent": json_values,
        "participants": json_values,
    },
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=json_values | near_valid)
def test_fuzzed_bodies_never_500(tmp_path: Path, body: Any) -> None:
    import asyncio

    async def post() -> int:
        transport = httpx.ASGITransport(app=create_app(_engine(tmp_path), manage_engine=False))
        async with httpx.AsyncClient(transport=transport, base_url="http://worker") as http:
            return (await http.post("/runs", json=body)).status_code

    assert asyncio.run(post()) in (400, 422)


async def test_token_required_everywhere_but_healthz(tmp_path: Path) -> None:
    async with (
        serve(create_app(_engine(tmp_path), token=TOKEN)) as url,
        httpx.AsyncClient(base_url=url, timeout=10) as http,
    ):
        assert (await http.get("/healthz")).status_code == 200
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
            for method, path in [
                ("GET", "/runs/x"),
                ("POST", "/runs"),
                ("POST", "/runs/x/cancel"),
            ]:
                response = await http.request(method, path, headers=headers)
                assert response.status_code == 401, (method, path, headers)
                assert response.json()["error"] == "unauthorized"
        good = {"Authorization": f"Bearer {TOKEN}"}
        assert (await http.get("/runs/x", headers=good)).status_code == 404
        response = await http.post("/runs", json={}, headers=good)
        assert response.status_code == 400


async def test_no_token_means_open(client: httpx.AsyncClient) -> None:
    assert (await client.get("/runs/x")).status_code == 404


def _refused_start(tmp_path: Path, env: dict[str, str], *args: str) -> str:
    """``worker`` started over ``tmp_path`` with ``args``: it exits 2 without a traceback; what it
    said."""
    folders = ["--jobs-dir", str(tmp_path / "jobs"), "--tasks-dir", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, "-m", "worker", *args, "--port", "1", *folders],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr, done.stderr
    return done.stderr


def test_non_loopback_bind_needs_a_token(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SKILLSBENCH_WORKER_TOKEN"}
    assert "SKILLSBENCH_WORKER_TOKEN" in _refused_start(tmp_path, env, "--host", "0.0.0.0")


def test_durable_proof_required_but_missing_refuses_to_start(tmp_path: Path) -> None:
    env = {**os.environ, "SKILLSBENCH_REQUIRE_DURABLE_PRIVATE_PROOF": "1"}
    env.pop("SKILLSBENCH_PRIVATE_PROOF_URI_PREFIX", None)
    assert "not durable" in _refused_start(tmp_path, env)


@pytest.mark.parametrize(
    ("host", "listen", "destination"),
    [
        ("127.0.0.1", True, True),
        ("127.8.9.10", True, True),
        ("::1", True, True),
        ("[::1]", True, True),
        ("localhost", True, True),
        ("LOCALHOST", True, True),
        ("localhost.localdomain", True, True),
        ("ip6-localhost", True, True),
        ("worker.localhost", True, True),
        ("0.0.0.0", False, True),  # every interface when listening; this machine as a destination
        ("::", False, True),
        ("10.0.0.5", False, False),
        ("example.org", False, False),
        ("", False, False),
    ],
)
def test_one_loopback_rule_for_listening_and_routing(
    host: str, listen: bool, destination: bool
) -> None:
    """The worker's token-less bind and the green agent's participant routing share one host list."""
    from green_agent.routing import is_loopback_url
    from worker.api import is_loopback_host

    assert is_loopback_host(host) is listen
    assert is_loopback_host(host, unspecified=True) is destination
    if host:
        netloc = f"[{host.strip('[]')}]" if ":" in host else host
        assert is_loopback_url(f"http://{netloc}:9019/") is destination


def test_ctrl_c_with_open_event_streams_is_a_clean_shutdown(tmp_path: Path) -> None:
    """Issue #32: Ctrl-C on a worker with a client watching a run's events waited out the
    graceful timeout, then cancelled the stream with a traceback. Now the streams end (a client
    reconnects or polls) and the worker stops without one, exit 130."""
    import signal
    import threading

    from tests.support import free_port, wait_for_http
    from tests.worker.support import script

    tasks = tmp_path / "tasks"
    make_task(tasks, "answer-42")
    agent = script(tmp_path, "slow", "sleep 300\n")  # still running when the worker is stopped
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if k != "SKILLSBENCH_WORKER_TOKEN"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "skillsbench_agentbeats", "worker", "--port", str(port),
         "--jobs-dir", str(tmp_path / "jobs"), "--tasks-dir", str(tasks),
         "--script-dir", str(tmp_path), "--concurrency", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        wait_for_http(f"{url}/healthz", proc, what="worker")
        created = httpx.post(f"{url}/runs", json=run_payload(["answer-42"], agent=agent))
        assert created.status_code == 201, created.text
        events_url = f"{url}/runs/{created.json()['run_id']}/events"
        opened = [threading.Event(), threading.Event()]
        ends: list[str] = []

        def watch(started: threading.Event) -> None:
            try:
                with httpx.stream("GET", events_url, timeout=httpx.Timeout(10, read=None)) as r:
                    for line in r.iter_lines():
                        if line.startswith("event: "):
                            started.set()
                ends.append("ended")
            except httpx.HTTPError as exc:
                ends.append(f"{type(exc).__name__}: {exc}")

        watchers = [threading.Thread(target=watch, args=(e,), daemon=True) for e in opened]
        for watcher in watchers:
            watcher.start()
        assert all(e.wait(60) for e in opened), "the event streams never sent their first event"
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for watcher in watchers:
        watcher.join(30)
    assert "Traceback" not in err and "ERROR" not in err, err
    assert proc.returncode == 130, err
    assert ends == ["ended", "ended"], ends
