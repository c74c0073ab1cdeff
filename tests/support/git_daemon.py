"""A real git server on loopback (``git daemon`` on 127.0.0.1, a free port) and a helper that
makes a repository of task folders with a tag: what ``task-set fetch`` is tested against."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support import STARTUP_DEADLINE_SEC, free_port, log_tail

GIT_ENV = {
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", *args],
        cwd=repo,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    """Commit the whole work tree; the new commit's id."""
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@contextmanager
def git_daemon(base: Path) -> Iterator[str]:
    """Serve every repository under ``base`` read-only; yields ``git://127.0.0.1:PORT``."""
    binary = shutil.which("git")
    if binary is None:
        pytest.skip("git is not installed")
    port = free_port()
    log = base.parent / f"git-daemon-{port}.log"
    with log.open("wb") as out:
        daemon = subprocess.Popen(
            [binary, "daemon", "--reuseaddr", "--listen=127.0.0.1", f"--port={port}",
             f"--base-path={base}", "--export-all", "--informative-errors", str(base)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + STARTUP_DEADLINE_SEC
        while True:
            if daemon.poll() is not None:
                raise RuntimeError(f"git daemon exited: {log_tail(log)}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"git daemon did not listen: {log_tail(log)}") from None
                time.sleep(0.05)
        yield f"git://127.0.0.1:{port}"
    finally:
        daemon.terminate()
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
