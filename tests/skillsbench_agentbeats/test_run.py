"""``skillsbench-agentbeats run``: the engine in-process, summary table, rows file, bad input."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from leaderboard.rows import Envelope, PublicRow
from skillsbench_agentbeats.progress import MAX_WHY_CHARS
from tests.worker.support import make_task, process_cmdlines_containing, script
from worker.runs.store import read_run_document

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
    # The summary cuts the reason so the row stays readable; the progress line has it whole.
    assert line.endswith(why[: MAX_WHY_CHARS - 1] + "…") and len(line) < 140, line
    assert "`trials show TRIAL` has the whole" in done.stdout
    assert done.stderr.count(why) == 1


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
    assert "sandbox_unsupported: task needs-docker needs the docker" in line
    # The mean reward is over what was graded (answer-42, reward 0), in %.
    assert (
        "0/2 passed, mean reward 0.0% over 1 graded, 1 infrastructure error (not graded)"
        in both.stdout.splitlines()
    )
    # A run that graded nothing fails, --expect or not.
    only = _run(
        "--tasks-dir", str(tasks_dir), "--task-id", "needs-docker", "--agent", "oracle",
        "--jobs-dir", str(tmp_path / "jobs"),
    )  # fmt: skip
    assert only.returncode == 1
    assert "every trial was an infrastructure error" in only.stderr
    # Nothing graded: said so, never "mean reward 0.000".
    assert "0/1 passed: nothing was graded, 1 infrastructure error (not graded)" in only.stdout
    assert "mean reward" not in only.stdout


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
    # The summary line starts the reason (cut to stay readable); result.json has all of it.
    assert "sandbox_unsupported: task apt-verifier needs the docker" in lines["apt-verifier"]
    assert "sandbox_unsupported: task vendor-base needs the docker" in lines["vendor-base"]
    whole = {
        "apt-verifier": "task apt-verifier needs the docker environment: tests/test.sh runs "
        "apt-get, which installs system packages",
        "vendor-base": "task vendor-base needs the docker environment: Dockerfile FROM "
        "jasonish/suricata:7.0.11 is a specialised image",
    }
    for trial in (tmp_path / "jobs").rglob("result.json"):
        if "private-proof" in trial.parts:
            continue
        record = json.loads(trial.read_text())
        assert whole[record["task_name"]] in record["error"], record
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
    # The summary cuts a long reason (the whole is in run.json, checked above, and trials show).
    assert "`trials show TRIAL` has the whole" in done.stdout


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


# ---- interrupts, resume, progress ------------------------------------------------------------


def _mounts_under(folder: Path) -> list[str]:
    """Mount points of this host's mount table inside ``folder`` (a trial's capped tmpfs)."""
    text = Path("/proc/self/mountinfo").read_text()
    return [line.split()[4] for line in text.splitlines() if str(folder) in line.split()[4]]


def _cgroups_of(run_id: str) -> list[str]:
    """The trial cgroups of ``run_id`` (walked leniently: other tests make and remove theirs)."""
    found = []
    for top, folders, _files in os.walk("/sys/fs/cgroup", onerror=lambda _exc: None):
        found += [f"{top}/{name}" for name in folders if name.startswith(f"{run_id}+")]
    return found


def _stored(jobs: Path) -> tuple[str, dict[str, Any]]:
    (folder,) = (jobs / "runs").iterdir()
    return folder.name, read_run_document(folder)


@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=["TERM", "INT", "KILL"]
)
def test_an_interrupted_run_cleans_up_and_resume_finishes_it(
    tmp_path: Path, tasks_dir: Path, signum: signal.Signals
) -> None:
    """SIGTERM and SIGINT mid-trial: the trials stop, their sandboxes go (no process, mount or
    cgroup left), exit 143/130 without a traceback, the run stored unfinished with its finished
    row kept; SIGKILL leaves what it leaves. ``run --resume`` removes it and finishes the run:
    every trial has one answer, the one given before the interrupt unchanged."""
    jobs = tmp_path / "jobs"
    marker = f"30.{time.time_ns() % 10**6:06d}"
    make_task(tasks_dir, "quick", instruction="quick: write 42 to /root/answer.txt")
    agent = script(
        tmp_path,
        "slow",
        f"grep -q quick /instruction.md || sleep {marker}\necho 42 > /root/answer.txt\n",
    )
    env = {**os.environ, "SKILLSBENCH_RUN_HEARTBEAT_SEC": "1"}
    args = ["--tasks-dir", str(tasks_dir), "--jobs-dir", str(jobs)]
    log = tmp_path / "stderr.txt"
    heartbeat = re.compile(
        r"\[1/3\] \d+s elapsed, ~\S+ left: running answer-4[23]#0 \(agent running, \d+s\)"
    )
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "skillsbench_agentbeats", "run", *args, "--task-id", "quick",
             "--task-id", "answer-42", "--task-id", "answer-43", "--agent", agent,
             "--concurrency", "2"],
            stdout=subprocess.PIPE, stderr=stderr, text=True, env=env,
        )  # fmt: skip
    try:

        def going() -> bool:
            if not list(jobs.glob("runs/*/run.json")):
                return False
            states = {k: t["state"] for k, t in _stored(jobs)[1]["trials"].items()}
            return (
                states["quick#0"] == "finished"
                and bool(process_cmdlines_containing(f"sleep {marker}"))
                # what runs is said while nothing ends (SIGKILL does not wait for it)
                and (signum == signal.SIGKILL or bool(heartbeat.search(log.read_text())))
            )

        deadline = time.monotonic() + 120
        while not going():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        run_id, before = _stored(jobs)
        interrupted = [k for k, t in before["trials"].items() if t["state"] == "running"]
        assert interrupted
        proc.send_signal(signum)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = log.read_text()
    if signum == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    else:
        assert proc.returncode == 128 + signum, err
        assert "Traceback" not in err, err
        assert f"run --resume {run_id} --jobs-dir {jobs}" in err
        # Progress a person can follow: the start line, then what runs while nothing ends.
        assert f"starting run {run_id}: 3 trials (3 tasks x 1), concurrency 2" in err
        assert process_cmdlines_containing(f"sleep {marker}") == []
        assert _mounts_under(jobs) == []
        assert _cgroups_of(run_id) == []
    stored = _stored(jobs)[1]
    assert stored["status"] == "running"  # unfinished, for a resume: never a cancelled run
    assert stored["trials"]["quick#0"]["row"] == before["trials"]["quick#0"]["row"]

    resumed = _run(*args, "--resume", run_id, "--output", str(tmp_path / "rows.json"))
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming run {run_id}" in resumed.stderr
    assert "3/3 passed" in resumed.stdout
    assert process_cmdlines_containing(f"sleep {marker}") == []
    assert _mounts_under(jobs) == [] and _cgroups_of(run_id) == []  # what SIGKILL left, reaped
    after = json.loads((jobs / "runs" / run_id / "run.json").read_text())
    assert after["status"] == "completed"
    assert after["trials"]["quick#0"]["row"] == before["trials"]["quick#0"]["row"]
    for key in interrupted:
        attempts = after["trials"][key]["attempts"]
        assert [a["outcome"] for a in attempts] == ["abandoned", "finished"]
        assert after["trials"][key]["row"]["trial_id"] == attempts[-1]["trial_id"]
    rows = json.loads((tmp_path / "rows.json").read_text())["results"]
    assert len(rows) == 3 and len({row["trial_id"] for row in rows}) == 3
    # The same run again: already ended, the same answers.
    again = _run(*args, "--resume", run_id)
    assert again.returncode == 0 and "had already ended (completed)" in again.stderr
    assert "3/3 passed" in again.stdout
    assert all(row["trial_id"].rsplit("__", 1)[1] in again.stdout for row in rows)


def _containers_of(client: Any, run_id: str) -> list[str]:
    """The containers (any state) of ``run_id`` on the engine: a sandbox's, a build's."""
    found = client.api.containers(all=True, filters={"label": [f"skillsbench.run={run_id}"]})
    return [f"{c['Names'][0]} ({c['State']})" for c in found]


@pytest.mark.docker
@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=["TERM", "INT", "KILL"]
)
def test_an_interrupted_docker_run_leaves_no_container_and_resume_finishes_it(
    tmp_path: Path, tasks_dir: Path, signum: signal.Signals, docker_client: Any
) -> None:
    """The Docker variant: SIGTERM and SIGINT mid-trial leave no container of the run (running
    or stopped), exit 143/130 without a traceback, the run stored unfinished (never
    ``cancelled``) with the interrupted attempts ``abandoned`` and the finished row kept.
    SIGKILL leaves the containers running; the next ``run`` on the jobs folder (another run)
    removes them without resuming the run; ``run --resume`` finishes it, the row given before
    the interrupt unchanged."""
    from tests.support.docker_images import ensure_test_image

    ensure_test_image(docker_client, "python")  # also tags python:3.11-slim (no registry here)
    jobs = tmp_path / "jobs"
    marker = f"30.{time.time_ns() % 10**6:06d}"
    make_task(tasks_dir, "quick", instruction="quick: write 42 to /root/answer.txt")
    agent = script(
        tmp_path,
        "slow",
        f"grep -q quick /instruction.md || sleep {marker}\necho 42 > /root/answer.txt\n",
    )
    args = ["--tasks-dir", str(tasks_dir), "--jobs-dir", str(jobs), "--environment", "docker"]
    log = tmp_path / "stderr.txt"
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "skillsbench_agentbeats", "run", *args, "--task-id", "quick",
             "--task-id", "answer-42", "--task-id", "answer-43", "--agent", agent,
             "--concurrency", "2"],
            stdout=subprocess.PIPE, stderr=stderr, text=True,
        )  # fmt: skip
    try:

        def going() -> bool:
            if not list(jobs.glob("runs/*/run.json")):
                return False
            stored = _stored(jobs)[1]
            states = {k: t["state"] for k, t in stored["trials"].items()}
            return states["quick#0"] == "finished" and (
                len(process_cmdlines_containing(f"sleep {marker}")) == 2  # in both containers
            )

        deadline = time.monotonic() + 300
        while not going():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        run_id, before = _stored(jobs)
        interrupted = [k for k, t in before["trials"].items() if t["state"] == "running"]
        assert sorted(interrupted) == ["answer-42#0", "answer-43#0"]
        assert len(_containers_of(docker_client, run_id)) == 2
        proc.send_signal(signum)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = log.read_text()
    stored = _stored(jobs)[1]
    assert stored["status"] == "running"  # unfinished, for a resume: never a cancelled run
    assert stored["trials"]["quick#0"]["row"] == before["trials"]["quick#0"]["row"]
    if signum == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
        left = _containers_of(docker_client, run_id)
        assert len(left) == 2 and all("(running)" in c for c in left), left
        # Another run on the same jobs folder removes them; it does not resume this run.
        other = _run(*args, "--task-id", "quick", "--agent", "oracle")
        assert other.returncode == 0, other.stderr
        assert _containers_of(docker_client, run_id) == []
        assert process_cmdlines_containing(f"sleep {marker}") == []
        assert read_run_document(jobs / "runs" / run_id)["status"] == "running"
    else:
        assert proc.returncode == 128 + signum, err
        assert "Traceback" not in err, err
        assert f"run --resume {run_id} --jobs-dir {jobs}" in err
        assert _containers_of(docker_client, run_id) == []
        assert process_cmdlines_containing(f"sleep {marker}") == []
        for key in interrupted:
            assert [a["outcome"] for a in stored["trials"][key]["attempts"]] == ["abandoned"]
            assert stored["trials"][key]["state"] == "queued"

    resumed = _run(*args, "--resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming run {run_id}" in resumed.stderr
    assert "3/3 passed" in resumed.stdout
    assert _containers_of(docker_client, run_id) == []
    after = read_run_document(jobs / "runs" / run_id)
    assert after["status"] == "completed"
    assert after["trials"]["quick#0"]["row"] == before["trials"]["quick#0"]["row"]
    for key in interrupted:
        attempts = after["trials"][key]["attempts"]
        assert [a["outcome"] for a in attempts] == ["abandoned", "finished"]
        assert after["trials"][key]["row"]["trial_id"] == attempts[-1]["trial_id"]


def test_resume_bad_input_is_one_line(tmp_path: Path, tasks_dir: Path) -> None:
    jobs = ["--tasks-dir", str(tasks_dir), "--jobs-dir", str(tmp_path / "jobs")]
    unknown = _run(*jobs, "--resume", "run-nope")
    assert unknown.returncode == 2 and "no run 'run-nope'" in unknown.stderr, unknown.stderr
    both = _run(*jobs, "--resume", "run-nope", "--agent", "nop")
    assert both.returncode == 2 and "drop --agent" in both.stderr
    assert "Traceback" not in unknown.stderr + both.stderr


def test_output_is_checked_before_any_trial_runs(tmp_path: Path, tasks_dir: Path) -> None:
    (tmp_path / "a-file").write_text("")
    jobs = tmp_path / "jobs"
    done = _run(
        "--tasks-dir", str(tasks_dir), "--task-id", "answer-42", "--agent", "oracle",
        "--jobs-dir", str(jobs), "--output", str(tmp_path / "a-file" / "rows.json"),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "--output" in done.stderr and "a-file" in done.stderr and "Traceback" not in done.stderr
    assert not (jobs / "runs").exists()  # no trial ran
