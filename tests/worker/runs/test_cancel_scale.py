"""Cancelling a big queued run: queued trials hold no task (only the trials that got a slot do),
every trial gets its ``worker_cancelled`` row, and the status and proof stay whole."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import httpx
import pytest

from tests.worker.support import make_engine, make_task, run_payload, script
from worker.core.failures import RetryPolicy
from worker.core.json_text import encode_document
from worker.service.app import create_app

TASKS = 20
INSTANCES = 100


async def test_cancel_of_2000_queued_trials(tmp_path: Path) -> None:
    tasks, jobs = tmp_path / "tasks", tmp_path / "jobs"
    tasks.mkdir()
    task_ids = [f"big-{i:02d}" for i in range(TASKS)]
    for task_id in task_ids:
        make_task(tasks, task_id)
    engine = make_engine(jobs, tasks, concurrency=1, retry=RetryPolicy())
    await engine.start()
    agent = script(tmp_path, "sleeper", "sleep 600\n")
    transport = httpx.ASGITransport(
        app=create_app(engine, manage_engine=False, script_dir=tmp_path)
    )
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://worker") as http:
            payload = run_payload(task_ids, agent=agent, num_instances=INSTANCES)
            response = await http.post("/runs", json=payload)
            assert response.status_code == 201, response.text
            run_id = response.json()["run_id"]
            for _ in range(600):
                status = (await http.get(f"/runs/{run_id}")).json()
                if status["progress"]["running"] == 1:
                    break
                await asyncio.sleep(0.05)
            assert status["progress"] == {
                "total": TASKS * INSTANCES, "finished": 0, "running": 1, "passed": 0
            }  # fmt: skip
            names = [t.get_name() for t in asyncio.all_tasks()]
            trial_tasks = [n for n in names if re.fullmatch(r"trial big-\d\d#\d+", n)]
            assert len(trial_tasks) == 1  # the queued 1,999 cost nothing until they get a slot
            response = await http.post(f"/runs/{run_id}/cancel")
            assert response.status_code == 200, response.text
            doc = response.json()
            again = (await http.get(f"/runs/{run_id}")).json()
    finally:
        await engine.close()
    assert doc["status"] == "cancelled" == again["status"]
    assert doc["rows"] == again["rows"]
    rows = doc["rows"]
    assert len(rows) == TASKS * INSTANCES
    assert len({r["trial_id"] for r in rows}) == len(rows)
    assert {r["infra_failure_type"] for r in rows} == {"worker_cancelled"}
    assert set(doc["tasks"].values()) == {"finished"}
    assert doc["progress"]["finished"] == TASKS * INSTANCES
    proof = json.loads((jobs / "private-proof" / run_id / "proof.json").read_text())
    assert proof["public_rows"] == rows
    refs = proof["private_proof_refs"]
    assert {r["trial_id"] for r in refs} == {r["trial_id"] for r in rows}
    never_started = [r for r in refs if r["rollout_dir"] is None]
    assert len(never_started) == TASKS * INSTANCES - 1
    assert all(
        r["infra_failure"]["infra_failure_type"] == "worker_cancelled" for r in never_started
    )
    stored = json.loads((jobs / "runs" / run_id / "run.json").read_text())
    assert stored["status"] == "cancelled"
    assert all(t["row"] is not None for t in stored["trials"].values())


@pytest.mark.parametrize(
    "doc",
    [
        {},
        {"rows": []},
        {"rows": [{"trial_id": f"t{i}", "reward": i / 7} for i in range(1234)], "n": 1},
        {"path": Path("/x"), "refs": [{"k": i} for i in range(500)], "nested": {"a": [1, 2]}},
        {"long": list(range(1001)), "text": "é\u2028\n", "big": 1e16, "tiny": 5e-324},
        {"tasks": {f"t#{i}": "queued" for i in range(1501)}, "rows": [None] * 501},
    ],
)
def test_documents_encoded_in_slices_are_the_same_json(doc: dict[str, object]) -> None:
    """A proof or status written a slice at a time (so the event loop is not held) is, read
    back, the document one json.dumps call writes; compact, one line."""
    text = encode_document(doc)
    assert json.loads(text) == json.loads(json.dumps(doc, default=str))
    assert b"\n" not in text and b", " not in text


def test_not_a_number_is_null_not_invalid_json() -> None:
    assert json.loads(encode_document({"reward": float("nan"), "x": [float("inf")]})) == {
        "reward": None,
        "x": [None],
    }


def test_a_string_utf8_cannot_carry_is_escaped_not_an_error() -> None:
    odd = b"/usr/bin/\xff".decode("utf-8", "surrogateescape")
    assert json.loads(encode_document({"rows": [{"reason": odd}] * 600, "x": odd})) == {
        "rows": [{"reason": odd}] * 600,
        "x": odd,
    }
