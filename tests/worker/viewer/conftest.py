"""Fixtures of the viewer tests: real job folders, a live run, the `view` server."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import PUBLISHED_DATA
from tests.worker.viewer.support import (
    EXAMPLES,
    HOSTILE_CATEGORY,
    NOP_ID,
    ORACLE_ID,
    OUTSIDE_ID,
    SCRIPT,
    SCRIPT_NAME,
    SECRET,
    Jobs,
    LiveRun,
    Server,
    cli,
    hostile_task,
    run_rows,
    start_view,
    stop_view,
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


def _published(agent: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    envelope = {"status": "completed", "participants": {"agent": agent}, "results": rows}
    return {"status": "completed", "participants": {"agent": agent}, "results": [envelope]}


@pytest.fixture(scope="session")
def board(jobs: Jobs, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of results files: the oracle run's rows in the published shape (one category
    hostile), the nop run's as `run --output` writes them (a bare envelope), a published file of
    the real leaderboard (trials not in these job folders); beside them a text file, and a
    symlink to a results file outside the folder."""
    base = tmp_path_factory.mktemp("board")
    folder = base / "results"
    folder.mkdir()
    oracle = run_rows(jobs, "oracle")
    oracle[0] = {**oracle[0], "category": HOSTILE_CATEGORY}
    (folder / "oracle.json").write_text(json.dumps(_published(ORACLE_ID, oracle)))
    nop = {
        "status": "completed",
        "participants": {"agent": NOP_ID},
        "results": run_rows(jobs, "nop"),
    }
    (folder / "nop.json").write_text(json.dumps(nop))
    published = next(PUBLISHED_DATA.glob("*__results__019e515b*.json"))
    shutil.copy(published, folder / "published.json")
    (folder / "notes.txt").write_text("not a results file")
    outside = base / "outside.json"
    outside.write_text(json.dumps(_published(OUTSIDE_ID, run_rows(jobs, "nop"))))
    (folder / "linked.json").symlink_to(outside)
    return folder


@pytest.fixture(scope="session")
def results_server(jobs: Jobs, board: Path) -> Iterator[Server]:
    started = start_view(str(jobs.root), "--results", str(board))
    yield started
    stop_view(started)


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
    stop_view(started)
