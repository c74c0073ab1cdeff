"""Admission at the worker's door: every field a run carries into its public rows is checked with
the public row's own rules, so an accepted run can always finish; bad input gets a 400 naming the
field (never a 500), and the server keeps serving. Script agents come only from the configured
folder, with one answer for every refusal."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import click
import httpx
import pytest

from task_sets.config import MAX_NUM_INSTANCES
from tests.worker.support import make_engine, make_task, run_payload, serve
from worker.api import RunRequest, is_loopback_host
from worker.core.failures import RetryPolicy
from worker.runs.admission import SCRIPT_NOT_ALLOWED, field_path
from worker.runs.engine import Engine
from worker.runs.records import RunRecord, TrialRecord, trial_key
from worker.runs.store import RunStore
from worker.service.app import create_app
from worker.service.cli import listen_host
from worker.trial_record.public_row import MAX_TASK_ID_LENGTH

TASK = "answer-42"


def _engine(root: Path) -> Engine:
    tasks = root / "tasks"
    if not (tasks / TASK).exists():
        tasks.mkdir(parents=True, exist_ok=True)
        make_task(tasks, TASK)
    jobs = root / "jobs"
    return make_engine(jobs, tasks, concurrency=1, retry=RetryPolicy())


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    async with (
        serve(create_app(_engine(tmp_path), script_dir=scripts)) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        yield http


def _with_task(**fields: Any) -> dict[str, Any]:
    payload = run_payload([TASK])
    payload["tasks"][0].update(fields)
    return payload


def _with_config(**config: Any) -> dict[str, Any]:
    payload = run_payload([TASK])
    payload["config"].update(config)
    return payload


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"x": value}
    return value


BAD: list[tuple[str, Any, str]] = [
    ("task set path", {**run_payload([TASK]), "task_set": "../../etc"}, "task_set"),
    ("html category", _with_task(category="<b>bold</b>"), "tasks[0].category"),
    ("url difficulty", _with_task(difficulty="http://evil.example/x"), "tasks[0].difficulty"),
    ("path tag", _with_task(tags=["fine", "../../x"]), "tasks[0].tags[1]"),
    ("secret tag", _with_task(tags=["sk-" + "a1" * 12]), "tasks[0].tags[0]"),
    ("bad task digest", _with_task(task_digest="md5:abc"), "tasks[0].task_digest"),
    ("path task id", _with_task(task_id="../etc"), "tasks[0].task_id"),
    ("5000-char task id", _with_task(task_id="a" * 5000), "tasks[0].task_id"),
    (
        "task id one too long",
        _with_task(task_id="a" * (MAX_TASK_ID_LENGTH + 1)),
        "tasks[0].task_id",
    ),
    ("20,000 instances", _with_config(num_instances=20000), "config.num_instances"),
    ("one too many", _with_config(num_instances=MAX_NUM_INSTANCES + 1), "config.num_instances"),
    ("negative instances", _with_config(num_instances=-5), "config.num_instances"),
    ("zero instances", _with_config(num_instances=0), "config.num_instances"),
    ("text instances", _with_config(num_instances="3"), "config.num_instances"),
    ("bool instances", _with_config(num_instances=True), "config.num_instances"),
    (
        "1 MiB participant url",
        {
            **run_payload([TASK]),
            "participants": {"agent": {"url": "http://a.example/" + "x" * (1 << 20)}},
        },
        "participants.agent.url",
    ),
    (
        "not http",
        {**run_payload([TASK]), "participants": {"agent": {"url": "file:///etc/passwd"}}},
        "participants.agent.url",
    ),
    ("deep config", _with_config(extra=_nested(200)), "(body)"),
    ("script outside the folder", run_payload([TASK], agent="script:/etc/hostname"), "agent"),
]


@pytest.mark.parametrize(("body", "field"), [(b, f) for _, b, f in BAD], ids=[n for n, _, _ in BAD])
async def test_bad_runs_get_400_naming_the_field_and_the_server_goes_on(
    client: httpx.AsyncClient, body: Any, field: str
) -> None:
    response = await client.post("/runs", json=body)
    assert response.status_code == 400, response.text
    doc = response.json()
    assert doc["error"] == "invalid_request"
    assert doc["field"] == field, doc
    assert doc["detail"].startswith(field)
    assert len(response.text) < 2000  # the answer does not echo a huge value back
    assert (await client.post("/runs", json=run_payload([TASK]))).status_code == 201


@pytest.mark.parametrize("depth", [100, 100_000])
async def test_a_deeply_nested_body_gets_400(client: httpx.AsyncClient, depth: int) -> None:
    response = await client.post(
        "/runs", content=b"[" * depth + b"]" * depth, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400, response.text
    assert response.json()["field"] == "(body)"
    assert (await client.post("/runs", json=run_payload([TASK]))).status_code == 201


async def test_longest_allowed_task_id_runs_to_a_row(tmp_path: Path) -> None:
    """The longest task id the door lets in still makes a publishable trial id."""
    task_id = "t" * MAX_TASK_ID_LENGTH
    engine = _engine(tmp_path)
    make_task(tmp_path / "tasks", task_id)
    async with (
        serve(create_app(engine)) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as http,
    ):
        response = await http.post("/runs", json=run_payload([task_id]))
        assert response.status_code == 201, response.text
        run_id = response.json()["run_id"]
        status = await engine.wait(run_id)
        assert status.status == "completed" and len(status.rows()) == 1


async def test_script_agents_get_one_answer_whether_the_file_exists_or_not(
    tmp_path: Path, client: httpx.AsyncClient
) -> None:
    scripts = tmp_path / "scripts"
    outside = tmp_path / "outside.sh"
    outside.write_text("true\n")
    (scripts / "link.sh").symlink_to(outside)
    answers = set()
    for spec in (
        "script:/etc/hostname",
        "script:/no/such/file.sh",
        f"script:{outside}",
        f"script:{tmp_path / 'missing.sh'}",
        f"script:{scripts}/../outside.sh",
        f"script:{scripts / 'link.sh'}",
        f"script:{scripts}",
        "script:",
    ):
        response = await client.post("/runs", json=run_payload([TASK], agent=spec))
        assert response.status_code == 400, (spec, response.text)
        assert response.json()["field"] == "agent"
        answers.add(response.json()["detail"])
    assert answers == {f"agent: {SCRIPT_NOT_ALLOWED}"}
    inside = scripts / "ok.sh"
    inside.write_text("echo 42 > /root/answer.txt\n")
    response = await client.post("/runs", json=run_payload([TASK], agent=f"script:{inside}"))
    assert response.status_code == 201, response.text


async def test_without_a_script_folder_no_script_agent_is_accepted(tmp_path: Path) -> None:
    script = tmp_path / "ok.sh"
    script.write_text("true\n")
    async with (
        serve(create_app(_engine(tmp_path))) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        response = await http.post("/runs", json=run_payload([TASK], agent=f"script:{script}"))
        assert response.status_code == 400
        assert response.json() == {
            "error": "invalid_request",
            "detail": f"agent: {SCRIPT_NOT_ALLOWED}",
            "field": "agent",
        }


async def test_a_stored_run_whose_rows_cannot_be_built_ends_and_cancels_without_500(
    tmp_path: Path,
) -> None:
    """A run an older worker admitted (an HTML category) ends failed on restart, naming the
    field, and cancel answers 200."""
    engine = _engine(tmp_path)
    payload = _with_task(category="<b>bold</b>")
    request = RunRequest.model_validate(payload)  # the wire model alone lets it through
    key = trial_key(TASK, 0)
    run = RunRecord(
        run_id="run-old",
        created_at="2026-01-01T00:00:00Z",
        updated_at="2026-01-01T00:00:00Z",
        status="running",
        request=request,
        agent="nop",
        trials={key: TrialRecord(key=key, task_id=TASK)},
    )
    await RunStore(tmp_path / "jobs").save(run)
    async with (
        serve(create_app(engine)) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        status = (await http.get("/runs/run-old")).json()
        assert status["status"] == "failed"
        assert "tasks[0].category" in status["error"]
        response = await http.post("/runs/run-old/cancel")
        assert response.status_code == 200, response.text
        assert response.json()["status"] == "failed"
        assert (await http.post("/runs", json=run_payload([TASK]))).status_code == 201
    stored = json.loads((tmp_path / "jobs" / "runs" / "run-old" / "run.json").read_text())
    assert stored["status"] == "failed"


def test_field_paths_read_like_the_request() -> None:
    assert field_path(("tasks", 0, "tags", 2)) == "tasks[0].tags[2]"
    assert field_path(("config",)) == "config"
    assert field_path(()) == "(body)"


def test_bracketed_ipv6_listens_unbracketed_and_bad_hosts_are_refused() -> None:
    try:
        assert listen_host("[::1]", 0) == "::1"  # what the server binds, not "[::1]"
    except click.BadParameter as exc:  # a host without IPv6: refused, naming it
        assert "::1" in str(exc)
    assert listen_host(" 127.0.0.1 ", 0) == "127.0.0.1"
    assert not is_loopback_host("[::1")
    with pytest.raises(click.BadParameter, match="cannot listen"):
        listen_host("no-such-host.invalid", 0)


def test_the_cli_refuses_an_unusable_host_clearly(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "worker", "--host", "[::1", "--port", "1",
         "--jobs-dir", str(tmp_path / "jobs"), "--tasks-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--host" in done.stderr and "Traceback" not in done.stderr
