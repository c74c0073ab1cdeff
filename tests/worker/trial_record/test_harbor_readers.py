"""Harbor's readers read our jobs folders (issue #33 item 5), checked with Harbor's published
package (PyPI ``harbor``, Python >= 3.12) in a test-only environment outside the repository
(tests/worker/trial_record/harbor-env.sh; skipped, naming why, where it cannot be installed):
Harbor's own models (``TrialResult``, ``JobConfig``, ``JobStats``) validate and total our trials,
and ``harbor view <jobs>/runs`` (its viewer's API, over loopback) lists our runs as jobs and their
trials with their rewards, and not the private proof. BenchFlow still reads the same folders
(test_benchflow_readers.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import make_task

MAKE_ENV = Path(__file__).parent / "harbor-env.sh"

# Run in Harbor's environment: every run folder of RUNS through Harbor's models.
HARBOR_MODELS = """
import json, sys
from pathlib import Path
from harbor.models.job.config import JobConfig
from harbor.models.job.result import JobStats
from harbor.models.trial.result import TrialResult

runs = Path(sys.argv[1])
out = {}
for run in sorted(p for p in runs.iterdir() if p.is_dir()):
    JobConfig.model_validate_json((run / "config.json").read_text())
    results = [
        TrialResult.model_validate_json((trial / "result.json").read_text())
        for trial in sorted((run / "trials").iterdir())
    ]
    stats = JobStats.from_trial_results(results, n_total_trials=len(results))
    out[run.name] = {
        "trials": {
            r.trial_name: {
                "task": r.task_id.get_name(),
                "task_name": r.task_name,
                "rewards": r.verifier_result.rewards if r.verifier_result else None,
                "error": r.exception_info.exception_type if r.exception_info else None,
                "agent": r.agent_info.name,
            }
            for r in results
        },
        "completed": stats.n_completed_trials,
        "errored": stats.n_errored_trials,
    }
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def harbor() -> Path:
    """The folder of Harbor's published package's environment (``bin/harbor``, ``bin/python``)."""
    made = subprocess.run(
        ["sh", str(MAKE_ENV)], capture_output=True, text=True, timeout=900, check=False
    )
    if made.returncode != 0:
        pytest.skip(f"Harbor cannot be installed here: {made.stderr.strip()[-300:]}")
    return Path(made.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[dict[str, Any]]]]:
    """A jobs folder with two runs: a passed, a failed and an infrastructure-failed trial by the
    oracle; one trial by ``nop``. Its rows per run id."""
    root = tmp_path_factory.mktemp("harbor")
    tasks = root / "tasks"
    make_task(tasks, "answer-42")
    make_task(tasks, "wrong-answer", solve_sh="#!/bin/sh\necho 41 > /root/answer.txt\n")
    make_task(tasks, "broken-copy", dockerfile="FROM python:3.11-slim\nCOPY missing.txt /root/\n")
    jobs_dir = root / "jobs"
    rows: dict[str, list[dict[str, Any]]] = {}
    for n, (agent, ids) in enumerate(
        [("oracle", ["answer-42", "wrong-answer", "broken-copy"]), ("nop", ["answer-42"])]
    ):
        output = root / f"rows{n}.json"
        selection = [arg for tid in ids for arg in ("--task-id", tid)]
        done = _cli(
            "run", "--tasks-dir", tasks, *selection, "--agent", agent, "--environment", "local",
            "--jobs-dir", jobs_dir, "--output", output,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        run_id = next(
            p.name for p in (jobs_dir / "runs").iterdir() if p.name not in rows and p.is_dir()
        )
        rows[run_id] = json.loads(output.read_text())["results"]
    return jobs_dir, rows


def _our_failure(jobs_dir: Path, run_id: str, trial_id: str) -> str:
    """The failure kind our result.json records for the trial."""
    result = json.loads(
        (jobs_dir / "runs" / run_id / "trials" / trial_id / "result.json").read_text()
    )
    return str(result["failure"])


def _cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["skillsbench-agentbeats", *[str(a) for a in args]],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_harbor_models_validate_and_total_our_trials(
    harbor: Path, jobs: tuple[Path, dict[str, list[dict[str, Any]]]]
) -> None:
    jobs_dir, rows = jobs
    shown = subprocess.run(
        [str(harbor / "bin" / "python"), "-c", HARBOR_MODELS, str(jobs_dir / "runs")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    read = json.loads(shown.stdout)
    assert sorted(read) == sorted(rows)
    for run_id, run_rows in rows.items():
        trials = read[run_id]["trials"]
        for row in run_rows:
            trial = trials[row["trial_id"]]
            assert trial["task"] == trial["task_name"] == row["task_id"]
            if row["score_eligible"]:
                assert trial["rewards"] == {"reward": row["reward"]} and trial["error"] is None
            else:
                failure = _our_failure(jobs_dir, run_id, row["trial_id"])
                assert trial["rewards"] is None and trial["error"] == failure
        errored = sum(1 for t in trials.values() if t["error"])
        assert read[run_id]["completed"] == len(trials) and read[run_id]["errored"] == errored
    oracle = next(r for r in rows.values() if len(r) == 3)
    outcomes = {r["task_id"]: (r["passed"], r["score_eligible"]) for r in oracle}
    assert outcomes == {
        "answer-42": (True, True),
        "wrong-answer": (False, True),
        "broken-copy": (False, False),
    }


@pytest.fixture
def viewer(harbor: Path, jobs: tuple[Path, dict[str, list[dict[str, Any]]]]) -> Iterator[str]:
    """``harbor view <jobs>/runs`` (API only) on a free loopback port: its base URL."""
    yield from _serve_view(harbor, jobs[0] / "runs")


@pytest.fixture
def top_viewer(harbor: Path, jobs: tuple[Path, dict[str, list[dict[str, Any]]]]) -> Iterator[str]:
    """``harbor view <jobs>``: the jobs folder itself (Harbor finds by itself that it holds jobs)."""
    yield from _serve_view(harbor, jobs[0])


def _serve_view(harbor: Path, folder: Path) -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb"}
    command = [
        str(harbor / "bin" / "harbor"),
        "view",
        str(folder),
        "--no-build",
        "--port",
        str(port),
    ]
    server = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                _get(base, "/api/health")
                break
            except (urllib.error.URLError, ConnectionError):
                if server.poll() is not None or time.monotonic() > deadline:
                    output = server.stdout.read() if server.stdout else ""
                    pytest.fail(f"harbor view did not serve: {output!r}"[-2000:])
                time.sleep(0.2)
        yield base
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        if server.stdout:
            server.stdout.close()


def _get(base: str, path: str) -> Any:
    with urllib.request.urlopen(base + path, timeout=30) as answer:
        return json.loads(answer.read())


def test_harbor_view_lists_our_runs_and_trials_with_rewards(
    viewer: str, jobs: tuple[Path, dict[str, list[dict[str, Any]]]]
) -> None:
    jobs_dir, rows = jobs
    assert (jobs_dir / "private-proof").is_dir()  # beside runs/, never taken for a job
    listed = _get(viewer, "/api/jobs")["items"]
    assert sorted(j["name"] for j in listed) == sorted(rows)
    for job in listed:
        agent = "nop" if len(rows[job["name"]]) == 1 else "oracle"
        assert job["agents"] == [agent] and job["environment_type"] is None
    for run_id, run_rows in rows.items():
        trials = {t["name"]: t for t in _get(viewer, f"/api/jobs/{run_id}/trials")["items"]}
        folders = sorted(p.name for p in (jobs_dir / "runs" / run_id / "trials").iterdir())
        assert sorted(trials) == folders  # every attempt's folder, each once
        for row in run_rows:
            trial = trials[row["trial_id"]]
            assert trial["task_name"] == row["task_id"]
            if row["score_eligible"]:
                assert trial["reward"] == row["reward"] and trial["error_type"] is None
            else:
                failure = _our_failure(jobs_dir, run_id, row["trial_id"])
                assert trial["reward"] is None and trial["error_type"] == failure
    # A trial's own files, read through the run folder's link, as its page shows them.
    passed = next(r for rs in rows.values() for r in rs if r["passed"])
    run_id = next(k for k, rs in rows.items() if passed in rs)
    output = _get(viewer, f"/api/jobs/{run_id}/trials/{passed['trial_id']}/verifier-output")
    assert output["stdout"] is not None
    files = _get(viewer, f"/api/jobs/{run_id}/trials/{passed['trial_id']}/files")
    assert {"result.json", "config.json"} <= {f["path"] for f in files}


def test_harbor_view_of_the_jobs_folder_lists_our_runs_too(
    top_viewer: str, jobs: tuple[Path, dict[str, list[dict[str, Any]]]]
) -> None:
    """Through the jobs folder's link per run; Harbor takes every folder for a job, so ``runs``
    and ``private-proof`` are listed as well, without trials (docs/worker.md says so)."""
    jobs_dir, rows = jobs
    listed = {j["name"]: j for j in _get(top_viewer, "/api/jobs")["items"]}
    assert sorted(listed) == sorted([*rows, "runs", "private-proof"])
    for name in ("runs", "private-proof"):
        assert listed[name]["agents"] == [] and listed[name]["n_total_trials"] == 0
        assert _get(top_viewer, f"/api/jobs/{name}/trials")["items"] == []
    for run_id, run_rows in rows.items():
        trials = {t["name"]: t for t in _get(top_viewer, f"/api/jobs/{run_id}/trials")["items"]}
        folders = sorted(p.name for p in (jobs_dir / "runs" / run_id / "trials").iterdir())
        assert sorted(trials) == folders
        for row in run_rows:
            if row["score_eligible"]:
                assert trials[row["trial_id"]]["reward"] == row["reward"]
    passed = next(r for rs in rows.values() for r in rs if r["passed"])
    run_id = next(k for k, rs in rows.items() if passed in rs)
    files = _get(top_viewer, f"/api/jobs/{run_id}/trials/{passed['trial_id']}/files")
    assert {"result.json", "config.json"} <= {f["path"] for f in files}
