"""``skillsbench-agentbeats run``: the engine in-process, summary table, rows file, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from leaderboard.rows import Envelope, PublicRow
from tests.worker.support import make_task

PURPLE_ID = "019e4ed1-d333-7133-807f-5f22c04d5eef"


@pytest.fixture
def tasks_dir(tmp_path: Path) -> Path:
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    make_task(tasks, "answer-42")
    make_task(tasks, "answer-43")
    return tasks


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", "run", *args],
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_oracle_run_writes_rows_and_a_summary(tmp_path: Path, tasks_dir: Path) -> None:
    output = tmp_path / "rows.json"
    done = _run(
        "--tasks-dir", str(tasks_dir), "--task-id", "answer-42", "--task-id", "answer-43",
        "--agent", "oracle", "--jobs-dir", str(tmp_path / "jobs"), "--concurrency", "2",
        "--output", str(output), "--expect", "passed", "--participant-id", PURPLE_ID,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "2/2 passed" in done.stdout
    assert "[2/2]" in done.stderr  # plain progress lines when not on a terminal
    envelope = Envelope.model_validate(json.loads(output.read_text()))
    assert envelope.participants == {"agent": PURPLE_ID}
    assert [row.task_id for row in envelope.results] == ["answer-42", "answer-43"]
    assert all(row.passed for row in envelope.results)
    assert envelope.results[0].task_set == "local"
    assert envelope.results[0].task_digest is not None


def test_local_run_without_identity_keeps_the_agent_spec(tmp_path: Path, tasks_dir: Path) -> None:
    output = tmp_path / "rows.json"
    done = _run(
        "--tasks-dir", str(tasks_dir), "--task-id", "answer-42", "--agent", "nop",
        "--jobs-dir", str(tmp_path / "jobs"), "--output", str(output),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    document = json.loads(output.read_text())
    assert document["participants"] == {"agent": "nop"}
    rows = [PublicRow.model_validate(row) for row in document["results"]]
    assert [(row.task_id, row.passed, row.score_eligible) for row in rows] == [
        ("answer-42", False, True)
    ]


def test_expectation_not_met_exits_1(tmp_path: Path, tasks_dir: Path) -> None:
    done = _run(
        "--tasks-dir", str(tasks_dir), "--task-id", "answer-42", "--agent", "nop",
        "--jobs-dir", str(tmp_path / "jobs"), "--expect", "passed",
    )  # fmt: skip
    assert done.returncode == 1
    assert "0/1 passed" in done.stdout and "answer-42" in done.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--task-id", "no-such-task", "--agent", "nop"], "no-such-task"),
        (["--task-set", "no-such-set", "--agent", "nop"], "no-such-set"),
        (["--task-id", "answer-42", "--agent", "no-such-agent"], "no-such-agent"),
        (["--agent", "nop"], "--task-set or --task-id"),
    ],
)
def test_bad_input_is_one_line(
    tmp_path: Path, tasks_dir: Path, args: list[str], needle: str
) -> None:
    done = _run("--tasks-dir", str(tasks_dir), "--jobs-dir", str(tmp_path / "jobs"), *args)
    assert done.returncode == 2
    assert needle in done.stderr and "Traceback" not in done.stderr


def test_a_failed_trial_says_why(tmp_path: Path, tasks_dir: Path) -> None:
    make_task(
        tasks_dir,
        "says-why",
        solve_sh="#!/bin/sh\necho 41 > /root/answer.txt\nexit 3\n",
        test_sh="#!/bin/sh\necho collected 1 item\necho '\033[31mFAILED\033[0m expected 42'\n"
        "echo 0 > /logs/verifier/reward.txt\nexit 1\n",
    )
    done = _run(
        "--tasks-dir", str(tasks_dir), "--task-id", "says-why", "--agent", "oracle",
        "--jobs-dir", str(tmp_path / "jobs"), "--expect", "failed",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    why = "agent completed (exit 3); verifier exit 1; collected 1 item | FAILED expected 42"
    line = next(line for line in done.stdout.splitlines() if line.startswith("says-why"))
    assert line.endswith(why)
    assert done.stderr.count(why) == 1  # the progress line too


def test_infrastructure_errors_are_neither_passed_nor_failed(
    tmp_path: Path, tasks_dir: Path
) -> None:
    make_task(tasks_dir, "needs-docker", dockerfile="FROM python:3.11-slim\nRUN apt-get update\n")
    both = _run(
        "--tasks-dir", str(tasks_dir), "--task-id", "answer-42", "--task-id", "needs-docker",
        "--agent", "nop", "--jobs-dir", str(tmp_path / "jobs"), "--expect", "failed",
    )  # fmt: skip
    assert both.returncode == 1
    assert "infrastructure errors (not graded): needs-docker" in both.stderr
    assert "expected every trial" not in both.stderr  # answer-42 did fail, as expected
    line = next(line for line in both.stdout.splitlines() if line.startswith("needs-docker"))
    assert "sandbox_unsupported: task needs-docker needs the docker environment" in line
    # A run that graded nothing fails, --expect or not.
    only = _run(
        "--tasks-dir", str(tasks_dir), "--task-id", "needs-docker", "--agent", "oracle",
        "--jobs-dir", str(tmp_path / "jobs"),
    )  # fmt: skip
    assert only.returncode == 1
    assert "every trial was an infrastructure error" in only.stderr


def test_what_the_local_sandbox_cannot_run_right_is_refused_up_front(
    tmp_path: Path, tasks_dir: Path
) -> None:
    # Real SkillsBench shapes: 51 of 87 test.sh run apt-get (it would fail in place, "Unable to
    # acquire the dpkg frontend lock", and score 0); four FROM a vendor's image.
    make_task(
        tasks_dir,
        "apt-verifier",
        test_sh="#!/bin/bash\napt-get update\napt-get install -y curl\n"
        "echo 1 > /logs/verifier/reward.txt\n",
    )
    make_task(tasks_dir, "vendor-base", dockerfile="FROM jasonish/suricata:7.0.11\nWORKDIR /root\n")
    done = _run(
        "--tasks-dir", str(tasks_dir), "--task-id", "apt-verifier", "--task-id", "vendor-base",
        "--agent", "oracle", "--jobs-dir", str(tmp_path / "jobs"),
    )  # fmt: skip
    assert done.returncode == 1
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.strip()}
    assert (
        "sandbox_unsupported: task apt-verifier needs the docker environment: tests/test.sh "
        "runs apt-get, which installs system packages"
    ) in lines["apt-verifier"]
    assert (
        "task vendor-base needs the docker environment: Dockerfile FROM jasonish/suricata:7.0.11 "
        "is a specialised image"
    ) in lines["vendor-base"]
    for trial in (tmp_path / "jobs").rglob("result.json"):
        if "private-proof" in trial.parts:
            continue
        record = json.loads(trial.read_text())
        assert record["failure"] == "sandbox_unsupported" and not record["score_eligible"]
        assert record["sandbox_id"] is None and record["resources"] == {}  # nothing started


def test_an_unbuildable_task_is_tried_once_per_run(tmp_path: Path, tasks_dir: Path) -> None:
    make_task(tasks_dir, "bad-dockerfile", dockerfile="FROM python:3.11-slim\nENV\n")
    done = _run(
        "--tasks-dir", str(tasks_dir), "--task-id", "bad-dockerfile", "--agent", "oracle",
        "--num-instances", "2", "--jobs-dir", str(tmp_path / "jobs"),
    )  # fmt: skip
    assert done.returncode == 1  # nothing was graded
    (run_doc,) = (tmp_path / "jobs" / "runs").glob("*/run.json")
    trials = json.loads(run_doc.read_text())["trials"]
    errors = []
    for trial in trials.values():
        (attempt,) = trial["attempts"]  # deterministic: no retry
        assert attempt["failure"] == "sandbox_build" and "ENV needs arguments" in attempt["error"]
        errors.append(attempt["error"])
    assert sum("earlier trial of this task" in error for error in errors) == 1
    why = [line for line in done.stdout.splitlines() if line.startswith("bad-dockerfile")]
    assert len(why) == 2
    assert all("sandbox_build: task bad-dockerfile: " in line for line in why)
    assert all(line.endswith(("ENV needs arguments", "in this run)")) for line in why)


def test_overrides_are_shown_in_the_summary_and_bad_ones_refused(
    tmp_path: Path, tasks_dir: Path
) -> None:
    done = _run(
        "--tasks-dir", str(tasks_dir), "--task-id", "answer-42", "--agent", "oracle",
        "--jobs-dir", str(tmp_path / "jobs"), "--override-cpus", "0.5",
        "--override-memory-mb", "300", "--pids-limit", "512", "--expect", "passed",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        "resources changed: answer-42: cpus 1 -> 0.5 (override); "
        "memory_mb 2048 -> 300 (override)" in done.stdout
    ), done.stdout
    (result,) = (tmp_path / "jobs").glob("runs/*/trials/*/result.json")
    assert json.loads(result.read_text())["resources"]["given"] == {
        "cpus": 0.5,
        "memory_mb": 300,
        "pids": 512,
    }
    bad = _run(
        "--tasks-dir", str(tasks_dir), "--task-id", "answer-42", "--agent", "oracle",
        "--jobs-dir", str(tmp_path / "jobs"), "--pids-limit", "3",
    )  # fmt: skip
    assert bad.returncode == 2 and "pids_limit must be at least 16" in bad.stderr, bad.stderr
