"""``leaderboard aggregate``: shard files of every shape our tools and the gateway write become one
file that passes ``leaderboard validate``, or are refused with a message saying why and how."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from leaderboard.aggregate import AggregateError, aggregate
from leaderboard.query import run_queries
from leaderboard.validate import validate_results, validate_results_file
from tests.leaderboard.support import write_json
from tests.support import PUBLISHED_DATA, REPO_ROOT, run_cli

QUICK_SUBMIT = PUBLISHED_DATA / (
    "benchflow-ai__skillsbench-leaderboard__results__019e515b-26ad-7510-983f-f8f9f2db5ac6.json"
)
AGENT = "019e4ed1-d333-7133-807f-5f22c04d5eef"
GREEN = "019e4ecb-0000-7000-8000-000000000001"
PROXY_URL = "http://127.0.0.1:8080/agent"


def _published() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(QUICK_SUBMIT.read_text())
    return data


def _gateway_exports(tmp_path: Path, shards: int) -> list[Path]:
    """The published rows split as shard k of n would hold them, each as the gateway exports it."""
    rows = [row for env in _published()["results"] for row in env["results"]]
    paths = []
    for k in range(shards):
        envelope = {
            "status": "completed",
            "participants": {"agent": PROXY_URL},
            "results": rows[k::shards],
        }
        paths.append(
            write_json(tmp_path / f"shard-{k}.json", {"status": "completed", "results": [envelope]})
        )
    return paths


def test_gateway_shards_become_a_file_the_validator_and_queries_accept(tmp_path: Path) -> None:
    result = aggregate(_gateway_exports(tmp_path, 3), agent=AGENT, green=GREEN)
    assert result.status == "completed" and result.shards == 3
    out = tmp_path / "results" / "agg.json"
    out.parent.mkdir()
    out.write_text(json.dumps(result.document))
    assert validate_results_file(out, contract=True) == []
    assert result.document["participants"] == {"green": GREEN, "agent": AGENT}
    # The same rows give the same leaderboard as the published file they came from.
    assert run_queries([str(out)]) == run_queries([str(QUICK_SUBMIT)])


def test_cli_writes_the_file_and_says_the_next_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # results/ is made: it is inside the current folder
    scenario = tmp_path / "scenario.json5"
    scenario.write_text(
        "{ // as the leaderboard repository's scenarios name the ids\n"
        f"  metadata: {{ agentbeats_ids: {{ green: '{GREEN}', baseline_agent: '{AGENT}' }} }},\n"
        "}\n"
    )
    out = tmp_path / "results" / "run.json"
    shards = _gateway_exports(tmp_path, 2)
    done = run_cli(
        capsys, "leaderboard", "aggregate", *shards, "--scenario", scenario, "--num-shards", "2",
        "--output", out,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [hint] = [line for line in done.stdout.splitlines() if line.startswith("next: ")]
    assert hint.endswith(
        f" leaderboard validate {out}"
    )  # its prefix: tests/serving/test_invocation.py
    assert json.loads(out.read_text())["participants"] == {"green": GREEN, "agent": AGENT}
    checked = run_cli(capsys, "leaderboard", "validate", "--contract", out)
    assert checked.returncode == 0 and f"ok: {out}" in checked.stdout
    # Run again: the same file is no change; a different one is refused and the file kept.
    assert run_cli(capsys, "leaderboard", "aggregate", *shards, "--agent", AGENT, "--green",
                   GREEN, "-o", out).returncode == 0  # fmt: skip
    before = out.read_bytes()
    refused = run_cli(capsys, "leaderboard", "aggregate", shards[0], "--agent", AGENT, "-o", out)
    assert refused.returncode == 2 and "exists and differs" in refused.stderr
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    assert out.read_bytes() == before


def test_run_outputs_of_a_built_in_agent_never_reach_a_leaderboard(tmp_path: Path) -> None:
    """Real ``run --output`` files (oracle, local sandbox), one per shard of the examples set:
    the harness's reference agent scores 100 %, so `aggregate` and `validate --contract` refuse
    its rows by name, and `run` does not suggest aggregating them."""
    outputs = []
    for k, task in enumerate(("csv-sales-summary", "grid-path-count")):
        outputs.append(tmp_path / f"shard-{k}.json")
        done = subprocess.run(
            [sys.executable, "-m", "skillsbench_agentbeats", "run", "--tasks-dir",
             str(REPO_ROOT / "tasks"), "--task-set", "examples", "--task-id", task,
             "--agent", "oracle", "--jobs-dir", str(tmp_path / "jobs"),
             "--output", str(outputs[-1]), "--participant-id", AGENT],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "leaderboard aggregate" not in done.stdout.split("refuses them")[-1], done.stdout
        assert "built-in agent 'oracle'" in done.stdout, done.stdout
        # Alone, a run's file is not a leaderboard file either.
        assert validate_results_file(outputs[-1]) != []
    out = tmp_path / "agg.json"
    done = subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", "leaderboard", "aggregate",
         *map(str, outputs), "--num-shards", "2", "-o", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0 and not out.exists()
    assert "'oracle' is one of the harness's built-in agents" in done.stderr, done.stderr
    # The same rows under a valid envelope: validate --contract names every one of them.
    rows = [row for path in outputs for row in json.loads(path.read_text())["results"]]
    for transport in ("oracle", "nop", "script"):
        doc = {"status": "completed", "participants": {"agent": AGENT},
               "results": [{"status": "completed", "participants": {"agent": AGENT},
                            "results": [{**r, "agent_transport": transport} for r in rows]}]}  # fmt: skip
        found = validate_results(doc, contract=True)
        assert len(found) == len(rows) and all(transport in str(v) for v in found), found
        assert validate_results(doc) == []  # the leaderboard CI's own checks do not know it


def test_a_url_names_no_agent(tmp_path: Path) -> None:
    with pytest.raises(AggregateError, match=r"they name http://127\.0\.0\.1:8080/agent.*--agent"):
        aggregate(_gateway_exports(tmp_path, 2))


def test_shards_naming_different_agents_are_refused(tmp_path: Path) -> None:
    paths = _gateway_exports(tmp_path, 2)
    for path, agent in zip(paths, (AGENT, GREEN), strict=True):
        data = json.loads(path.read_text())
        data["results"][0]["participants"]["agent"] = agent
        write_json(path, data)
    with pytest.raises(AggregateError, match="different agents"):
        aggregate(paths)


def test_a_shard_given_twice_is_refused(tmp_path: Path) -> None:
    paths = _gateway_exports(tmp_path, 2)
    with pytest.raises(AggregateError, match="a shard given twice"):
        aggregate([paths[0], paths[1], paths[0]], agent=AGENT)
    # A copy under another name, with fresh trial ids, still shares its tasks.
    data = json.loads(paths[0].read_text())
    for row in data["results"][0]["results"]:
        row["trial_id"] = row["trial_id"] + "x"
    copy_path = write_json(tmp_path / "copy.json", data)
    with pytest.raises(AggregateError, match=r"task .* is in .* a shard given twice"):
        aggregate([paths[0], copy_path], agent=AGENT)


def test_mixed_task_sets_are_refused(tmp_path: Path) -> None:
    paths = _gateway_exports(tmp_path, 2)
    data = json.loads(paths[1].read_text())
    for row in data["results"][0]["results"]:
        row["task_set_digest"] = "sha256:" + "0" * 64
    write_json(paths[1], data)
    with pytest.raises(AggregateError, match="mix task sets"):
        aggregate(paths, agent=AGENT)


def test_missing_or_failed_shards_refuse_or_make_a_partial_file(tmp_path: Path) -> None:
    paths = _gateway_exports(tmp_path, 3)
    with pytest.raises(AggregateError, match=r"1 of 3 shard.s. missing.*--allow-partial"):
        aggregate(paths[:2], agent=AGENT, num_shards=3)
    partial = aggregate(paths[:2], agent=AGENT, num_shards=3, allow_partial=True)
    assert partial.status == "partial"
    assert any("missing" in note for note in partial.notes)
    # A failed gateway task exports no results: a failed shard.
    failed = write_json(tmp_path / "failed.json", {"status": "failed", "results": []})
    with pytest.raises(AggregateError, match=r"failed.json: shard status 'failed'"):
        aggregate([*paths[:2], failed], agent=AGENT)
    doc = aggregate([*paths[:2], failed], agent=AGENT, allow_partial=True).document
    assert doc["status"] == "partial" and len(doc["results"]) == 2


def test_a_shard_that_scored_nothing_because_of_the_worker_is_a_failed_shard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A shard whose every row is a worker failure (an older green agent ended such an
    assessment 'completed') measures the worker, not the agent: refused like a failed one."""
    paths = _gateway_exports(tmp_path, 2)
    data = copy.deepcopy(json.loads(paths[1].read_text()))
    for row in data["results"][0]["results"]:
        row.update(score_eligible=False, passed=False, reward=0.0)
        row.update(infra_failure_type="worker_error", error_type="worker_error")
    rows = len(data["results"][0]["results"])
    write_json(paths[1], data)
    with pytest.raises(
        AggregateError,
        match=rf"shard-1.json: scored nothing, every trial is a worker failure \({rows} worker_error\)",
    ):
        aggregate(paths, agent=AGENT)
    done = run_cli(
        capsys, "leaderboard", "aggregate", *paths, "--agent", AGENT,
        "--output", tmp_path / "out.json",
    )  # fmt: skip
    assert done.returncode != 0 and "scored nothing" in done.stderr
    assert not (tmp_path / "out.json").exists()
    # One scored row is enough: then the worker failures are the rest's gaps, not the shard's.
    data["results"][0]["results"][0].update(
        score_eligible=True, infra_failure_type=None, error_type=None
    )
    write_json(paths[1], data)
    assert aggregate(paths, agent=AGENT).status == "completed"


def test_rows_that_break_the_contract_are_not_written(tmp_path: Path) -> None:
    paths = _gateway_exports(tmp_path, 1)
    data = copy.deepcopy(json.loads(paths[0].read_text()))
    data["results"][0]["results"][0]["reward"] = "high"
    write_json(paths[0], data)
    with pytest.raises(AggregateError, match=r"would not validate: .*reward: must be a number"):
        aggregate(paths, agent=AGENT)
