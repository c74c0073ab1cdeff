"""A verifier that needs the network (SkillsBench verifiers `pip install pytest` at test time)
gets it where the task allows internet, and only there.

The "index" is a loopback HTTP server standing in for PyPI; the local sandbox shares the host's
network when internet is allowed, so the verifier reaches it at 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.worker.support import make_task, run_payload, started_engine
from worker.api import RunRequest

TEST_SH = """\
#!/bin/sh
mkdir -p /logs/verifier
if python3 -c 'import sys, urllib.request
body = urllib.request.urlopen("http://127.0.0.1:{port}/simple/pytest/", timeout=10).read()
sys.exit(0 if body == b"pytest-index" else 1)'; then
  echo "index reached" && echo 1 > /logs/verifier/reward.txt
else
  echo "index not reached" && echo 0 > /logs/verifier/reward.txt
fi
"""


class _Index(BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        _Index.hits.append(self.path)
        body = b"pytest-index"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def index() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Index.hits = []
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


async def _oracle_run(tmp_path: Path, task_id: str) -> tuple[dict[str, Any], str]:
    jobs = tmp_path / "jobs"
    async with started_engine(jobs, tmp_path / "tasks") as engine:
        run = await engine.submit(RunRequest.model_validate(run_payload([task_id], agent="oracle")))
        record = await asyncio.wait_for(engine.wait(run.run_id), 300)
    (row,) = record.rows()
    trial = jobs / "runs" / record.run_id / "trials" / row["trial_id"]
    return row, (trial / "verifier" / "test-stdout.txt").read_text()


@pytest.mark.parametrize("internet", [True, False])
async def test_the_verifier_has_the_network_exactly_when_the_task_allows_it(
    tmp_path: Path, index: int, internet: bool
) -> None:
    task_id = f"needs-index-{str(internet).lower()}"
    make_task(tmp_path / "tasks", task_id, test_sh=TEST_SH.format(port=index), internet=internet)
    row, stdout = await _oracle_run(tmp_path, task_id)
    assert row["score_eligible"], row
    if internet:
        assert row["passed"] and row["reward"] == 1, (row, stdout)
        assert "index reached" in stdout
        # The agent's sandbox and the regrade's fresh one (every pass is graded again).
        assert _Index.hits == ["/simple/pytest/"] * 2
    else:
        assert not row["passed"] and row["reward"] == 0, (row, stdout)
        assert "index not reached" in stdout
        assert _Index.hits == []
