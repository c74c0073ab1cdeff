"""Start a scripted purple agent as a real subprocess on loopback and wait for its agent card."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
from conftest import free_port

PURPLE = Path(__file__).parent / "purple"


@contextlib.contextmanager
def purple_server(
    mode: str, *, python: Path | str = sys.executable, version: str = "v1", log: Path | None = None
) -> Iterator[str]:
    port = free_port()
    env = {"PATH": "/usr/bin:/bin"}
    if log is not None:
        env["PURPLE_LOG"] = str(log)
    proc = subprocess.Popen(
        [str(python), str(PURPLE / f"server_{version}.py"), str(port), mode],
        cwd=PURPLE,
        env=env,
    )
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
