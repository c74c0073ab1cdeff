"""`readiness assemble|validate` and `deploy-bundle` through the real CLI entry point."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.leaderboard.support import (
    CANONICAL_URL,
    GREEN,
    PURPLE,
    REPO,
    SMOKE_URL,
    STORAGE,
    TASK_DIGEST,
    D,
    copy_results,
    published_queries,
)
from tests.support import PUBLISHED_DATA, CliResult, run_cli

SMOKE_SET = PUBLISHED_DATA / "benchflow-ai__skillsbench-agentbeats__task_sets__smoke.json"
V11_SET = PUBLISHED_DATA / "benchflow-ai__skillsbench-agentbeats__task_sets__skillsbench-v1.1.json"


@pytest.fixture
def cli(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., CliResult]:
    # Run in the workspace, as an operator does: missing output folders are made only inside
    # the current folder (serving/output.py).
    monkeypatch.chdir(tmp_path)
    return lambda *args: run_cli(capsys, *args)


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    copy_results(tmp_path)
    queries = tmp_path / "queries"
    queries.mkdir()
    for name, sql in published_queries().items():
        (queries / f"{name}.sql").write_text(sql)
    images = {"schema_version": "skillsbench.agentbeats.image_evidence.v1"}
    for role, digest in D.items():
        images |= {
            f"{role}_image": f"ghcr.io/acme/skillsbench-{role}@{digest}",
            f"{role}_image_digest": digest,
            f"{role}_image_platform": "linux/amd64",
        }
    write(tmp_path / "images.json", images)
    write(tmp_path / "task-images.json", {"citation-check": f"ghcr.io/acme/env@{TASK_DIGEST}"})
    return tmp_path


def assemble_args(ws: Path, **overrides: str) -> list[str | Path]:
    opts: dict[str, str | Path] = {
        "--images": ws / "images.json",
        "--task-environment-images": ws / "task-images.json",
        "--task-set": "smoke",
        "--task-set-file": SMOKE_SET,
        "--leaderboard-repo": REPO,
        "--green-agent-id": GREEN,
        "--purple-agent-id": PURPLE,
        "--private-proof-storage": STORAGE,
        "--private-proof-retention": "90-days",
        "--smoke-run-url": SMOKE_URL,
        "--smoke-results": ws / "results" / "smoke.json",
        "--smoke-proof-ref": f"{STORAGE}/1001/proof.json",
        "--canonical-run-url": CANONICAL_URL,
        "--canonical-results": ws / "results" / "canonical.json",
        "--canonical-proof-ref": f"{STORAGE}/1002/proof.json",
        "--queries-dir": ws / "queries",
        "--output": ws / "evidence" / "evidence.json",
        **overrides,
    }
    args: list[str | Path] = ["readiness", "assemble"]
    for key, value in opts.items():
        args += [key, value]
    return args


def validate_args(ws: Path, evidence: Path) -> list[str | Path]:
    return ["readiness", "validate", "--evidence", evidence, "--queries-dir", ws / "queries",
            "--task-set-file", SMOKE_SET]  # fmt: skip


def test_assemble_then_validate(ws: Path, cli: Callable[..., CliResult]) -> None:
    done = cli(*assemble_args(ws), "--quick-submit-results", ws / "results" / "canonical.json",
               "--quick-submit-run-url", CANONICAL_URL)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    evidence = ws / "evidence" / "evidence.json"
    doc = json.loads(evidence.read_text())
    assert doc["leaderboard"]["query_row_counts"] == {
        "overall": 1,
        "by_category": 4,
        "by_difficulty": 2,
    }
    assert doc["public_smoke"]["results_files"] == ["../results/smoke.json"]
    assert doc["quick_submit"]["enabled"] is True
    done = cli(*validate_args(ws, evidence))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("ok:")


def _count_runs_of_overall(ws: Path) -> Path:
    """Make overall.sql log each run into its own DuckDB file (a side effect that outlives the
    in-memory connection the query runs on); return that file."""
    log = ws / "runs.duckdb"
    overall = ws / "queries" / "overall.sql"
    overall.write_text(
        f"ATTACH '{log}' AS runs; CREATE TABLE IF NOT EXISTS runs.log (n INTEGER); "
        "INSERT INTO runs.log VALUES (1); DETACH runs;\n" + overall.read_text()
    )
    return log


def _runs(log: Path) -> int:
    con = duckdb.connect(str(log), read_only=True)
    try:
        row = con.execute("SELECT count(*) FROM log").fetchone()
    finally:
        con.close()
    assert row is not None
    return int(row[0])


def test_assemble_runs_the_queries_once(ws: Path, cli: Callable[..., CliResult]) -> None:
    log = _count_runs_of_overall(ws)
    done = cli(*assemble_args(ws))
    assert done.returncode == 0, done.stdout + done.stderr
    assert _runs(log) == 1  # recorded and verified from one run
    done = cli(*validate_args(ws, ws / "evidence" / "evidence.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert _runs(log) == 2  # validation on its own does re-run them


def test_assemble_refuses_bad_evidence(ws: Path, cli: Callable[..., CliResult]) -> None:
    done = cli(*assemble_args(ws, **{"--private-proof-storage": "http://proofs.example.com/x"}))
    assert done.returncode == 1
    assert "$.worker.private_proof_storage: [storage_scheme]" in done.stdout
    assert not (ws / "evidence" / "evidence.json").exists()
    done = cli(*assemble_args(ws, **{"--private-proof-storage": "s3://another-bucket/proof"}))
    assert done.returncode == 1
    assert (
        "$.public_smoke.private_proof_manifest_refs[0]: [proof_ref_outside_storage]" in done.stdout
    )


def test_draft_skips_queries_and_does_not_validate(ws: Path, cli: Callable[..., CliResult]) -> None:
    done = cli(*assemble_args(ws), "--no-query-verify")
    assert done.returncode == 0, done.stderr
    assert "DRAFT" in done.stdout
    evidence = ws / "evidence" / "evidence.json"
    assert "query_row_counts" not in json.loads(evidence.read_text())["leaderboard"]
    done = cli(*validate_args(ws, evidence))
    assert done.returncode == 1
    assert "$.leaderboard.query_row_counts: [missing_key]" in done.stdout


def test_validate_lists_every_violation_with_paths(ws: Path, cli: Callable[..., CliResult]) -> None:
    assert cli(*assemble_args(ws)).returncode == 0
    evidence = ws / "evidence" / "evidence.json"
    doc = json.loads(evidence.read_text())
    doc["images"]["worker_image"] = "ghcr.io/acme/worker:latest"
    doc["canonical_run"]["workflow_run_url"] = "https://github.com/fork/x/actions/runs/3"
    doc["bonus"] = {}
    write(evidence, doc)
    done = cli(*validate_args(ws, evidence), "--json")
    assert done.returncode == 1
    found = {(f["path"], f["rule"]) for f in json.loads(done.stdout)}
    assert found >= {
        ("$.images.worker_image", "image_not_pinned"),
        ("$.canonical_run.workflow_run_url", "workflow_run_repository"),
        ("$.bonus", "unknown_key"),
    }


def test_validate_bad_json_is_one_line(tmp_path: Path) -> None:
    """Through a real interpreter: one line on stderr, exit 2, no traceback."""
    evidence = tmp_path / "evidence.json"
    evidence.write_text("{nope")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "skillsbench_agentbeats",
            "readiness",
            "validate",
            "--evidence",
            str(evidence),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "not valid JSON" in done.stderr


def test_deploy_bundle_is_written_when_complete(ws: Path, cli: Callable[..., CliResult]) -> None:
    out = ws / "bundle.json"
    done = cli("deploy-bundle", "--branch-images", ws / "images.json", "--task-environment-images",
               ws / "task-images.json", "--task-set", "smoke", "--task-set-file", SMOKE_SET,
               "--image-tag", "smoke-abc", "--source-revision", "abc123", "--output", out)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    bundle = json.loads(out.read_text())
    assert bundle["schema_version"] == "skillsbench.agentbeats.deploy_bundle.v1"
    assert bundle["components"]["worker"]["image_digest"] == D["worker"]
    assert bundle["components"]["green"]["manifest_path"].endswith("green-agent.json5")
    assert bundle["task_set"]["task_count"] == 1
    assert bundle["worker_prebuilt_images"] == {"citation-check": f"ghcr.io/acme/env@{TASK_DIGEST}"}
    entry = bundle["public_readiness_task_environment_images"]["images"][0]
    assert entry == {"image": f"ghcr.io/acme/env@{TASK_DIGEST}", "image_digest": TASK_DIGEST,
                     "image_platform": "linux/amd64", "task_id": "citation-check"}  # fmt: skip
    # A bundle is itself accepted as task environment images by `readiness assemble`.
    done = cli(*assemble_args(ws, **{"--task-environment-images": str(out)}))
    assert done.returncode == 0, done.stdout + done.stderr


def test_deploy_bundle_components_shape(ws: Path, cli: Callable[..., CliResult]) -> None:
    components = {
        role: {
            "image": f"ghcr.io/acme/{role}@{d}",
            "image_digest": d,
            "image_platform": "linux/amd64",
        }
        for role, d in D.items()
    }
    branch = write(ws / "branch.json", {"components": components})
    done = cli("deploy-bundle", "--branch-images", branch, "--task-environment-images",
               ws / "task-images.json", "--task-set", "smoke", "--task-set-file", SMOKE_SET,
               "--output", ws / "b.json")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_deploy_bundle_refuses_incomplete_coverage_and_unpinned_images(
    ws: Path, cli: Callable[..., CliResult]
) -> None:
    images = json.loads((ws / "images.json").read_text())
    images["purple_image"] = "ghcr.io/acme/purple:latest"
    write(ws / "images.json", images)
    tasks = {
        "citation-check": f"ghcr.io/acme/env@{TASK_DIGEST}",
        "3d-scan-calc": "ghcr.io/acme/env:3d",
    }
    write(ws / "task-images.json", tasks)
    out = ws / "bundle.json"
    done = cli("deploy-bundle", "--branch-images", ws / "images.json", "--task-environment-images",
               ws / "task-images.json", "--task-set", "skillsbench-v1.1", "--task-set-file", V11_SET,
               "--output", out)  # fmt: skip
    assert done.returncode == 1
    assert "[task_image_coverage] 85 of 87 tasks" in done.stdout
    assert "$.images.purple_image: [image_not_pinned]" in done.stdout
    assert "$.task_environment_images.images[0].image: [image_not_pinned]" in done.stdout
    assert not out.exists()


def test_deploy_bundle_for_the_packaged_v11_set_with_the_published_prebuilt_images(
    ws: Path, cli: Callable[..., CliResult]
) -> None:
    """The published green manifest's prebuilt map covers skillsbench-v1.1 (task_sets/ by name)."""
    import json5

    green = json5.loads(
        (PUBLISHED_DATA / "amber" / "skillsbench-agentbeats__green-agent.json5").read_text()
    )
    prebuilt = json.loads(green["program"]["env"]["SKILLSBENCH_WORKER_PREBUILT_IMAGES"])
    write(ws / "prebuilt.json", prebuilt)
    out = ws / "bundle.json"
    done = cli("deploy-bundle", "--branch-images", ws / "images.json",
               "--task-environment-images", ws / "prebuilt.json", "--output", out)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    bundle = json.loads(out.read_text())
    assert bundle["task_set"]["task_set"] == "skillsbench-v1.1"
    assert bundle["task_set"]["task_count"] == 87
    assert bundle["worker_prebuilt_images"] == prebuilt
    del prebuilt["citation-check"]
    write(ws / "prebuilt.json", prebuilt)
    done = cli("deploy-bundle", "--branch-images", ws / "images.json",
               "--task-environment-images", ws / "prebuilt.json", "--output", ws / "b2.json")  # fmt: skip
    assert done.returncode == 1
    assert (
        "[task_image_coverage] 1 of 87 tasks of 'skillsbench-v1.1' have no image: citation-check"
        in done.stdout
    )
