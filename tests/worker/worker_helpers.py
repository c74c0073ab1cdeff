"""Helpers for the worker tests: tiny task folders, run requests, an in-process loopback server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
from testsupport import PASS_TEST, SOLVE, free_port, make_task, serve

DIGEST = "sha256:" + "0" * 64


def run_payload(task_ids: list[str], agent: str | None = "nop", **config: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "config": {"task_set": "worker-tests", "condition": "with_skills", **config},
        "task_set": "worker-tests",
        "task_set_digest": DIGEST,
        "tasks": [
            {"task_id": t, "category": "testing", "difficulty": "easy", "tags": ["worker-test"]}
            for t in task_ids
        ],
    }
    if agent is not None:
        payload["agent"] = agent
    return payload


def script(tmp_path: Path, name: str, body: str) -> str:
    """A script: agent spec for ``body``."""
    path = tmp_path / f"{name}.sh"
    path.write_text(body)
    return f"script:{path}"


async def read_sse(response: httpx.Response) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """Parse a text/event-stream response into (event, data) pairs."""
    name = "message"
    data: list[str] = []
    async for line in response.aiter_lines():
        if line == "":
            if data:
                yield name, json.loads("\n".join(data))
            name, data = "message", []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())


async def submit_and_follow(
    http: httpx.AsyncClient, payload: dict[str, Any], timeout: float = 120
) -> tuple[str, list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    """POST a run, follow its event stream to the end; returns (run_id, events, final status)."""
    response = await http.post("/runs", json=payload)
    assert response.status_code == 201, response.text
    run_id = response.json()["run_id"]
    events: list[tuple[str, dict[str, Any]]] = []

    async def follow() -> None:
        async with http.stream("GET", f"/runs/{run_id}/events", timeout=timeout) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            async for name, data in read_sse(stream):
                events.append((name, data))
                if name == "end":
                    return

    await asyncio.wait_for(follow(), timeout)
    status = (await http.get(f"/runs/{run_id}")).json()
    return run_id, events, status


def process_cmdlines_containing(marker: str) -> list[str]:
    """Command lines of live processes on this host that mention ``marker``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(f"{proc.name}: {cmdline}")
    return found


__all__ = ["PASS_TEST", "SOLVE", "free_port", "make_task", "serve"]
