"""BenchFlow's tasks and agents work with ours unchanged (issue #24 items 4-6), through the real
``run`` and ``task-set`` commands on the local sandbox: a ``script:`` agent's output is the trial's
``agent/script.txt``; a task without ``[metadata]`` category/difficulty runs (recorded as null)
but cannot enter a task set; unknown usage is null in every file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import make_task, run_cli


def _trial(jobs: Path) -> Path:
    [trial] = jobs.glob("runs/*/trials/*")
    return trial


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def _run(capsys: pytest.CaptureFixture[str], tmp_path: Path, agent: str, *extra: str) -> Path:
    jobs = tmp_path / "jobs"
    result = run_cli(
        capsys,
        "run",
        "--tasks-dir",
        tmp_path / "tasks",
        "--task-id",
        "answer-42",
        "--agent",
        agent,
        "--environment",
        "local",
        "--jobs-dir",
        jobs,
        *extra,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return jobs


def test_script_agent_output_is_the_trials_agent_script_txt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_task(tmp_path / "tasks", "answer-42")
    script = tmp_path / "solve.sh"
    script.write_text("echo to stdout\necho to stderr >&2\necho 42 > /root/answer.txt\necho done\n")
    jobs = _run(capsys, tmp_path, f"script:{script}", "--expect", "passed")
    trial = _trial(jobs)
    assert (trial / "agent" / "script.txt").read_text() == "to stdout\nto stderr\ndone\n"
    assert not (trial / "agent" / "logs" / "script.txt").exists()
    events = [json.loads(line) for line in (trial / "trajectory" / "acp_trajectory.jsonl").open()]
    [update] = [e for e in events if e["type"] == "tool_call_update"]
    assert update["raw_output"] == {"exit_code": 0, "timed_out": False}


def _without_metadata(tasks: Path) -> None:
    toml = make_task(tasks, "answer-42") / "task.toml"
    kept = [
        line
        for line in toml.read_text().splitlines()
        if not line.startswith(("[metadata]", "category", "difficulty", "tags"))
    ]
    toml.write_text("\n".join(kept) + "\n")
    assert "category" not in toml.read_text()


def test_a_task_without_metadata_runs_with_null_category_and_difficulty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _without_metadata(tmp_path / "tasks")
    rows_file = tmp_path / "rows.json"
    jobs = _run(capsys, tmp_path, "oracle", "--expect", "passed", "--output", rows_file)
    [row] = _json(rows_file)["results"]
    assert row["passed"] is True
    assert row["category"] is None and row["difficulty"] is None
    [run_doc] = jobs.glob("runs/*/run.json")
    [entry] = _json(run_doc)["request"]["tasks"]
    assert entry["category"] is None and entry["difficulty"] is None


def test_a_task_without_metadata_cannot_enter_a_task_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _without_metadata(tmp_path / "tasks")
    built = run_cli(capsys, "task-set", "build", tmp_path / "tasks", "--name", "mine")
    assert built.returncode != 0
    assert "task.toml [metadata] needs category and difficulty to enter a task set" in (
        built.stderr
    )
    report = tmp_path / "check.json"
    checked = run_cli(
        capsys,
        "task-set",
        "check",
        tmp_path / "tasks",
        "--environment",
        "local",
        "--jobs-dir",
        tmp_path / "check-jobs",
        "--json-report",
        report,
    )
    assert checked.returncode == 1
    [task] = _json(report)["tasks"]
    assert task["oracle_reward"] == 1.0 and task["nop_reward"] == 0.0  # it ran all the same
    assert task["verdict"] == "no metadata"
    assert task["missing_metadata"] == ["category", "difficulty"]


def test_unknown_usage_is_null_in_every_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_task(tmp_path / "tasks", "answer-42")
    jobs = _run(capsys, tmp_path, "nop")
    trial = _trial(jobs)
    result = _json(trial / "result.json")
    usage = {
        k: result["agent_result"][k]
        for k in (
            "n_input_tokens",
            "n_output_tokens",
            "n_cache_read_tokens",
            "n_cache_creation_tokens",
            "total_tokens",
            "cost_usd",
            "price_source",
        )
    }
    assert usage == dict.fromkeys(usage)  # all null: nothing was measured, not "0 tokens"
    assert result["agent_result"]["usage_source"] == "unavailable"
    tracking = result["usage_tracking"]
    assert tracking["n_model_calls"] is None and tracking["n_refused_calls"] is None
    timing = _json(trial / "timing.json")
    assert timing["provider_wait"] is None and timing["agent_without_provider_wait"] is None
    assert result["timing"] == timing
