"""End to end over real loopback: gateway-style client -> green agent -> real worker (local
sandbox) -> a2a bridge -> the placeholder purple agent. Skipped where the build lacks a part."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from green_agent.gateway import run_assessment
from leaderboard.rows import Envelope
from skillsbench_agentbeats.in_process import local_green, local_worker, serve_app
from tests.green_agent.support import request_text

TWO = {"task_set": "examples", "task_ids": ["grid-path-count", "fix-interval-merge"]}


def _placeholder(url: str) -> Any:
    from purple_agent.placeholder import PlaceholderAgent, card_for
    from purple_agent.server import build_app

    return build_app(card_for(url), PlaceholderAgent())


async def test_placeholder_assessment_through_the_real_worker(tmp_path: Path) -> None:
    async with (
        serve_app(_placeholder) as purple,
        local_worker(tmp_path / "jobs") as worker_url,
    ):
        assert worker_url is not None
        async with local_green({"SKILLSBENCH_WORKER_URL": worker_url}) as green:
            export = await run_assessment(green, {"agent": purple}, TWO)
    assert export["status"] == "completed"
    (item,) = export["results"]
    envelope = Envelope.model_validate(item)
    assert envelope.participants == {"agent": purple}
    assert [r.task_id for r in envelope.results] == TWO["task_ids"]
    # the placeholder does nothing: scored, and it fails
    assert all(r.score_eligible and not r.passed and r.reward == 0 for r in envelope.results)
    assert all(r.agent_transport == "a2a" for r in envelope.results)


async def test_a2a03_gateway_client_end_to_end(tmp_path: Path, a2a03_python: Path) -> None:
    async with (
        serve_app(_placeholder) as purple,
        local_worker(tmp_path / "jobs") as worker_url,
    ):
        assert worker_url is not None
        async with local_green({"SKILLSBENCH_WORKER_URL": worker_url}) as green:
            proc = await asyncio.create_subprocess_exec(
                str(a2a03_python),
                str(Path(__file__).parent / "a2a03_gateway_client.py"),
                green,
                request_text({**TWO, "task_ids": ["grid-path-count"]}, agent=purple),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await asyncio.wait_for(proc.communicate(), timeout=240)
    assert proc.returncode == 0, err.decode()[-2000:]
    report = json.loads(out.decode().strip().splitlines()[-1])
    assert report["status"] == "completed", report
    assert report["json_status_parts"] == 0
    (item,) = report["results"]
    envelope = Envelope.model_validate(item)
    assert [r.task_id for r in envelope.results] == ["grid-path-count"]
    assert envelope.results[0].score_eligible


def test_demo_prints_the_leaderboard_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from skillsbench_agentbeats.assessment_demo import DEMO_PARTICIPANT_ID, main

    output = tmp_path / "results.json"
    code = main(
        [
            "--output",
            str(output),
            "--jobs-dir",
            str(tmp_path / "jobs"),
            "--task-id",
            "half-life-fit",
        ]
    )
    assert code == 0
    data = json.loads(output.read_text())
    assert data["status"] == "completed"
    printed = capsys.readouterr().out
    assert "== overall ==" in printed
    assert re.search(rf"^{DEMO_PARTICIPANT_ID}\s+0/1\s+0\.0\s+0\.0\s", printed, re.M), printed
