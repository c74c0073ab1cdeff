"""Start a scripted purple agent as a real subprocess on loopback and wait for its agent card."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from testsupport import free_port, wait_for_http

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
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="purple-server-") as scratch:
        log = Path(scratch) / f"purple-{port}.log"
        with open(log, "wb") as sink:
            proc = subprocess.Popen(
                argv(port), cwd=PURPLE, env=env, stdout=sink, stderr=subprocess.STDOUT
            )
        try:
            wait_for_http(f"{url}/.well-known/agent-card.json", proc, what="purple server", log=log)
            yield url
        finally:
            proc.kill()
            proc.wait()
