"""Shared test helpers: repository paths, free ports, Docker availability, task folders,
loopback servers, the CLI run in-process (Docker test images: ``tests.support.docker_images``).

Test modules import these from here, never from ``conftest`` (several conftest files exist, and
pytest would hand back whichever it loaded last).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import textwrap
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

REPO_ROOT = Path(__file__).resolve().parents[2]
TASKS_DIR = REPO_ROOT / "tasks"
TEST_AGENTS = (
    REPO_ROOT / "tests" / "agents"
)  # manifest agents of the tests (SKILLSBENCH_AGENTS_DIR)
PUBLISHED_DATA = REPO_ROOT / "tests" / "data" / "published"  # public data, copied verbatim
A2A03_PYTHON = REPO_ROOT / ".venv-a2a03" / "bin" / "python"

# How long a test waits for a server it started to answer. Generous on purpose: on a busy machine
# (load average ~27 seen) a Python process can take tens of seconds to import and bind. The waits
# end as soon as the server answers, and at once when its process dies, so a healthy run never
# pays this.
STARTUP_DEADLINE_SEC = 120.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def log_tail(log: Path | None, limit: int = 4000) -> str:
    """The end of a server's log file for a failure message ("" when there is none)."""
    if log is None or not log.exists():
        return ""
    text = log.read_text(encoding="utf-8", errors="replace")
    return f"\n--- {log.name} (last {limit} chars) ---\n{text[-limit:]}"


def wait_for_http(
    url: str,
    proc: subprocess.Popen[Any],
    *,
    what: str,
    log: Path | None = None,
    deadline_sec: float = STARTUP_DEADLINE_SEC,
) -> None:
    """Wait until GET ``url`` answers 200 from the server ``proc`` runs.

    Fails at once, with the server's log, when the process exits; else after ``deadline_sec``.
    """
    deadline = time.monotonic() + deadline_sec
    while True:
        if proc.poll() is not None:
            raise AssertionError(
                f"{what} exited with code {proc.returncode} before answering {url}{log_tail(log)}"
            )
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{what} did not answer {url} within {deadline_sec:.0f} s{log_tail(log)}"
            )
        time.sleep(0.1)


def docker_available() -> str | None:
    """None when a Docker Engine answers, else the reason it does not."""
    try:
        import docker

        client = docker.from_env(timeout=5)
        client.ping()
        client.close()
    except Exception as exc:
        return f"no Docker Engine answers: {exc}"
    return None


# A tiny task folder for worker and usage tests: the answer is 42 in /root/answer.txt.
PASS_TEST = """\
#!/bin/sh
if [ "$(cat /root/answer.txt 2>/dev/null)" = "42" ]; then r=1; else r=0; fi
echo $r > /logs/verifier/reward.txt
exit 0
"""
SOLVE = "#!/bin/sh\necho 42 > /root/answer.txt\n"


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
    internet: bool = False,
    verifier_toml: str = "",
) -> Path:
    """A tiny task folder: the answer is 42 in /root/answer.txt (``verifier_toml``: more lines
    of its ``[verifier]`` section)."""
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
            {verifier_toml}
            [environment]
            allow_internet = {str(internet).lower()}
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


class InProcessServer(uvicorn.Server):
    """uvicorn without its signal handlers. Servers that start and stop out of order in one
    process would each put back the handler they found, leaving a stopped server's
    ``handle_exit`` as SIGTERM's; sse-starlette finds a server through that handler and ends
    every later event stream of the process when it says ``should_exit``."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.asynccontextmanager
async def serve(app: Any, *, lifespan: str = "on") -> AsyncIterator[str]:
    """Serve an ASGI app on a free loopback port; yields its base URL."""
    port = free_port()
    server = InProcessServer(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan=lifespan)
    )
    task = asyncio.create_task(server.serve())
    deadline = time.monotonic() + STARTUP_DEADLINE_SEC
    while not server.started:
        if task.done():
            task.result()
            raise AssertionError(f"loopback server on port {port} stopped before it started")
        if time.monotonic() > deadline:
            raise AssertionError(f"loopback server on port {port} did not start in time")
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)


# Run the real `skillsbench-agentbeats` entry point in-process (no interpreter start-up per call).
@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str


def run_cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> CliResult:
    from skillsbench_agentbeats.cli import main  # only the tests that run the CLI pay its import

    capsys.readouterr()
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return CliResult(code, out, err)


# Run an ASGI app on a free 127.0.0.1 port in a background thread (fakes at the world's edge).
@contextmanager
def serve_in_thread(app: Any) -> Iterator[str]:
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = InProcessServer(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_DEADLINE_SEC
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError(f"loopback server on port {port} stopped before it started")
        if time.monotonic() > deadline:
            raise RuntimeError(f"loopback server on port {port} did not start in time")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
