"""``leaderboard/results/`` holds files from our own runs; they validate, query, and regenerate."""

from __future__ import annotations

import json
from pathlib import Path

from leaderboard.query import run_queries
from leaderboard.rows import BASE_ROW_KEYS
from leaderboard.validate import validate_results_file
from skillsbench_agentbeats.sample_results import FILES, MOCK_ID, WORKER_BACKED_ID, regenerate
from tests.support import REPO_ROOT

RESULTS = REPO_ROOT / "leaderboard" / "results"


def _rows(path: Path) -> list[dict]:  # type: ignore[type-arg]
    document = json.loads(path.read_text())
    return [row for envelope in document["results"] for row in envelope["results"]]


def _check(folder: Path) -> None:
    worker_file, mock_file = folder / FILES["worker"], folder / FILES["mock"]
    for path in (worker_file, mock_file):
        assert validate_results_file(path, contract=True) == [], path
        # No model was called: no usage figure, so no usage keys (as the published rows).
        assert all(list(row) == list(BASE_ROW_KEYS) for row in _rows(path))
    examples = json.loads((REPO_ROOT / "task_sets" / "examples.json").read_text())
    task_ids = sorted(task["task_id"] for task in examples["tasks"])
    worker_rows, mock_rows = _rows(worker_file), _rows(mock_file)
    # The placeholder does nothing: every task scored, every reward 0.
    assert sorted(r["task_id"] for r in worker_rows) == task_ids
    assert all(r["score_eligible"] and r["reward"] == 0.0 for r in worker_rows)
    # Mock mode runs nothing: rows exist but can never count.
    assert sorted(r["task_id"] for r in mock_rows) == task_ids
    assert all(
        not r["score_eligible"] and r["infra_failure_type"] == "worker_error" for r in mock_rows
    )
    overall = run_queries([str(worker_file), str(mock_file)], ["overall"], None)["overall"]
    assert [(row[0], row[1]) for row in overall.rows] == [
        (WORKER_BACKED_ID, f"0/{len(task_ids)}")
    ]  # the mock agent has no score-eligible task, so the leaderboard omits it
    assert MOCK_ID not in json.dumps(overall.rows)


def test_checked_in_own_run_results() -> None:
    _check(RESULTS)


def test_regenerate_from_our_own_runs(tmp_path: Path) -> None:
    written = regenerate(tmp_path)
    assert sorted(p.name for p in written) == sorted(FILES.values())
    _check(tmp_path)
