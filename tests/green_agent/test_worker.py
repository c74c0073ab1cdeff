"""The green agent driving a worker over HTTP: events, polling, token, timeout, cancel, restart,
public results, participant routing, concurrency, mock mode."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers import new_text_part
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Role,
    SendMessageRequest,
    TaskState,
)

from green_agent import results
from green_agent.adapters import adapter_from_settings
from green_agent.gateway import parse_parts, run_assessment
from green_agent.results import row_context
from green_agent.selection import Selection, select
from green_agent.server import build_app
from green_agent.settings import GreenSettings
from leaderboard.normalize import RowContext
from leaderboard.rows import Envelope
from skillsbench_agentbeats.in_process import serve_app
from tests.green_agent.fake_worker import FakeWorker
from tests.green_agent.support import (
    FIVE,
    PURPLE_URL,
    agent_parts,
    request_text,
    stream_events,
    worker_kind,
    worker_under_test,
)
from tests.support import free_port, wait_for_http

__all__ = ["worker_kind"]  # the fixture: fake and real worker

HERE = Path(__file__).parent


@asynccontextmanager
async def fake_worker(worker: FakeWorker) -> AsyncIterator[str]:
    async with serve_app(lambda url: worker.app()) as url:
        yield url


@asynccontextmanager
async def green(settings: GreenSettings) -> AsyncIterator[str]:
    async with serve_app(
        lambda url: build_app(url, settings, adapter_from_settings(settings))
    ) as url:
        yield url


async def assess(green_url: str, config: dict[str, Any], agent: str = PURPLE_URL) -> Envelope:
    export = await run_assessment(green_url, {"agent": agent}, config)
    assert export["status"] == "completed", export
    assert len(export["results"]) == 1
    return Envelope.model_validate(export["results"][0])


async def assess_fails(green_url: str, config: dict[str, Any], agent: str = PURPLE_URL) -> str:
    """The assessment scored nothing because of the worker: the A2A task ends ``failed`` (no
    result to publish) and its last status says why. The reason is returned."""
    export = await run_assessment(green_url, {"agent": agent}, config)
    assert export["status"] == "failed", export
    assert export["results"] == []
    error: str = export["error"]
    assert error.startswith("Assessment failed: "), error
    assert "no trial was scored" in error and "measures the worker, not the agent" in error
    return error


async def test_rows_follow_the_event_stream_and_leave_only_public_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, worker_kind: str
) -> None:
    contexts: list[RowContext] = []

    def counted_row_context(selection: Selection) -> RowContext:
        contexts.append(row_context(selection))
        return contexts[-1]

    monkeypatch.setattr(results, "row_context", counted_row_context)
    async with (
        worker_under_test(worker_kind, tmp_path, config=FIVE) as worker,
        green(GreenSettings(worker_url=worker.url)) as gurl,
    ):
        events = await stream_events(gurl, request_text(FIVE, worker.purple_url))
    parts = agent_parts(events)
    found = parse_parts(parts)
    assert len(found) == 1
    envelope = Envelope.model_validate(found[0])
    assert [r.score_eligible for r in envelope.results] == [True] * 5, envelope.results
    assert [r.passed for r in envelope.results] == worker.expected_passed(5)
    text = json.dumps(found[0])
    for secret in ("_private", "local://", "s3://", "/var/jobs", "worker_log_path", "revision"):
        assert secret not in text
    assert all(r.artifact_refs == [] for r in envelope.results)
    summaries = [p.text for p in parts if p.WhichOneof("content") == "text"]
    assert sum("finished: task" in s for s in summaries) == 5
    (request,) = worker.requests()
    assert request["participants"] == {"agent": {"url": worker.purple_url, "sandbox_url": None}}
    assert [t["task_id"] for t in request["tasks"]] == [r.task_id for r in envelope.results]
    assert len(contexts) == 1  # built once per assessment, not once per streamed row


async def test_polling_fallback_with_bearer_token(tmp_path: Path) -> None:
    worker = FakeWorker(tmp_path, trial_sec=0.05, events=False, token="s3cret")
    async with fake_worker(worker) as wurl:
        settings = GreenSettings(
            worker_url=wurl, worker_token="s3cret", worker_poll_interval_sec=0.05
        )
        async with green(settings) as gurl:
            envelope = await assess(gurl, FIVE)
    assert [r.score_eligible for r in envelope.results] == [True] * 5


async def test_a_worker_refusing_the_token_fails_the_assessment(
    tmp_path: Path, worker_kind: str
) -> None:
    async with (
        worker_under_test(worker_kind, tmp_path, config=FIVE, token="s3cret") as worker,
        green(GreenSettings(worker_url=worker.url, worker_token="wrong")) as gurl,
    ):
        error = await assess_fails(gurl, FIVE, worker.purple_url)
    assert "worker refused the run: HTTP 401" in error
    assert "(5 worker_error)" in error
    assert worker.requests() == []


async def test_the_right_bearer_token_is_accepted(tmp_path: Path, worker_kind: str) -> None:
    async with (
        worker_under_test(worker_kind, tmp_path, config=FIVE, token="s3cret") as worker,
        green(GreenSettings(worker_url=worker.url, worker_token="s3cret")) as gurl,
    ):
        envelope = await assess(gurl, FIVE, worker.purple_url)
    assert [r.score_eligible for r in envelope.results] == [True] * 5, envelope.results
    assert len(worker.requests()) == 1


async def test_a_failed_run_keeps_its_rows_and_marks_the_rest_worker_error(
    tmp_path: Path,
) -> None:
    worker = FakeWorker(tmp_path, trial_sec=0.02, fail_after=2)
    async with fake_worker(worker) as wurl, green(GreenSettings(worker_url=wurl)) as gurl:
        envelope = await assess(gurl, FIVE)
    assert [r.score_eligible for r in envelope.results] == [True, True, False, False, False]
    assert {r.infra_failure_type for r in envelope.results[2:]} == {"worker_error"}


async def test_worker_that_starts_late_is_retried(tmp_path: Path) -> None:
    port = free_port()
    settings = GreenSettings(worker_url=f"http://127.0.0.1:{port}", worker_retry_sec=30)
    proc: subprocess.Popen[bytes] | None = None
    try:
        async with green(settings) as gurl:
            assessment = asyncio.create_task(assess(gurl, FIVE))
            await asyncio.sleep(1.0)
            assert not assessment.done()
            proc = _start_worker_process(port, tmp_path / "state", 0.02)
            envelope = await asyncio.wait_for(assessment, timeout=60)
    finally:
        if proc is not None:
            proc.kill()
            proc.wait(timeout=10)
    assert all(r.score_eligible for r in envelope.results)


async def test_an_unreachable_worker_fails_the_assessment(tmp_path: Path) -> None:
    """Nothing listens at the worker URL: retried for worker_retry_sec, then failed, not a
    completed assessment of worker_error rows."""
    settings = GreenSettings(worker_url=f"http://127.0.0.1:{free_port()}", worker_retry_sec=1)
    async with green(settings) as gurl:
        error = await asyncio.wait_for(assess_fails(gurl, FIVE), 60)
    assert "unreachable for 1s" in error and "ConnectError" in error


def _broken_worker(url: str) -> Any:
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    async def create(request: Any) -> Response:
        return JSONResponse({"surprise": True}, status_code=201)

    return Starlette(routes=[Route("/runs", create, methods=["POST"])])


async def test_a_broken_worker_answer_fails_the_assessment_in_one_line() -> None:
    async with serve_app(_broken_worker) as wurl, green(GreenSettings(worker_url=wurl)) as gurl:
        error = await assess_fails(gurl, FIVE)
    assert "the worker's answer to the run request is unreadable" in error
    assert "Traceback" not in error


def _unreadable_status_worker(url: str) -> Any:
    """Accepts the run, has no event stream, then answers GET /runs/{id} with nonsense."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    async def create(request: Any) -> Response:
        return JSONResponse({"run_id": "r1", "status": "queued"}, status_code=201)

    async def status(request: Any) -> Response:
        return JSONResponse({"surprise": True})

    async def events(request: Any) -> Response:
        return JSONResponse({"error": "not here"}, status_code=404)

    return Starlette(
        routes=[
            Route("/runs", create, methods=["POST"]),
            Route("/runs/{run_id}", status, methods=["GET"]),
            Route("/runs/{run_id}/events", events, methods=["GET"]),
        ]
    )


async def test_a_run_request_that_may_have_arrived_is_not_sent_twice() -> None:
    posts: list[int] = []

    def gateway_timeout_worker(url: str) -> Any:
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse, Response
        from starlette.routing import Route

        async def create(request: Any) -> Response:
            posts.append(1)  # a proxy in front answered 504: the worker may have made the run
            return JSONResponse({"error": "upstream timeout"}, status_code=504)

        return Starlette(routes=[Route("/runs", create, methods=["POST"])])

    async with (
        serve_app(gateway_timeout_worker) as wurl,
        green(GreenSettings(worker_url=wurl, worker_retry_sec=5.0)) as gurl,
    ):
        error = await assess_fails(gurl, FIVE)
    assert len(posts) == 1
    assert "may have received POST /runs but did not answer it" in error


async def test_an_unreadable_status_ends_the_run_at_once_as_failed() -> None:
    # The timeout is long: only ending the run at the bad answer makes this test finish.
    async with (
        serve_app(_unreadable_status_worker) as wurl,
        green(
            GreenSettings(worker_url=wurl, worker_timeout_sec=600.0, worker_poll_interval_sec=0.05)
        ) as gurl,
    ):
        error = await asyncio.wait_for(assess_fails(gurl, FIVE), 60)
    assert "unreadable worker answer" in error and "(5 worker_error)" in error


async def test_a_stream_that_breaks_after_a_healthy_stretch_is_resumed(tmp_path: Path) -> None:
    # retry_sec is shorter than each healthy stretch of the stream: the adapter must measure
    # the retry window from the last thing it heard, not from when the stream was opened.
    worker = FakeWorker(tmp_path, trial_sec=0.15, drop_stream_after=0.4)
    async with fake_worker(worker) as wurl:
        settings = GreenSettings(worker_url=wurl, worker_retry_sec=0.3)
        async with green(settings) as gurl:
            envelope = await assess(gurl, FIVE)
    assert worker.dropped_streams >= 1
    assert all(r.score_eligible for r in envelope.results)
    assert len({r.trial_id for r in envelope.results}) == 5


async def test_slot_url_is_the_fallback(tmp_path: Path, worker_kind: str) -> None:
    async with (
        worker_under_test(worker_kind, tmp_path, config=FIVE, trial_sec=0.01) as worker,
        green(GreenSettings(worker_slot_url=worker.url)) as gurl,
    ):
        envelope = await assess(gurl, FIVE, worker.purple_url)
    assert len(worker.requests()) == 1
    assert all(r.score_eligible for r in envelope.results)


async def test_worker_timeout_cancels_the_run_and_marks_unfinished_trials(tmp_path: Path) -> None:
    worker = FakeWorker(tmp_path, trial_sec=0.4)
    async with (
        fake_worker(worker) as wurl,
        green(GreenSettings(worker_url=wurl, worker_timeout_sec=0.6)) as gurl,
    ):
        envelope = await assess(gurl, FIVE)
    eligible = [r for r in envelope.results if r.score_eligible]
    timed_out = [r for r in envelope.results if r.infra_failure_type == "worker_timeout"]
    assert len(eligible) == 1
    assert len(timed_out) == 4
    assert {r.task_id for r in envelope.results} == {
        "azure-bgp-oscillation-route-leak",
        "exam-block-sequencing",
        "latex-formula-extraction",
        "python-scala-translation",
        "travel-planning",
    }
    (run,) = worker.runs()
    assert run["cancelled_at"] is not None


async def test_heartbeat_updates_while_no_trial_finishes(tmp_path: Path) -> None:
    worker = FakeWorker(tmp_path, trial_sec=0.6)
    config = {"task_set": "smoke", "tasks": "all"}
    async with (
        fake_worker(worker) as wurl,
        green(GreenSettings(worker_url=wurl, heartbeat_sec=0.1)) as gurl,
    ):
        events = await stream_events(gurl, request_text(config))
    texts = [p.text for p in agent_parts(events) if p.WhichOneof("content") == "text"]
    still = [t for t in texts if t.startswith("Still running")]
    assert len(still) >= 3
    # The fake worker, like a worker before trial phases, does not say what its trials do.
    assert all("(a running trial is the participant at work" in t for t in still), still
    assert len(parse_parts(agent_parts(events))) == 1


async def test_the_heartbeat_says_what_each_running_trial_does(tmp_path: Path) -> None:
    """A real worker (local sandbox) whose verifiers never end but the first task's: the
    heartbeat names each running trial and its phase, not a bare "Still running"."""
    async with (
        worker_under_test("real", tmp_path, config=FIVE, only_first_ends=True) as worker,
        green(GreenSettings(worker_url=worker.url, heartbeat_sec=0.2)) as gurl,
    ):
        said = await _heartbeats_until(
            gurl,
            worker.purple_url,
            lambda line: " 1 of 5 " in line and len(VERIFYING.findall(line)) == 2,
        )
        await worker.wait_cancelled()
    # The first trial ended; the two now running (the worker's concurrency) wait on their
    # verifiers, and the heartbeat says so, trial by trial.
    line = said[-1]
    assert re.fullmatch(r"Still running: 1 of 5 trial\(s\) finished after \d+ s; now .*\.", line)
    first_task = select(FIVE).tasks[0].task_id
    assert all(not key.startswith(first_task) for key in VERIFYING.findall(line))
    assert "(a running trial is the participant" not in line
    # Before, each was said in the phases it went through.
    assert any(" agent running for " in text for text in said), said


VERIFYING = re.compile(r"(\S+#0) verifying for \d+ s")


async def _heartbeats_until(
    green_url: str, purple_url: str, wanted: Callable[[str], bool]
) -> list[str]:
    """Assess ``FIVE``; the heartbeats until one is ``wanted``, then cancel the assessment."""
    said: list[str] = []
    async with httpx.AsyncClient(timeout=60) as http, asyncio.timeout(120):
        client = await create_client(
            green_url, client_config=ClientConfig(streaming=True, httpx_client=http)
        )
        message = Message(
            role=Role.ROLE_USER,
            message_id=uuid.uuid4().hex,
            parts=[new_text_part(request_text(FIVE, purple_url))],
        )
        async with client:
            task_id = ""
            async for event in client.send_message(SendMessageRequest(message=message)):
                if event.WhichOneof("payload") == "task":
                    task_id = event.task.id
                texts = [p.text for p in agent_parts([event]) if p.WhichOneof("content") == "text"]
                said += [t for t in texts if t.startswith("Still running")]
                if said and wanted(said[-1]):
                    break
            await client.cancel_task(CancelTaskRequest(id=task_id))
    return said


async def _send_and_cancel_1x(green_url: str, purple_url: str = PURPLE_URL) -> tuple[int, int]:
    async with httpx.AsyncClient(timeout=60) as http:
        client = await create_client(
            green_url, client_config=ClientConfig(streaming=True, httpx_client=http)
        )
        message = Message(
            role=Role.ROLE_USER,
            message_id=uuid.uuid4().hex,
            parts=[new_text_part(request_text(FIVE, purple_url))],
        )
        async with client:
            task_id = ""
            async for event in client.send_message(SendMessageRequest(message=message)):
                kind = event.WhichOneof("payload")
                if kind == "task":
                    task_id = event.task.id
                if kind == "status_update" and "finished: task" in str(event.status_update):
                    break
            cancelled = await client.cancel_task(CancelTaskRequest(id=task_id))
            got = await client.get_task(GetTaskRequest(id=task_id))
            return cancelled.status.state, got.status.state


async def test_cancel_task_1x_cancels_the_worker_run(tmp_path: Path, worker_kind: str) -> None:
    async with (
        worker_under_test(
            worker_kind, tmp_path, config=FIVE, trial_sec=0.3, only_first_ends=True
        ) as worker,
        green(GreenSettings(worker_url=worker.url)) as gurl,
    ):
        returned, stored = await _send_and_cancel_1x(gurl, worker.purple_url)
        await worker.wait_cancelled()
    assert returned == TaskState.TASK_STATE_CANCELED
    assert stored == TaskState.TASK_STATE_CANCELED
    assert worker.cancelled() == [True]
    if worker.fake is not None:
        (run,) = worker.fake.runs()
        assert run["cancelled_at"] - run["created"] < 1.5  # well before the 5 trials (1.5 s) end


async def test_tasks_cancel_03_cancels_the_worker_run(
    tmp_path: Path, a2a03_python: Path, worker_kind: str
) -> None:
    async with (
        worker_under_test(
            worker_kind, tmp_path, config=FIVE, trial_sec=0.5, only_first_ends=True
        ) as worker,
        green(GreenSettings(worker_url=worker.url)) as gurl,
    ):
        proc = await asyncio.create_subprocess_exec(
            str(a2a03_python),
            str(HERE / "a2a03_gateway_client.py"),
            gurl,
            request_text(FIVE, worker.purple_url),
            "--cancel-after-first-working",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
        await worker.wait_cancelled()
    assert proc.returncode == 0, err.decode()[-2000:]
    report = json.loads(out.decode().strip().splitlines()[-1])
    assert report["cancel_returned"] == "canceled"
    assert report["final_state"] == "canceled"
    assert worker.cancelled() == [True]


def _worker_log(state: Path) -> Path:
    return state.parent / "fake-worker.log"


def _start_worker_process(port: int, state: Path, trial_sec: float) -> subprocess.Popen[bytes]:
    state.parent.mkdir(parents=True, exist_ok=True)
    with open(_worker_log(state), "ab") as sink:
        return subprocess.Popen(
            [
                sys.executable,
                str(HERE / "fake_worker.py"),
                "--port",
                str(port),
                "--state-dir",
                str(state),
                "--trial-sec",
                str(trial_sec),
            ],
            env={**os.environ, "PYTHONPATH": str(HERE.parent.parent)},
            stdout=sink,
            stderr=subprocess.STDOUT,
        )


def _wait_healthy(port: int, proc: subprocess.Popen[bytes], state: Path) -> None:
    wait_for_http(
        f"http://127.0.0.1:{port}/healthz", proc, what="fake worker", log=_worker_log(state)
    )


async def test_worker_killed_and_restarted_mid_run(tmp_path: Path) -> None:
    port = free_port()
    state = tmp_path / "state"
    proc = _start_worker_process(port, state, 0.5)
    try:
        await asyncio.to_thread(_wait_healthy, port, proc, state)
        settings = GreenSettings(worker_url=f"http://127.0.0.1:{port}", worker_retry_sec=30)
        async with green(settings) as gurl:
            assessment = asyncio.create_task(assess(gurl, FIVE))
            worker = FakeWorker(state, trial_sec=0.5)
            while not worker.runs() or len(worker.status(worker.runs()[0]).rows) < 1:
                await asyncio.sleep(0.05)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
            await asyncio.sleep(0.6)
            proc = _start_worker_process(port, state, 0.5)
            envelope = await asyncio.wait_for(assessment, timeout=60)
    finally:
        proc.kill()
        proc.wait(timeout=10)
    trial_ids = [r.trial_id for r in envelope.results]
    assert len(trial_ids) == 5 == len(set(trial_ids))
    assert all(r.score_eligible for r in envelope.results)
    assert len(worker.runs()) == 1


async def test_the_heartbeat_says_a_dead_worker_is_being_retried(tmp_path: Path) -> None:
    """The worker process dies mid-run: while the green agent retries it, its heartbeat says so
    (not "Still running"); when the retries run out, nothing was scored and the task fails."""
    port = free_port()
    state = tmp_path / "state"
    proc = _start_worker_process(port, state, 60.0)  # no trial ends before the kill
    try:
        await asyncio.to_thread(_wait_healthy, port, proc, state)
        settings = GreenSettings(
            worker_url=f"http://127.0.0.1:{port}", worker_retry_sec=3, heartbeat_sec=0.2
        )
        async with green(settings) as gurl:
            events_task = asyncio.create_task(stream_events(gurl, request_text(FIVE)))
            worker = FakeWorker(state, trial_sec=60.0)
            async with asyncio.timeout(60):
                while not worker.runs():
                    await asyncio.sleep(0.05)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
            events = await asyncio.wait_for(events_task, timeout=60)
    finally:
        proc.kill()
        proc.wait(timeout=10)
    texts = [p.text for p in agent_parts(events) if p.WhichOneof("content") == "text"]
    after_start = texts[next(i for i, t in enumerate(texts) if t.startswith("Worker run")) :]
    retrying = [t for t in after_start if f"127.0.0.1:{port} is not answering" in t]
    assert retrying, texts
    assert all("retrying for up to 3 s" in t for t in retrying)
    assert not any(
        t.startswith("Still running") for t in after_start[after_start.index(retrying[0]) :]
    )
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_FAILED
    assert "(5 worker_error)" in texts[-1]


async def test_loopback_participant_is_rebased_onto_the_proxy(tmp_path: Path) -> None:
    worker = FakeWorker(tmp_path, trial_sec=0.01)
    settings_kw: dict[str, Any] = {
        "proxy_url": "http://10.1.2.3:8080/",
        "sandbox_participant_proxy_url": "http://172.17.0.1:18081",
    }
    async with (
        fake_worker(worker) as wurl,
        green(GreenSettings(worker_url=wurl, **settings_kw)) as gurl,
    ):
        envelope = await assess(gurl, FIVE, agent="http://127.0.0.1:8080/agent")
        await assess(gurl, FIVE, agent="https://purple.example.org/a2a")
    first, second = sorted(worker.runs(), key=lambda run: run["created"])
    assert first["request"]["participants"]["agent"] == {
        "url": "http://10.1.2.3:8080/agent",
        "sandbox_url": "http://172.17.0.1:18081/agent",
    }
    assert second["request"]["participants"]["agent"] == {
        "url": "https://purple.example.org/a2a",
        "sandbox_url": None,
    }
    # the envelope echoes the URL received, not the rebased one
    assert envelope.participants == {"agent": "http://127.0.0.1:8080/agent"}


async def test_concurrent_assessments_all_complete(tmp_path: Path, worker_kind: str) -> None:
    count = 20 if worker_kind == "fake" else 2  # the real worker runs every trial for real
    async with (
        worker_under_test(worker_kind, tmp_path, config=FIVE, trial_sec=0.02) as worker,
        green(GreenSettings(worker_url=worker.url)) as gurl,
    ):
        envelopes = await asyncio.gather(
            *(assess(gurl, FIVE, worker.purple_url) for _ in range(count))
        )
    assert len(envelopes) == count
    assert all(len(e.results) == 5 and all(r.score_eligible for r in e.results) for e in envelopes)
    assert len(worker.requests()) == count
    trial_ids = {r.trial_id for e in envelopes for r in e.results}
    assert len(trial_ids) == 5 * count


async def test_mock_mode_rows_are_never_score_eligible(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    async with green(GreenSettings()) as gurl:
        envelope = await assess(gurl, {**FIVE, "num_instances": 2})
    assert len(envelope.results) == 10
    assert not any(r.score_eligible or r.passed for r in envelope.results)
    assert {r.infra_failure_type for r in envelope.results} == {"worker_error"}
    assert all("__mock__" in r.trial_id for r in envelope.results)
    assert any("MOCK" in record.getMessage() for record in caplog.records)
