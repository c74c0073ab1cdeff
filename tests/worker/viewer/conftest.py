"""Fixtures of the viewer tests: real job folders, a live run, the `view` server."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator

import pytest

from tests.worker.viewer.support import (
    EXAMPLES,
    SCRIPT,
    SCRIPT_NAME,
    SECRET,
    Jobs,
    LiveRun,
    Server,
    cli,
    hostile_task,
    start_view,
)


@pytest.fixture(scope="session")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Jobs:
    """Four real runs in one jobs folder: oracle and nop on two example tasks, a hostile script
    agent and the oracle on a task whose instruction and verifier print hostile text. Then, for
    the path tests: a symlink in a trial folder to a secret file outside, and a run folder that
    is a symlink to a run outside."""
    base = tmp_path_factory.mktemp("viewer")
    root = base / "jobs"
    tasks = base / "tasks"
    tasks.mkdir()
    hostile_task(tasks)
    script = base / SCRIPT_NAME
    script.write_text(SCRIPT)
    plan = {
        "oracle": ["--task-set", "examples", "--agent", "oracle"],
        "nop": ["--task-set", "examples", "--agent", "nop"],
        "script": ["--tasks-dir", str(tasks), "--agent", f"script:{script}"],
        "oracle-hostile": ["--tasks-dir", str(tasks), "--agent", "oracle"],
    }
    runs = {}
    for name, args in plan.items():
        ids = [a for t in EXAMPLES for a in ("--task-id", t)] if "examples" in args else []
        if "--tasks-dir" in args:
            ids = ["--task-id", "answer-42"]
        done = cli("run", *args, *ids, "--concurrency", "2", "--jobs-dir", str(root))
        assert done.returncode == 0, done.stdout + done.stderr
        match = re.search(r"Run folder: \S+/(run-[0-9a-f]+)", done.stdout)
        assert match, done.stdout
        runs[name] = match.group(1)
    jobs = Jobs(root, runs)
    secret = base / "secret.txt"
    secret.write_text(SECRET)
    trial = jobs.run_dir("script") / "trials" / jobs.trial_ids("script")[0]
    (trial / "agent" / "leak.txt").symlink_to(secret)
    (trial / "verifier" / "test-stderr.txt").symlink_to(secret)
    outside = base / "outside-run"
    shutil.copytree(jobs.run_dir("nop"), outside)
    doc = json.loads((outside / "run.json").read_text())
    doc["run_id"] = "run-outside0000000000"
    (outside / "run.json").write_text(json.dumps(doc))
    (root / "runs" / "run-outside0000000000").symlink_to(outside, target_is_directory=True)
    return jobs


@pytest.fixture
def live_run(jobs: Jobs) -> Iterator[Callable[[str], LiveRun]]:
    made: list[LiveRun] = []

    def make(source: str) -> LiveRun:
        run = LiveRun(jobs, source, f"run-live{os.urandom(6).hex()}")
        made.append(run)
        return run

    yield make
    for run in made:
        shutil.rmtree(run.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def server(jobs: Jobs) -> Iterator[Server]:
    started = start_view(str(jobs.root))
    yield started
    started.proc.terminate()
    try:
        started.proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        started.proc.kill()
        started.proc.wait()
