"""Run an ASGI app on a free 127.0.0.1 port in a background thread (fakes at the world's edge)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from testsupport import STARTUP_DEADLINE_SEC, free_port


@contextmanager
def serve(app: Any) -> Iterator[str]:
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
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
