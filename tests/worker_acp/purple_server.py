"""Start a scripted purple agent as a real subprocess on loopback and wait for its agent card."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
from testsupport import free_port

PURPLE = Path(__file__).parent / "purple"


@contextlib.contextmanager
def purple_server(
    mode: str,
    *,
    python: Path | str = sys.executable,
    version: str = "v1",
    log: Path | None = None,
    streaming: bool = True,
    env: dict[str, str] | None = None,
) -> Iterator[str]:
    """A scripted purple agent (purple/server_<version>.py) answering in ``mode``."""
    env = {"PATH": "/usr/bin:/bin", "PURPLE_STREAMING": "1" if streaming else "0", **(env or {})}
    if log is not None:
        env["PURPLE_LOG"] = str(log)
    with served(
        lambda port: [str(python), str(PURPLE / f"server_{version}.py"), str(port), mode], env
    ) as url:
        yield url


@contextlib.contextmanager
def served(argv: Callable[[int], list[str]], env: dict[str, str]) -> Iterator[str]:
    """Run ``argv(port)`` and yield its URL once its agent card answers."""
    port = free_port()
    proc = subprocess.Popen(argv(port), cwd=PURPLE, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"purple server exited with {proc.returncode}")
            try:
                if httpx.get(f"{url}/.well-known/agent-card.json", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("purple server did not start")
            time.sleep(0.1)
        yield url
    finally:
        proc.kill()
        proc.wait()
