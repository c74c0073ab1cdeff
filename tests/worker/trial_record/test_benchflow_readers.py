"""BenchFlow's readers read our jobs folders (issue #24 item 7), checked with BenchFlow's
published package (PyPI ``benchflow``, Python >= 3.12) in a test-only environment outside the
repository (tests/worker/trial_record/benchflow-env.sh; skipped, naming why, where it cannot be installed):
``bench eval metrics JOBS`` on jobs our ``run`` produced (the example tasks with the oracle and
``nop``, and a mix of passed, failed and infrastructure-failed trials) gives our totals, and
BenchFlow's own result-file walk finds each trial once (the private proof, kept under the jobs
folder by default, is not taken for trials). BenchFlow's run-artifact validator is not in the
package (it ships with the repository's review skill), so its result.json needs are checked
here by key."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support import TASKS_DIR, make_task, run_cli

MAKE_ENV = Path(__file__).parent / "benchflow-env.sh"


@pytest.fixture(scope="module")
def bench() -> Path:
    """BenchFlow's ``bench`` CLI from its published package."""
    made = subprocess.run(
        ["sh", str(MAKE_ENV)], capture_output=True, text=True, timeout=900, check=False
    )
    if made.returncode != 0:
        pytest.skip(f"BenchFlow cannot be installed here: {made.stderr.strip()[-300:]}")
    return Path(made.stdout.strip().splitlines()[-1]) / "bin" / "bench"


def _metrics(bench: Path, jobs: Path) -> dict[str, Any]:
    env = {**os.environ, "COLUMNS": "400", "NO_COLOR": "1", "TERM": "dumb"}
    shown = subprocess.run(
        [str(bench), "eval", "metrics", str(jobs), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


def _bench_result_files(bench: Path, jobs: Path) -> list[str]:
    """The result.json files BenchFlow's own walk takes for trials."""
    code = (
        "import sys, json; from pathlib import Path;"
        "from benchflow._utils.result_paths import iter_task_result_paths as walk;"
        "print(json.dumps([str(p) for p in walk(Path(sys.argv[1]))]))"
    )
    shown = subprocess.run(
        [str(bench.parent / "python"), "-c", code, str(jobs)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return list(json.loads(shown.stdout))


def _run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, *args: str | Path
) -> tuple[Path, list[dict[str, Any]]]:
    jobs = tmp_path / name
    rows_file = tmp_path / f"{name}.json"
    result = run_cli(
        capsys,
        "run",
        *args,
        "--environment",
        "local",
        "--jobs-dir",
        jobs,
        "--output",
        rows_file,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return jobs, json.loads(rows_file.read_text())["results"]


def _our_totals(rows: list[dict[str, Any]]) -> dict[str, int]:
    return {
        "total": len(rows),
        "passed": sum(1 for r in rows if r["passed"]),
        "failed": sum(1 for r in rows if r["score_eligible"] and not r["passed"]),
        "errored": sum(1 for r in rows if not r["score_eligible"]),
    }


def _their_totals(summary: dict[str, Any]) -> dict[str, int]:
    return {
        "total": summary["total"],
        "passed": summary["passed"],
        "failed": summary["failed"],
        "errored": summary["errored"] + summary["verifier_errored"],
    }


@pytest.mark.parametrize("agent", ["oracle", "nop"])
def test_bench_eval_metrics_gives_our_totals_on_the_examples(
    bench: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], agent: str
) -> None:
    jobs, rows = _run(
        capsys,
        tmp_path,
        "jobs",
        "--tasks-dir",
        TASKS_DIR,
        "--task-set",
        "examples",
        "--agent",
        agent,
    )
    assert (jobs / "private-proof").is_dir()  # the proof sits in the jobs folder it walks
    summary = _metrics(bench, jobs)
    assert _their_totals(summary) == _our_totals(rows)
    expected = len(rows) if agent == "oracle" else 0
    assert summary["passed"] == expected and summary["total"] == len(rows) == 6
    assert sorted(summary["passed_tasks" if agent == "oracle" else "failed_tasks"]) == sorted(
        r["task_id"] for r in rows
    )
    assert len(_bench_result_files(bench, jobs)) == len(rows)


def test_bench_eval_metrics_gives_our_totals_with_failures_and_infra_errors(
    bench: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tmp_path / "tasks"
    make_task(tasks, "answer-42")
    make_task(tasks, "wrong-answer", solve_sh="#!/bin/sh\necho 41 > /root/answer.txt\n")
    make_task(tasks, "broken-copy", dockerfile="FROM python:3.11-slim\nCOPY missing.txt /root/\n")
    make_task(tasks, "no-reward", test_sh="#!/bin/sh\nexit 0\n")
    ids = ["answer-42", "wrong-answer", "broken-copy", "no-reward"]
    selection = [arg for tid in ids for arg in ("--task-id", tid)]
    jobs, rows = _run(
        capsys, tmp_path, "jobs", "--tasks-dir", tasks, *selection, "--agent", "oracle"
    )
    ours = _our_totals(rows)
    assert ours == {"total": 4, "passed": 1, "failed": 1, "errored": 2}
    summary = _metrics(bench, jobs)
    assert _their_totals(summary) == ours
    assert summary["passed_tasks"] == ["answer-42"] and summary["failed_tasks"] == ["wrong-answer"]
    assert sorted(summary["errored_tasks"] + summary["verifier_errored_tasks"]) == [
        "broken-copy",
        "no-reward",
    ]
    # What BenchFlow's artifact validator reads from each trial's result.json.
    for path in _bench_result_files(bench, jobs):
        result = json.loads(Path(path).read_text())
        assert isinstance(result["n_tool_calls"], int)
        assert result["task_name"] == result["task_id"]["path"]  # Harbor's task id object
        assert result["agent"] == "oracle" and result["agent_name"] == "oracle"
        assert "model" in result and result["started_at"] and result["finished_at"]
        if result["score_eligible"]:
            assert result["rewards"] == {"reward": result["reward"]}
        else:
            assert result["rewards"] is None and result["error"]
        if result["failure"] == "verifier_no_reward":
            assert result["verifier_error"] == result["error"]
            assert result["verifier_error_category"] == "verifier_failure"
