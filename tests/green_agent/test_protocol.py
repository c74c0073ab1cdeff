"""The green agent over real loopback A2A: card, 1.x and 0.3 clients, the one envelope, errors."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.protobuf.json_format import MessageToDict

from green_agent.card import agent_card, card_document
from green_agent.gateway import parse_parts, run_assessment
from leaderboard.rows import Envelope
from tests.green_agent.support import (
    FIVE,
    PURPLE_URL,
    SMOKE,
    agent_parts,
    request_text,
    stream_events,
)
from tests.support import REPO_ROOT, free_port, wait_for_http

HERE = Path(__file__).parent


async def test_card_declares_both_protocols_and_an_example(mock_green: str) -> None:
    async with httpx.AsyncClient() as http:
        card = (await http.get(mock_green + ".well-known/agent-card.json")).json()
    versions = {(i["protocolBinding"], i["protocolVersion"]) for i in card["supportedInterfaces"]}
    assert versions == {("JSONRPC", "1.0"), ("JSONRPC", "0.3")}
    assert card["url"] == mock_green  # the 0.3 card model needs a top-level url
    assert card["capabilities"]["streaming"] is True
    example = json.loads(card["skills"][0]["examples"][0])
    assert set(example) == {"participants", "config"}
    assert "agent" in example["participants"]


def test_card_document_is_what_a2a_sdk_would_serve() -> None:
    from a2a.server.request_handlers.response_helpers import agent_card_to_dict

    url = "http://10.0.0.1:9009/"
    assert card_document(url) == agent_card_to_dict(agent_card(url))


async def test_1x_client_gets_exactly_one_json_part_the_envelope(mock_green: str) -> None:
    events = await stream_events(mock_green, request_text(FIVE))
    parts = agent_parts(events)
    json_bearing = parse_parts(parts)
    assert len(json_bearing) == 1
    envelope = Envelope.model_validate(json_bearing[0])
    assert envelope.participants == {"agent": PURPLE_URL}
    assert len(envelope.results) == 5
    assert all(p.WhichOneof("content") in ("text", "data") for p in parts)
    data_parts = [p for p in parts if p.WhichOneof("content") == "data"]
    assert len(data_parts) == 1
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task"
    assert kinds.count("artifact_update") == 1
    last = events[-1].status_update.status.state
    from a2a.types import TaskState

    assert last == TaskState.TASK_STATE_COMPLETED
    # one working update per finished trial, plus the start
    working = [
        e
        for e in events
        if e.WhichOneof("payload") == "status_update"
        and e.status_update.status.state == TaskState.TASK_STATE_WORKING
    ]
    assert len(working) >= 1 + 5
    artifact = next(e for e in events if e.WhichOneof("payload") == "artifact_update")
    assert MessageToDict(artifact.artifact_update.artifact.parts[0].data)["status"] == "completed"


async def test_gateway_parse_yields_exactly_one_envelope(mock_green: str) -> None:
    export = await run_assessment(mock_green, {"agent": PURPLE_URL}, SMOKE)
    assert export["status"] == "completed"
    assert len(export["results"]) == 1
    Envelope.model_validate(export["results"][0])


def _run_a2a03(python: Path, green_url: str, text: str, *extra: str) -> dict[str, Any]:
    proc = subprocess.run(
        [str(python), str(HERE / "a2a03_gateway_client.py"), green_url, text, *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return report


async def test_a2a03_gateway_client_gets_one_envelope(mock_green: str, a2a03_python: Path) -> None:
    import asyncio

    config = {**FIVE, "participant_ids": {"agent": "019e4ed1-0000-7000-8000-000000000001"}}
    report = await asyncio.to_thread(_run_a2a03, a2a03_python, mock_green, request_text(config))
    assert report["errors"] == []
    assert report["status"] == "completed"
    assert report["json_status_parts"] == 0
    assert "working" in report["states"]
    assert len(report["results"]) == 1
    envelope = Envelope.model_validate(report["results"][0])
    assert envelope.participants == {"agent": "019e4ed1-0000-7000-8000-000000000001"}
    assert [r.task_id for r in envelope.results] == [
        "azure-bgp-oscillation-route-leak",
        "exam-block-sequencing",
        "latex-formula-extraction",
        "python-scala-translation",
        "travel-planning",
    ]


async def _rpc(url: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(url, json=body, headers=headers)
    text = response.text
    if text.startswith("data:") or "\ndata:" in text:  # streaming answer: first SSE event
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    answer: dict[str, Any] = json.loads(text)
    return answer


def _request_03(method: str, text: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {
            "message": {
                "kind": "message",
                "messageId": "m-1",
                "role": "user",
                "parts": [{"kind": "text", "text": text}],
            }
        },
    }


def _request_10(method: str, text: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": text}]}},
    }


INVALID = [
    ("not json at all", "request"),
    (json.dumps([1, 2]), "request"),
    (json.dumps({"participants": {"judge": PURPLE_URL}, "config": SMOKE}), "participants.agent"),
    (json.dumps({"participants": {"agent": "not-a-url"}, "config": SMOKE}), "participants.agent"),
    (json.dumps({"participants": {"agent": PURPLE_URL}}), "config"),
    (request_text({"task_set": "no-such-set", "tasks": "all"}), "config.task_set"),
    (request_text({"task_set": "../etc/passwd", "tasks": "all"}), "config.task_set"),
    (request_text({**SMOKE, "shard_index": 2, "num_shards": 2}), "config.shard_index"),
    (request_text({"task_set": "smoke", "task_ids": ["nope"]}), "config.task_ids"),
    (request_text({**SMOKE, "task_ids": ["citation-check"]}), "config.tasks"),
    (request_text({**SMOKE, "colour": "green"}), "config.colour"),
    (request_text({**SMOKE, "num_instances": "lots"}), "config.num_instances"),
    (request_text({**SMOKE, "condition": "without_skills"}), "config.condition"),
    (request_text({**SMOKE, "participant_ids": {"agent": "bob"}}), "config.participant_ids.agent"),
]


@pytest.mark.parametrize(("text", "field"), INVALID)
@pytest.mark.parametrize(
    ("method", "build", "headers"),
    [
        ("message/stream", _request_03, {}),
        ("message/send", _request_03, {}),
        ("SendStreamingMessage", _request_10, {"A2A-Version": "1.0"}),
    ],
)
async def test_invalid_request_is_invalid_params_naming_the_field(
    mock_green: str, text: str, field: str, method: str, build: Any, headers: dict[str, str]
) -> None:
    answer = await _rpc(mock_green, build(method, text), headers)
    assert "error" in answer, answer
    assert answer["error"]["code"] == -32602
    assert answer["error"]["message"].startswith(field + ":"), answer["error"]["message"]


def test_python_m_green_agent_serves_the_card(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSBENCH_WORKER")}
    log = tmp_path / "green.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "green_agent", "--port", str(port)],
            cwd=REPO_ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        card_url = f"http://127.0.0.1:{port}/.well-known/agent-card.json"
        wait_for_http(card_url, proc, what="python -m green_agent", log=log)
        card = httpx.get(card_url).json()
        assert card["name"] == "SkillsBench green agent"
        assert card["url"] == f"http://127.0.0.1:{port}/"
        # JSON-RPC waits for the full app, then works (mock worker: no worker configured)
        export = asyncio.run(
            run_assessment(f"http://127.0.0.1:{port}/", {"agent": PURPLE_URL}, SMOKE)
        )
        assert export["status"] == "completed"
        assert len(export["results"]) == 1
        # Without a worker it says, in one line, that it uses the mock worker (README says so).
        warnings = [line for line in log.read_text().splitlines() if "MOCK worker" in line]
        assert len(warnings) == 1 and "WARNING" in warnings[0], log.read_text()[-2000:]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert "green agent ready" in log.read_text()


def test_a_port_in_use_is_one_line_and_never_ready() -> None:
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "green_agent", "--port", str(port)],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"error: cannot listen on 127.0.0.1:{port}: "), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "green agent ready" not in done.stderr and "Traceback" not in done.stderr
