"""Harbor's keys and links without Harbor installed (test_harbor_readers.py reads them with
Harbor's own package): what a scored and an unscored trial carry, the run folder's link and job
config, and the task id read from old and new records."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from worker.core.failures import FailureKind
from worker.trial_record import harbor
from worker.trial_record.result import TrialResult


def _fields(tmp_path: Path, **over: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "run_id": "run-1",
        "task_id": "answer-42",
        "trial_id": "answer-42__agentbeats__0000abcd",
        "trial_dir": tmp_path / "runs" / "run-1" / "trials" / "answer-42__agentbeats__0000abcd",
        "task_set": "examples",
        "task_digest": "sha256:" + "0" * 64,
        "agent_name": "oracle",
        "model": "openai/gpt-5",
        "environment": "local",
        "rewards": {"reward": 1},
        "failure": None,
        "error": None,
        "finished_at": "2026-12-05T16:00:00.000Z",
    }
    return harbor.trial_fields(**{**args, **over})


def test_a_scored_trial_has_its_reward_and_no_exception(tmp_path: Path) -> None:
    fields = _fields(tmp_path)
    assert fields["task_id"] == {"path": "answer-42"}
    assert fields["verifier_result"] == {"rewards": {"reward": 1}}
    assert fields["exception_info"] is None
    assert fields["agent_info"]["model_info"] == {"name": "gpt-5", "provider": "openai"}
    assert fields["config"]["environment"] == {"import_path": "skillsbench-agentbeats:local"}
    assert fields["id"] == _fields(tmp_path)["id"]  # the same trial, the same UUID
    assert fields["trial_uri"].startswith("file://") and fields["trial_uri"].endswith("0000abcd")


def test_an_infrastructure_failure_is_harbors_errored_trial(tmp_path: Path) -> None:
    fields = _fields(
        tmp_path,
        rewards=None,
        failure=FailureKind.SANDBOX_BUILD,
        error="could not start",
        environment="docker",
        model=None,
    )
    assert fields["verifier_result"] is None
    assert fields["exception_info"]["exception_type"] == FailureKind.SANDBOX_BUILD.value
    assert fields["exception_info"]["exception_message"] == "could not start"
    assert fields["config"]["environment"] == {"type": "docker"}
    assert fields["agent_info"]["model_info"] is None


def test_the_run_folder_gets_a_link_per_trial_and_one_job_config_and_the_jobs_folder_a_link(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "runs" / "run-1"
    (run_dir / "trials" / "t1").mkdir(parents=True)
    first = harbor.job_config(
        run_id="run-1", runs_dir=tmp_path / "runs", agent_name="oracle", environment="local"
    )
    harbor.link_trial(run_dir, "t1", first)
    harbor.link_trial(run_dir, "t1", first)  # a second call changes nothing
    harbor.link_trial(run_dir, "t2", {"job_name": "other"})
    assert os.readlink(run_dir / "t1") == "trials/t1" and (run_dir / "t1").is_dir()
    assert os.readlink(run_dir / "t2") == "trials/t2"
    assert json.loads((run_dir / "config.json").read_text()) == first
    # The jobs folder links the run, where `harbor view <jobs>` looks for jobs.
    assert os.readlink(tmp_path / "run-1") == "runs/run-1"
    assert (tmp_path / "run-1" / "t1").resolve() == (run_dir / "trials" / "t1").resolve()


def test_a_name_at_the_top_of_the_jobs_folder_is_never_replaced(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "run-1"
    (run_dir / "trials" / "t1").mkdir(parents=True)
    (tmp_path / "run-1").write_text("the operator's file")
    harbor.link_trial(run_dir, "t1", {"job_name": "run-1"})
    assert (tmp_path / "run-1").read_text() == "the operator's file"
    assert os.readlink(run_dir / "t1") == "trials/t1"  # the run's own link is still made


def test_a_link_the_folder_refuses_is_logged_not_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "runs").write_text("a file where the runs folder should be")
    harbor.link_trial(tmp_path / "runs" / "run-1", "t1", {"job_name": "run-1"})
    assert "no Harbor link for trial t1" in caplog.text


def test_the_task_id_is_read_from_old_and_new_records() -> None:
    assert TrialResult.model_validate({"task_id": "answer-42"}).task == "answer-42"
    new = {"task_id": {"path": "answer-42"}, "task_name": "answer-42"}
    assert TrialResult.model_validate(new).task == "answer-42"
    assert TrialResult.model_validate({"task_id": {"path": "answer-42"}}).task == "answer-42"
    assert TrialResult.model_validate({}).task is None


def test_a_record_brought_back_from_a_node_names_the_runs_folder(tmp_path: Path) -> None:
    on_node = tmp_path / "node" / "runs" / "run-1" / "t1" / "trial"
    record = TrialResult(**_fields(tmp_path, trial_dir=on_node))
    here = tmp_path / "jobs" / "runs" / "run-1" / "trials" / "t1"
    harbor.relocate(record, here)
    assert record.trial_uri == here.absolute().as_uri()
    assert record.config is not None and record.config["trials_dir"] == str(here.parent)
    assert record.document()["trial_uri"] == here.absolute().as_uri()
