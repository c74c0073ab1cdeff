"""Helpers for the worker tests: tiny task folders, run requests, an in-process loopback server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import uvicorn

DIGEST = "sha256:" + "0" * 64
PASS_TEST = """\
#!/bin/sh
if [ "$(cat /root/answer.txt 2>/dev/null)" = "42" ]; then r=1; else r=0; fi
echo $r > /logs/verifier/reward.txt
exit 0
"""
SOLVE = "#!/bin/sh\necho 42 > /root/answer.txt\n"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_task(
    root: Path,
    task_id: str,
    *,
    test_sh: str = PASS_TEST,
    solve_sh: str | None = SOLVE,
    instruction: str = "Write 42 to /root/answer.txt.",
    agent_timeout: float = 60,
    verifier_timeout: float = 60,
    dockerfile: str = "FROM python:3.11-slim\nWORKDIR /root\n",
    skills: dict[str, str] | None = None,
    extra_tests: dict[str, str] | None = None,
) -> Path:
    folder = root / task_id
    (folder / "environment").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "task.toml").write_text(
        textwrap.dedent(
            f"""\
            version = "1.0"
            [metadata]
            category = "testing"
            difficulty = "easy"
            tags = ["worker-test"]
            [agent]
            timeout_sec = {agent_timeout}
            [verifier]
            timeout_sec = {verifier_timeout}
            [environment]
            allow_internet = false
            """
        )
    )
    (folder / "instruction.md").write_text(instruction + "\n")
    (folder / "environment" / "Dockerfile").write_text(dockerfile)
    (folder / "tests" / "test.sh").write_text(test_sh)
    os.chmod(folder / "tests" / "test.sh", 0o755)
    for name, text in (extra_tests or {}).items():
        (folder / "tests" / name).write_text(text)
    if solve_sh is not None:
        (folder / "solution").mkdir()
        (folder / "solution" / "solve.sh").write_text(solve_sh)
        os.chmod(folder / "solution" / "solve.sh", 0o755)
    for name, body in (skills or {}).items():
        skill = folder / "environment" / "skills" / name
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(body)
    return folder


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


@contextlib.asynccontextmanager
async def serve(app: Any) -> AsyncIterator[str]:
    """Serve an ASGI app on a free loopback port; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    task = asyncio.create_task(server.serve())
    for _ in range(500):
        if server.started:
            break
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)


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
