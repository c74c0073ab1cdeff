"""A hostile purple agent (a real A2A server on loopback) answering with megabytes of junk on every
turn: the run's whole footprint on the host's disk (trial folder, run document, private proof)
stays under the documented per-trial cap, and the trajectories say what they dropped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.worker.support import TASKS as OUR_TASKS
from tests.worker.support import purple_server, run_cli, trial_file
from worker.core.capped import TRAJECTORY_TRUNCATED, TRUNCATED_KEY
from worker.core.limits import OutputCaps

REPLY_BYTES = 3 << 19  # 1.5 MiB: each reply is past the event cap
TURNS = 40  # and together they are past the trajectory cap


def disk_usage(root: Path) -> int:
    """Real bytes on disk under ``root`` (allocated blocks, each inode once: hard links too)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for path in [root, *root.rglob("*")]:
        info = path.lstat()
        if (info.st_dev, info.st_ino) not in seen:
            seen.add((info.st_dev, info.st_ino))
            total += info.st_blocks * 512
    return total


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_flooding_purple_stays_under_the_trial_cap(tmp_path: Path) -> None:
    flood = {"PURPLE_FLOOD_BYTES": str(REPLY_BYTES), "PURPLE_FLOOD_TURNS": str(TURNS)}
    with purple_server("flood", env=flood) as url:
        done, results = run_cli(
            tmp_path, "--tasks-dir", str(OUR_TASKS), "--task-id", "write-answer",
            "--agent", f"a2a:{url}",
        )  # fmt: skip
    [result] = results
    assert result["agent_result"]["details"]["bridge"]["turns"] == TURNS, done.stderr[-3000:]
    caps = OutputCaps()
    # Uncapped, the replies alone (logged as data and as the raw receipt) are 2 * 40 * 1.5 MiB.
    assert caps.trial_bytes() < 2 * TURNS * REPLY_BYTES
    assert disk_usage(tmp_path / "jobs") <= caps.trial_bytes() + (1 << 20)

    a2a = lines(trial_file(tmp_path, "a2a_trajectory.jsonl"))
    assert trial_file(tmp_path, "a2a_trajectory.jsonl").stat().st_size <= caps.trajectory_bytes
    assert all(len(json.dumps(e)) <= caps.trajectory_event_bytes for e in a2a)
    assert any(TRUNCATED_KEY in e for e in a2a if e["type"] == "a2a_response")
    marker = a2a[-1]
    assert marker["type"] == TRAJECTORY_TRUNCATED and marker["dropped_events"] > 0
    assert marker["dropped_bytes"] > 0

    acp = lines(trial_file(tmp_path, "acp_trajectory.jsonl"))
    assert trial_file(tmp_path, "acp_trajectory.jsonl").stat().st_size <= caps.trajectory_bytes
    [said] = [e for e in acp if e["type"] == "agent_message"]
    assert said[TRUNCATED_KEY]["original_bytes"] > REPLY_BYTES
    assert "more bytes dropped]" in said["text"]
    # Every command still counts, however long its title was.
    calls = [e for e in acp if e["type"] == "tool_call"]
    assert len(calls) == TURNS - 1
    assert result["output_caps"]["acp_trajectory"]["shortened_events"] >= 1

    # The private proof holds the same files without a second copy of their bytes.
    [proof_file] = (tmp_path / "jobs").glob("private-proof/*/proof.json")
    proof = json.loads(proof_file.read_text())
    stored = {a["relative_path"].rsplit("/", 1)[-1]: a for a in proof["copied_artifacts"]}
    assert stored["a2a_trajectory.jsonl"]["stored"] == "hardlink"
    assert len(stored["a2a_trajectory.jsonl"]["sha256"]) == 64
