"""Every example task: it loads, the oracle earns reward 1, doing nothing earns 0, and the
verifiers are not fooled by cheap answers. Runs the tasks under bubblewrap (tests/task_sets/support.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from task_sets.task import discover_tasks, load_task
from tests.support import TASKS_DIR
from tests.task_sets.support import Outcome, parse_dockerfile, run_example, sandbox_problem

TASK_IDS = sorted(discover_tasks(TASKS_DIR))
REAL_CATEGORIES = {
    "software-engineering",
    "industrial-physical-systems",
    "office-white-collar",
    "natural-science",
    "finance-economics",
    "mathematics-or-formal-reasoning",
    "cybersecurity",
    "media-content-production",
}


@pytest.fixture(scope="module")
def sandbox() -> None:
    reason = sandbox_problem()
    if reason is not None:
        pytest.skip(reason)


def test_examples_are_varied() -> None:
    tasks = [load_task(TASKS_DIR / tid) for tid in TASK_IDS]
    assert 5 <= len(tasks) <= 6
    categories = {t.category for t in tasks}
    assert categories <= REAL_CATEGORIES
    assert len(categories) == len(tasks)
    assert {t.difficulty for t in tasks} == {"easy", "medium", "hard"}
    assert [t.task_id for t in tasks if t.skills_dir is not None] == ["loan-amortization-schedule"]


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_task_layout_follows_conventions(task_id: str) -> None:
    task = load_task(TASKS_DIR / task_id)
    image = parse_dockerfile(task.dockerfile)  # raises on RUN or other lines
    assert task.dockerfile.read_text().startswith("FROM python:3.11-slim\n")
    assert image.workdir in {"/root", "/app"}
    assert image.copies, "input data goes into the image with COPY"
    assert not any("skills" in source for source, _ in image.copies)
    assert task.solution_dir is not None
    assert 60 <= task.config.agent.timeout_sec <= 300
    assert task.config.verifier.timeout_sec <= 120
    assert task.config.environment.internet is False
    for script in (task.tests_dir / "test.sh", task.solution_dir / "solve.sh"):
        assert script.read_text().startswith("#!/bin/sh\n")


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_oracle_passes(task_id: str, tmp_path: Path, sandbox: None) -> None:
    outcome = run_example(TASKS_DIR / task_id, tmp_path, "oracle")
    assert outcome.reward == 1.0, outcome.verifier_output


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_doing_nothing_fails(task_id: str, tmp_path: Path, sandbox: None) -> None:
    outcome = run_example(TASKS_DIR / task_id, tmp_path, None)
    assert outcome.reward == 0.0, outcome.verifier_output


# Cheap answers a lazy agent might try: each must earn nothing (or, for the partial-credit task,
# only the credit its correct part deserves).
CHEATS = {
    "csv-sales-summary": (
        'echo \'{"total_revenue": 0, "revenue_by_region": {}, "top_region": "north"}\' '
        "> /root/summary.json",
        0.0,
    ),
    "fix-interval-merge": ("echo 'def merge_intervals(i):\n    return i' > /app/intervals.py", 0.0),
    "half-life-fit": ("echo 7.7 > /root/half_life.txt", 0.0),
    "grid-path-count": ("echo 1 > /root/answer.txt", 0.0),
    # Everything right but the skill's TOTAL row: the skill is needed.
    "loan-amortization-schedule": (
        "sh /solution/solve.sh && sed -i '/^TOTAL/d' /root/schedule.csv",
        0.0,
    ),
    # Two of three keys right: two thirds of the reward.
    "auth-log-triage": (
        'sh /solution/solve.sh && sed -i \'s/"deploy",/"bob",/\' /root/report.json',
        0.6667,
    ),
}


@pytest.mark.parametrize("task_id", sorted(CHEATS))
def test_cheap_answers_do_not_pass(task_id: str, tmp_path: Path, sandbox: None) -> None:
    script, expected = CHEATS[task_id]
    # The cheat scripts may call the oracle, so give them /solution through the oracle path.
    outcome = _run_script_with_solution(TASKS_DIR / task_id, tmp_path, script)
    assert outcome.reward == pytest.approx(expected), outcome.verifier_output


def test_partial_credit_reports_checks_as_numbers(tmp_path: Path, sandbox: None) -> None:
    outcome = _run_script_with_solution(
        TASKS_DIR / "auth-log-triage",
        tmp_path,
        "sh /solution/solve.sh && sed -i 's/: 8/: 7/' /root/report.json",
    )
    assert outcome.reward == pytest.approx(0.6667)
    # reward.json is a map of numbers only, as Harbor and BenchFlow read it.
    assert outcome.details == {
        "reward": 0.6667,
        "check_brute_force_ips": 1.0,
        "check_failed_attempts": 0.0,
        "check_compromised_accounts": 1.0,
    }
    assert all(type(value) is float for value in outcome.details.values())


def test_skill_is_mounted_for_the_agent(tmp_path: Path, sandbox: None) -> None:
    # An agent that follows the skill file it finds at /skills gets the convention right.
    outcome = _run_script_with_solution(
        TASKS_DIR / "loan-amortization-schedule",
        tmp_path,
        "grep -q 'TOTAL,<sum of payments>' /skills/amortization-schedules/SKILL.md "
        "&& sh /solution/solve.sh",
    )
    assert outcome.reward == 1.0, outcome.verifier_output


def _run_script_with_solution(task_dir: Path, scratch: Path, script: str) -> Outcome:
    wrapped = scratch / "task"
    # The runner binds solution/ only for "oracle"; a copy whose solve.sh is the script does the same.
    shutil.copytree(task_dir, wrapped)
    original = wrapped / "solution" / "original.sh"
    (wrapped / "solution" / "solve.sh").rename(original)
    (wrapped / "solution" / "solve.sh").write_text(
        "#!/bin/sh\nset -e\n" + script.replace("/solution/solve.sh", "/solution/original.sh") + "\n"
    )
    return run_example(wrapped, scratch / "run", "oracle")


def test_agent_phase_sees_no_tests(tmp_path: Path, sandbox: None) -> None:
    # The stand-in keeps the worker's rule: tests/ appears only after the agent has finished.
    outcome = run_example(
        TASKS_DIR / "csv-sales-summary",
        tmp_path,
        "ls /tests > /root/seen.txt 2>&1; cat /tests/sales.csv >> /root/seen.txt 2>&1; true",
    )
    seen = (outcome.workspace / "seen.txt").read_text()
    assert "No such file" in seen and "region" not in seen
    assert outcome.reward == 0.0
