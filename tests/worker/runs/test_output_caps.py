"""A ``script:`` agent that writes a 1 GiB sparse file into ``/logs/agent``: the host's disk use
for the whole run (trial folder, run document, private proof) stays under the documented cap, and
result.json says what was cut. Local sandbox; Docker too (its collection streams an archive)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.docker_images import ensure_test_image
from tests.worker.support import (
    make_task,
    run_payload,
    script,
    serve_worker,
    submit_and_follow,
)
from worker.core.limits import OutputCaps

SPARSE = """\
truncate -s 1G /logs/agent/sparse.bin
echo 42 > /root/answer.txt
"""


def disk_usage(root: Path) -> int:
    """Real bytes on disk under ``root`` (allocated blocks, each inode once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for path in [root, *root.rglob("*")]:
        info = path.lstat()
        if (info.st_dev, info.st_ino) not in seen:
            seen.add((info.st_dev, info.st_ino))
            total += info.st_blocks * 512
    return total


@pytest.fixture(params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def environment(request: pytest.FixtureRequest) -> str:
    if request.param == "docker":
        ensure_test_image(request.getfixturevalue("docker_client"), "python")
    return str(request.param)


async def test_a_sparse_gigabyte_in_logs_stays_under_the_cap(
    tmp_path: Path, environment: str
) -> None:
    tasks = tmp_path / "tasks"
    make_task(tasks, "answer-42")
    jobs = tmp_path / "jobs"
    caps = OutputCaps()
    async with serve_worker(
        tmp_path, tasks, environment, concurrency=1, timeout=30, caps=caps
    ) as http:
        payload = run_payload(["answer-42"], agent=script(tmp_path, "sparse", SPARSE))
        _, _, status = await submit_and_follow(http, payload, timeout=300)
    [row] = status["rows"]
    assert row["passed"] is True, status  # the cap never costs the agent its score

    assert disk_usage(jobs) <= caps.log_file_bytes + (1 << 20)  # the file's cap + small files
    [result_file] = jobs.glob("runs/*/trials/*/result.json")
    result: dict[str, Any] = json.loads(result_file.read_text())
    logs = result["output_caps"]["logs"]
    assert logs["truncated"] == [
        {
            "path": "/logs/agent/sparse.bin",
            "size": 1 << 30,
            "kept_bytes": logs["truncated"][0]["kept_bytes"],
        }
    ]
    kept = result_file.parent / "agent" / "logs" / "sparse.bin"
    assert kept.stat().st_size <= caps.log_file_bytes
    assert kept.read_bytes().endswith(b"dropped]\n")
