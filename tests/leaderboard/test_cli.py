"""`leaderboard normalize` and `leaderboard sample` through the real command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from leaderboard.rows import Envelope
from leaderboard.validate import validate_results_file
from tests.leaderboard.support import write_json
from tests.support import PUBLISHED_DATA, REPO_ROOT

SMOKE = PUBLISHED_DATA / "benchflow-ai__skillsbench-agentbeats__task_sets__smoke.json"
V11 = PUBLISHED_DATA / "benchflow-ai__skillsbench-agentbeats__task_sets__skillsbench-v1.1.json"
AGENT = "019e5799-ca68-7b33-b1a5-c97b92b6fda1"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", *args],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
    )


def test_normalize_run_status(tmp_path: Path) -> None:
    payload = {
        "schema_version": "skillsbench.agentbeats.worker_api.v1",
        "run_id": "run-1",
        "status": "completed",
        "rows": [
            {
                "task_id": "citation-check",
                "trial_id": "/home/runner/jobs/citation-check__agentbeats__0badc0de",
                "score_eligible": True,
                "passed": True,
                "reward": 1,
                "time_used": 318.8234,
                "stdout": "export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123",
                "artifact_refs": ["local://agentbeats-private-proof/run-1/proof.json"],
                "_private_proof_refs": [{"rollout_dir": "/home/runner/jobs/x"}],
            },
            {"task_id": "citation-check", "score_eligible": False, "reward": 0},
        ],
        "worker_meta": {"worker_image": "ghcr.io/x/worker@sha256:" + "0" * 64},
        "_private_proof_manifest": "s3://bucket/proof.json",
    }
    run = write_json(tmp_path / "run.json", payload)
    out = cli(
        "leaderboard", "normalize", str(run), "--participant", AGENT, "--task-set", str(SMOKE)
    )
    assert out.returncode == 0, out.stderr
    for leaked in ("sk-proj", "/home/runner", "local://", "s3://", "_private", "worker_image"):
        assert leaked not in out.stdout
    envelope = json.loads(out.stdout)
    assert Envelope.model_validate(envelope).public_dict() == envelope
    first, second = envelope["results"]
    assert first["trial_id"] == "citation-check__agentbeats__0badc0de"
    assert (first["reward"], first["time_used"], first["task_set"]) == (1.0, 318.823, "smoke")
    assert first["category"] == "office-white-collar" and first["artifact_refs"] == []
    assert second["infra_failure_type"] == second["error_type"] == "worker_error"
    bad = cli("leaderboard", "normalize", str(run), "--participant", "/tmp/agent.sock")
    assert bad.returncode == 2 and "participants.agent" in bad.stderr


def test_sample_is_deterministic_and_valid(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        out = cli(
            "leaderboard", "sample", "--task-set", str(V11), "--output", str(tmp_path / folder)
        )
        assert out.returncode == 0, out.stderr
    files_a = sorted((tmp_path / "a").glob("*.json"))
    assert len(files_a) == 3
    for path in files_a:
        assert path.read_bytes() == (tmp_path / "b" / path.name).read_bytes()
        assert validate_results_file(path, contract=True) == []
    # The checked-in sample is this command's output with seed 7.
    for path in files_a:
        assert path.read_bytes() == (REPO_ROOT / "leaderboard" / "results" / path.name).read_bytes()
