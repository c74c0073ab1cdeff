"""Our leaderboard queries give the same table as the published ones: on the published results
files and on generated ones (agents, shards, duplicate tasks, infra failures, nulls, types)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leaderboard.query import QUERY_NAMES, connect, load_results, query_sql, run_queries, run_query
from leaderboard.rows import FAILURE_CATEGORIES
from leaderboard.sample import write_sample
from tests.support import PUBLISHED_DATA, REPO_ROOT

PUBLISHED_RESULTS = str(PUBLISHED_DATA / "*__results__*.json")


def published_sql(name: str) -> str:
    return (
        PUBLISHED_DATA / f"benchflow-ai__skillsbench-agentbeats__queries__{name}.sql"
    ).read_text()


def _table(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[Any, ...]:
    cursor = con.execute(sql)
    rows = cursor.fetchall()
    return (tuple((d[0], str(d[1])) for d in cursor.description or []), rows)


def assert_same_tables(pattern: str) -> None:
    con = connect()
    # One thread: float sums are then order-stable, so both queries add in the same order.
    con.execute("SET threads = 1")
    con.execute(
        "CREATE TABLE results AS SELECT * FROM read_json_auto($p, filename = true)", {"p": pattern}
    )
    for name in QUERY_NAMES:
        try:
            expected = _table(con, published_sql(name))
        except duckdb.Error as exc:
            with pytest.raises(duckdb.Error):
                _table(con, query_sql(name))
            print(f"published {name} fails on this input: {exc}")
            continue
        assert _table(con, query_sql(name)) == expected, name
    con.close()


def test_ours_are_not_copies() -> None:
    for name in QUERY_NAMES:
        ours = " ".join(query_sql(name).split())
        theirs = " ".join(published_sql(name).split())
        assert ours != theirs


def test_published_files_same_tables() -> None:
    assert_same_tables(PUBLISHED_RESULTS)


def test_published_files_expected_overall() -> None:
    # tests/data/published/README.md
    overall = run_queries([PUBLISHED_RESULTS], ["overall"])["overall"]
    assert overall.columns == (
        "id",
        "Tasks passed",
        "Pass Rate",
        "Mean Reward",
        "Time",
        "# Tasks",
        "Infra Failed",
    )
    assert overall.rows == (
        ("019e5799-ca68-7b33-b1a5-c97b92b6fda1", "1/7", 14.3, 0.143, 940.6, 7, 0),
        ("019e4ed1-d333-7133-807f-5f22c04d5eef", "0/5", 0.0, 0.0, 319.0, 5, 0),
    )


def test_sample_results_same_tables() -> None:
    sample = REPO_ROOT / "leaderboard" / "results"
    assert sorted(sample.glob("*.json")), "leaderboard/results/ holds the sample results"
    assert_same_tables(str(sample / "*.json"))
    tables = run_queries([str(sample)])
    assert all(tables[name].rows for name in QUERY_NAMES)


@pytest.mark.parametrize("seed", range(4))
def test_synthetic_full_runs_same_tables(seed: int, tmp_path: Path) -> None:
    # Long multi-shard runs: time sums land on rounding boundaries, which only agree when both
    # queries add the rows in the same order.
    manifest = json.loads(
        (
            PUBLISHED_DATA
            / "benchflow-ai__skillsbench-agentbeats__task_sets__skillsbench-v1.1.json"
        ).read_text()
    )
    write_sample(manifest, tmp_path, seed=seed)
    assert_same_tables(str(tmp_path / "*.json"))


# --- generated results files -------------------------------------------------------------------

TASKS = [f"task-{i}" for i in range(8)]
CATEGORIES = ["office-white-collar", "software-engineering", "natural-science"]
agent_ids = st.one_of(
    st.uuids().map(str),
    st.uuids().map(lambda u: str(u).upper()),
    st.sampled_from(["", "http://127.0.0.1:8080/agent"]),
    st.none(),
)


@st.composite
def rows(draw: st.DrawFn, int_times: bool, all_null_failure: bool) -> dict[str, Any]:
    eligible = draw(st.sampled_from([True, True, True, False, None]))
    time_used = draw(
        st.none()
        | (st.integers(0, 900) if int_times else st.integers(0, 900_000).map(lambda n: n / 1000))
    )
    failure = None if all_null_failure else draw(st.none() | st.sampled_from(FAILURE_CATEGORIES))
    return {
        "task_id": draw(st.sampled_from(TASKS) | st.none()),
        "trial_id": "t",
        "score_eligible": eligible,
        "passed": draw(st.sampled_from([True, False, None])),
        "reward": draw(st.sampled_from([0.0, 0.25, 0.5, 1.0, None])),
        "time_used": time_used,
        "category": draw(st.sampled_from([*CATEGORIES, None])),
        "difficulty": draw(st.sampled_from(["easy", "medium", "hard", None])),
        "infra_failure_type": failure,
        "error_type": failure,
    }


@st.composite
def results_files(draw: st.DrawFn) -> list[dict[str, Any]]:
    int_times = draw(st.booleans())
    all_null_failure = draw(st.booleans())
    agents = draw(st.lists(agent_ids, min_size=1, max_size=4))
    files = []
    for _ in range(draw(st.integers(1, 5))):
        agent = draw(st.sampled_from(agents))
        shards = [
            {
                "status": "completed",
                "participants": {"agent": "http://127.0.0.1:8080/agent"},
                "results": draw(st.lists(rows(int_times, all_null_failure), max_size=6)),
            }
            for _ in range(draw(st.integers(1, 3)))
        ]
        participants: dict[str, Any] = {"agent": agent}
        if draw(st.booleans()):
            participants = {"green": draw(st.uuids().map(str)), **participants}
        files.append(
            {
                "status": draw(st.sampled_from(["completed", "completed", "partial", "failed"])),
                "participants": participants,
                "results": shards,
            }
        )
    # At least one row somewhere, so DuckDB can infer the row struct.
    files[0]["results"][0]["results"].append(draw(rows(int_times, all_null_failure)))
    return files


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(results_files())
def test_generated_files_same_tables(files: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for index, data in enumerate(files):
            Path(tmp, f"r{index}.json").write_text(json.dumps(data))
        assert_same_tables(str(Path(tmp) / "*.json"))


def test_runner_loads_like_read_json_auto() -> None:
    con = connect()
    load_results(con, [PUBLISHED_RESULTS])
    files = sorted(r[0] for r in con.execute("SELECT filename FROM results").fetchall())
    assert files == sorted(str(p) for p in PUBLISHED_DATA.glob("*__results__*.json"))
    assert run_query(con, "overall").rows[0][0] == "019e5799-ca68-7b33-b1a5-c97b92b6fda1"


def _other_shape(data: dict[str, Any], how: int) -> dict[str, Any]:
    """The same content as a gateway export (how=0) or, for one shard, a bare envelope."""
    agent = data["participants"]["agent"]
    envelopes = [{**env, "participants": {"agent": agent}} for env in data["results"]]
    if how == 1 and len(envelopes) == 1:
        return {
            "status": data["status"],
            **{k: envelopes[0][k] for k in ("participants", "results")},
        }
    return {"status": data["status"], "results": envelopes}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(results_files(), st.lists(st.integers(0, 2), min_size=5, max_size=5))
def test_runner_reads_every_shape_alike(files: list[dict[str, Any]], hows: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        original, converted = Path(tmp, "original"), Path(tmp, "converted")
        original.mkdir()
        converted.mkdir()
        for index, (data, how) in enumerate(zip(files, hows, strict=False)):
            Path(original, f"r{index}.json").write_text(json.dumps(data))
            agent = data["participants"]["agent"]
            keep = how == 2 or not isinstance(agent, str) or not agent.strip()
            doc = data if keep else _other_shape(data, how)
            Path(converted, f"r{index}.json").write_text(json.dumps(doc))
        try:
            expected = run_queries([str(original)])
        except ValueError:
            with pytest.raises(ValueError):
                run_queries([str(converted)])
            return
        got = run_queries([str(converted)])
        for name in QUERY_NAMES:
            assert (got[name].columns, got[name].rows) == (
                expected[name].columns,
                expected[name].rows,
            ), name
