"""``task-set check``: the oracle and nop on every task, a verdict per task, exit 1 unless all ok.

Through the real entry point, on the example tasks and on small broken tasks made in tmp.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import REPO_ROOT, TASKS_DIR, make_task

ALWAYS_PASSES = "#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n"


def check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", "task-set", "check", *args],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=900,
    )


def _rows(stdout: str) -> dict[str, list[str]]:
    """The table's rows by task id, split on two or more spaces."""
    import re

    lines = stdout.splitlines()
    body = lines[2 : lines.index("")]
    return {cells[0]: cells for cells in (re.split(r"\s{2,}", line) for line in body)}


def _broken_tasks(root: Path, dockerfile: str = "FROM python:3.11-slim\nWORKDIR /root\n") -> Path:
    make_task(root, "good", dockerfile=dockerfile)
    make_task(
        root,
        "wrong-solution",
        solve_sh="#!/bin/sh\necho 41 > /root/answer.txt\n",
        dockerfile=dockerfile,
    )
    make_task(root, "lax-tests", test_sh=ALWAYS_PASSES, dockerfile=dockerfile)
    bad = make_task(root, "bad-toml", dockerfile=dockerfile)
    (bad / "task.toml").write_text("version = \n")
    return root


def test_the_example_tasks_are_all_ok_locally(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    done = check(
        str(TASKS_DIR), "--environment", "local", "--concurrency", "2",
        "--jobs-dir", str(tmp_path / "jobs"), "--json-report", str(report),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    rows = _rows(done.stdout)
    examples = sorted(p.name for p in TASKS_DIR.iterdir() if (p / "task.toml").is_file())
    assert sorted(rows) == examples
    assert all(row[1:6] == ["yes", "yes", "1", "0", "ok"] for row in rows.values()), rows
    document = json.loads(report.read_text())
    assert document["ok"] is True and document["environment"] == "local"
    assert [t["task_id"] for t in document["tasks"]] == examples


def test_a_broken_task_set_fails_with_the_reasons(tmp_path: Path) -> None:
    tasks = _broken_tasks(tmp_path / "tasks")
    # 51 of the 87 real test.sh run apt-get: the local sandbox says so before anything runs.
    apt = "#!/bin/bash\nset -e\nif true; then apt-get install -y curl; fi\n" + ALWAYS_PASSES
    make_task(tasks, "apt-tests", test_sh=apt.replace("#!/bin/sh\n", ""))
    report = tmp_path / "report.json"
    done = check(
        str(tasks), "--environment", "local", "--jobs-dir", str(tmp_path / "jobs"),
        "--json-report", str(report),
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1/5 tasks ok, 4 not ok" in done.stdout
    assert "the local environment can run 3 of 5 tasks; 1 need the docker environment" in (
        done.stdout
    )
    by_id = {t["task_id"]: t for t in json.loads(report.read_text())["tasks"]}
    assert by_id["good"]["verdict"] == "ok"
    wrong = by_id["wrong-solution"]
    assert wrong["verdict"] == "oracle fails" and wrong["oracle_reward"] == 0
    assert wrong["reason"].startswith("oracle reward 0: agent completed (exit 0); verifier exit 0")
    lax = by_id["lax-tests"]
    assert lax["verdict"] == "nop passes" and lax["nop_reward"] == 1
    assert "tests check too little" in lax["reason"]
    bad = by_id["bad-toml"]
    assert bad["verdict"] == "invalid" and not bad["loads"] and bad["builds"] is None
    assert "task.toml is not valid TOML" in bad["reason"]
    needs = by_id["apt-tests"]
    assert needs["verdict"] == "needs docker" and needs["builds"] is None and needs["refused"]
    assert not by_id["good"]["refused"] and not by_id["wrong-solution"]["refused"]
    assert "tests/test.sh runs apt-get, which installs system packages" in needs["reason"]
    assert needs["oracle_trial_id"] is None and needs["nop_trial_id"] is None
    assert not [d for d in (tmp_path / "jobs").rglob("apt-tests__*") if d.is_dir()]
    rows = _rows(done.stdout)
    assert (
        rows["wrong-solution"][5] == "oracle fails"
        and "verifier exit 0" in rows["wrong-solution"][6]
    )
    assert rows["bad-toml"][1:3] == ["no", "-"]
    # Progress on stderr: a line per trial as it finishes (a check can take a while).
    assert "] oracle wrong-solution#0 failed reward=0" in done.stderr
    assert "] nop lax-tests#0 passed reward=1" in done.stderr


def test_one_task_of_a_folder_and_bad_input(tmp_path: Path) -> None:
    tasks = _broken_tasks(tmp_path / "tasks")
    done = check(str(tasks), "--task-id", "good", "--jobs-dir", str(tmp_path / "jobs"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert list(_rows(done.stdout)) == ["good"]
    missing = check(str(tasks), "--task-id", "nope", "--jobs-dir", str(tmp_path / "jobs"))
    assert missing.returncode == 1 and "no task folder 'nope'" in missing.stdout


@pytest.mark.docker
def test_docker_examples_ok_and_a_build_that_fails_is_infra(
    tmp_path: Path, docker_client: Any
) -> None:
    from tests.support.docker_images import ensure_test_image

    ensure_test_image(docker_client, "python")  # also tags python:3.11-slim (no registry here)
    done = check(
        str(TASKS_DIR), "--environment", "docker", "--concurrency", "2",
        "--jobs-dir", str(tmp_path / "jobs"),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(row[1:6] == ["yes", "yes", "1", "0", "ok"] for row in _rows(done.stdout).values())
    tasks = _broken_tasks(tmp_path / "tasks")
    make_task(tasks, "failing-run", dockerfile="FROM python:3.11-slim\nRUN exit 7\n")
    report = tmp_path / "report.json"
    done = check(
        str(tasks), "--environment", "docker", "--concurrency", "2",
        "--jobs-dir", str(tmp_path / "jobs"), "--json-report", str(report),
    )  # fmt: skip
    assert done.returncode == 1
    by_id = {t["task_id"]: t for t in json.loads(report.read_text())["tasks"]}
    assert [by_id[t]["verdict"] for t in ("good", "wrong-solution", "lax-tests", "bad-toml")] == [
        "ok", "oracle fails", "nop passes", "invalid",
    ]  # fmt: skip
    failing = by_id["failing-run"]
    assert failing["verdict"] == "infra" and failing["builds"] is False
    assert "sandbox_build: image build failed" in failing["reason"]
    assert "7" in failing["reason"]
