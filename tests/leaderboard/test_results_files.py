"""The query runner reads all three results-file shapes the same way, names unreadable files,
and the CLI (`leaderboard query|validate`) reports errors on one line without a traceback."""

from __future__ import annotations

import glob
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from leaderboard.query import connect, load_results, run_queries
from leaderboard.results_files import detect_shape
from leaderboard.validate import validate_results, validate_results_file
from tests.leaderboard.support import write_json
from tests.support import PUBLISHED_DATA, REPO_ROOT

PUBLISHED = sorted(PUBLISHED_DATA.glob("*__results__*.json"))
QUICK_SUBMIT = PUBLISHED_DATA / (
    "benchflow-ai__skillsbench-leaderboard__results__019e515b-26ad-7510-983f-f8f9f2db5ac6.json"
)
AGENT = "019e4ed1-d333-7133-807f-5f22c04d5eef"


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", *args],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
    )


def test_shapes_are_detected() -> None:
    published = _load(QUICK_SUBMIT)
    assert detect_shape(published) == "published"
    assert (
        detect_shape({"status": "completed", "results": published["results"]}) == "gateway_export"
    )
    assert detect_shape(published["results"][0]) == "envelope"
    for bad, reason in [
        ([], "not an object"),
        ({"status": "completed"}, "no 'results' list"),
        ({"results": [1]}, "results[0] is a number"),
        ({"results": [{"task_id": "a"}, {"results": []}]}, "mixes rows"),
        ({"results": [{"status": "completed"}]}, "neither task_id"),
    ]:
        with pytest.raises(ValueError, match=reason.replace("[", r"\[").replace("]", r"\]")):
            detect_shape(bad)


def test_three_shapes_give_the_published_tables(tmp_path: Path) -> None:
    expected = run_queries([str(QUICK_SUBMIT)])
    published = _load(QUICK_SUBMIT)
    # The gateway's export: no top-level participants; the envelope names the agent's URL.
    write_json(tmp_path / "export.json", {"status": "completed", "results": published["results"]})
    write_json(tmp_path / "envelope.json", published["results"][0])
    for name in ("export.json", "envelope.json"):
        got = run_queries([str(tmp_path / name)], participant=AGENT)
        assert got == expected, name
    # Without --participant a URL (Amber's shared proxy address) names no agent: refused, with
    # the command that fixes it, so two agents' runs never merge into one leaderboard row.
    for name in ("export.json", "envelope.json"):
        with pytest.raises(ValueError, match=r"not its AgentBeats id.*leaderboard aggregate"):
            run_queries([str(tmp_path / name)], ["overall"])


def test_mixed_shapes_load_together_with_original_filenames(tmp_path: Path) -> None:
    published = _load(QUICK_SUBMIT)
    export = write_json(
        tmp_path / "b" / "export.json", {"status": "completed", "results": published["results"]}
    )
    envelope = write_json(tmp_path / "b" / "envelope.json", published["results"][0])
    con = connect()
    loaded = load_results(con, [str(p) for p in PUBLISHED] + [str(tmp_path / "b")], AGENT)
    assert loaded.rewritten == 2
    names = {r[0] for r in con.execute("SELECT filename FROM results").fetchall()}
    assert names == {str(p) for p in PUBLISHED} | {str(export), str(envelope)}
    overall = con.execute("SELECT count(*) FROM results").fetchone()
    assert overall == (5,)


def test_gateway_export_with_two_agents_is_split(tmp_path: Path) -> None:
    published = _load(QUICK_SUBMIT)
    env = {**published["results"][0], "participants": {"agent": AGENT}}
    other = {**env, "participants": {"agent": "019e5799-ca68-7b33-b1a5-c97b92b6fda1"}}
    write_json(tmp_path / "x.json", {"status": "completed", "results": [env, other]})
    overall = run_queries([str(tmp_path / "x.json")], ["overall"])["overall"]
    assert {row[0] for row in overall.rows} == {AGENT, other["participants"]["agent"]}


def test_an_export_naming_agents_by_url_is_refused_not_merged(tmp_path: Path) -> None:
    """Two agents behind Amber's one proxy URL would become one leaderboard row."""
    published = _load(QUICK_SUBMIT)
    env = published["results"][0]
    assert env["participants"]["agent"].startswith("http://")
    write_json(tmp_path / "x.json", {"status": "completed", "results": [env, env]})
    with pytest.raises(ValueError, match=r"results\[0\]: names the agent as 'http://"):
        run_queries([str(tmp_path / "x.json")], ["overall"])


def test_names_with_glob_characters_name_only_themselves(tmp_path: Path) -> None:
    """``[1]`` in a file or folder name is part of the name, for our glob and for DuckDB's."""
    smoke, canonical = PUBLISHED[1], PUBLISHED[2]
    named = tmp_path / "smoke[1].json"
    write_json(named, _load(smoke))
    write_json(tmp_path / "smoke1.json", _load(canonical))  # what "smoke[1].json" globs to
    con = connect()
    try:
        load_results(con, [glob.escape(str(named))])
        names = {row[0] for row in con.execute("SELECT DISTINCT filename FROM results").fetchall()}
    finally:
        con.close()
    assert names == {str(named)}
    got = run_queries([glob.escape(str(named))])
    expected = run_queries([str(smoke)])
    assert {n: r.rows for n, r in got.items()} == {n: r.rows for n, r in expected.items()}
    folder, decoy = tmp_path / "run[1]", tmp_path / "run1"
    folder.mkdir()
    decoy.mkdir()
    write_json(folder / "a.json", _load(smoke))
    write_json(folder / "b.json", _load(canonical))
    write_json(decoy / "c.json", _load(canonical))
    both = run_queries([str(folder)])["overall"].rows  # the folder's two files, not run1's
    assert both == run_queries([str(smoke), str(canonical)])["overall"].rows


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "not a results file: top level is a list"),
        pytest.param("[" * 100_000 + "]" * 100_000, "nested too deeply to read", id="deep"),
        ('{"status": "completed", "results": "x"}', "no 'results' list"),
        (
            '{"status": "completed", "results": [{"status": "completed", "results": []}]}',
            "pass --participant",
        ),
    ],
)
def test_unreadable_files_are_named(tmp_path: Path, content: str, message: str) -> None:
    bad = tmp_path / "bad-file.json"
    bad.write_text(content)
    with pytest.raises(ValueError, match=message) as info:
        run_queries([str(bad)])
    assert str(bad) in str(info.value)


def test_empty_glob_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no results files match"):
        run_queries([str(tmp_path / "*.json")])
    with pytest.raises(ValueError, match="not found"):
        run_queries([str(tmp_path / "missing.json")])


def test_cli_query_formats() -> None:
    pattern = str(PUBLISHED_DATA / "*__results__*.json")
    table = cli("leaderboard", "query", "--results", pattern, "--query", "overall")
    assert table.returncode == 0, table.stderr
    # For reading: the report's wording and units (two heading lines: name, unit), mean reward
    # in % as the pass rate, time per task (940.6 s over 7 tasks), the 95% interval.
    names, units, rule, first, _ = table.stdout.splitlines()
    assert re.split(r"\s{2,}", names) == [
        "Agent",
        "Tasks passed",
        "Pass rate",
        "Mean reward",
        "Time per task",
        "Tasks",
        "Infra failed",
        "95% CI of pass rate",
    ]
    assert re.split(r"\s{2,}", units) == [
        "(AgentBeats id)",
        "(passed/eligible)",
        "(%)",
        "(%)",
        "(s, mean)",
        "(count)",
        "(count)",
        "(%)",
    ]
    assert set(rule) == {"-", " "}
    assert re.split(r"\s{2,}", first) == [
        "019e5799-ca68-7b33-b1a5-c97b92b6fda1",
        "1/7",
        "14.3",
        "14.3",
        "134.4",
        "7",
        "0",
        "2.6 – 51.3",
    ]
    out = cli("leaderboard", "query", "--results", pattern, "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) == {"overall", "by_category", "by_difficulty"}
    assert data["overall"][1] == {
        "id": AGENT,
        "Tasks passed": "0/5",
        "Pass Rate": 0.0,
        "Mean Reward": 0.0,
        "Time": 319.0,
        "# Tasks": 5,
        "Infra Failed": 0,
    }
    csv_out = cli(
        "leaderboard", "query", "--results", pattern, "--query", "by_difficulty", "--format", "csv"
    )
    assert (
        csv_out.stdout.splitlines()[0]
        == "id,Difficulty,Tasks passed,Pass Rate,Mean Reward,Time,# Tasks,Infra Failed"
    )
    md = cli(
        "leaderboard", "query", "--results", pattern, "--query", "overall", "--format", "markdown"
    )
    assert (
        md.stdout.splitlines()[2]
        == "| 019e5799-ca68-7b33-b1a5-c97b92b6fda1 | 1/7 | 14.3 | 0.143 | 940.6 | 7 | 0 |"
    )


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    empty = cli("leaderboard", "query", "--results", str(tmp_path / "*.json"))
    assert empty.returncode == 2
    assert empty.stderr.strip().count("\n") == 0 and "no results files match" in empty.stderr
    (tmp_path / "broken.json").write_text("{")
    broken = cli("leaderboard", "query", "--results", str(tmp_path / "broken.json"))
    assert broken.returncode == 2 and "broken.json: not JSON" in broken.stderr
    assert "Traceback" not in broken.stderr
    bad_uuid = cli("leaderboard", "query", "--results", str(QUICK_SUBMIT), "--participant", "nope")
    assert bad_uuid.returncode == 2 and "not an AgentBeats UUID" in bad_uuid.stderr


# --- validator ---------------------------------------------------------------------------------


def test_validator_accepts_published_and_sample_files() -> None:
    for path in [*PUBLISHED, *sorted((REPO_ROOT / "leaderboard" / "results").glob("*.json"))]:
        assert validate_results(_load(path), contract=True) == [], path


def test_validator_lists_every_violation_with_its_path() -> None:
    data = _load(QUICK_SUBMIT)
    data["participants"]["agent"] = "http://127.0.0.1:8080/agent"
    rows = data["results"][0]["results"]
    rows[0]["score_eligible"] = "yes"
    rows[1]["reward"] = None
    del rows[2]["time_used"]
    rows[3]["category"] = 7
    data["results"].append({"task_id": "legacy", "score_eligible": True})
    data["results"].append({"status": "completed", "results": []})
    found = [str(v) for v in validate_results(data)]
    assert found == [
        "$.participants.agent: must be an AgentBeats UUID",
        "$.results[0].results[0].score_eligible: must be a boolean",
        "$.results[0].results[1].reward: must be a number",
        "$.results[0].results[2].time_used: is missing (a number or null)",
        "$.results[0].results[3].category: must be a string or null",
        "$.results[1]: uses the legacy direct-row shape; wrap rows under $.results[1].results",
        "$.results[2].results: must be a non-empty list of task rows",
    ]


def test_validator_rejects_legacy_and_empty_files() -> None:
    legacy = {
        "status": "completed",
        "participants": {"agent": AGENT},
        "results": [{"task_id": "x"}],
    }
    assert "legacy direct-row shape" in str(validate_results(legacy)[0])
    assert [
        str(v)
        for v in validate_results(
            {"status": "completed", "participants": {"agent": AGENT}, "results": []}
        )
    ] == ["$.results: must be a non-empty list of shard results"]
    assert [str(v) for v in validate_results([])] == ["$: must be an object"]


def test_validator_names_a_file_nested_too_deeply(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert [str(v) for v in validate_results_file(deep)] == ["$: JSON nested too deeply to read"]


def test_validator_contract_mode_checks_rows() -> None:
    data = _load(QUICK_SUBMIT)
    data["results"][0]["results"][0]["artifact_refs"] = ["s3://private/proof.json"]
    data["results"][0]["results"][1]["passed"] = True
    data["extra"] = 1
    assert validate_results(data) == []
    found = [str(v) for v in validate_results(data, contract=True)]
    assert found[0] == "$.extra: is not an approved top-level key"
    assert found[1].startswith("$.results[0].results[0].artifact_refs: ")
    assert (
        found[2].startswith("$.results[0].results[1]: ")
        and "passed requires reward > 0" in found[2]
    )


def test_validator_paths_are_findings_json_paths() -> None:
    """Keys that are not bare names are quoted, list items indexed, as in readiness findings."""
    data = _load(QUICK_SUBMIT)
    data["odd key"] = 1
    row = data["results"][0]["results"][0]
    row["tags"] = ["ok", 5]
    row["rollout.dir"] = "x"
    found = [str(v) for v in validate_results(data, contract=True)]
    assert found[0] == '$["odd key"]: is not an approved top-level key'
    paths = {v.split(": ", 1)[0] for v in found[1:]}
    assert paths == {
        "$.results[0].results[0].tags[1]",
        '$.results[0].results[0]["rollout.dir"]',
    }, found


def test_cli_validate(tmp_path: Path) -> None:
    ok = cli("leaderboard", "validate", *[str(p) for p in PUBLISHED])
    assert ok.returncode == 0 and ok.stdout.count("ok: ") == 3
    legacy = write_json(
        tmp_path / "legacy.json",
        {"status": "completed", "participants": {"agent": AGENT}, "results": [{"task_id": "x"}]},
    )
    bad = cli("leaderboard", "validate", str(legacy), str(PUBLISHED[0]))
    assert bad.returncode == 1
    assert f"{legacy}: $.results[0]: uses the legacy direct-row shape" in bad.stderr
    assert "1 of 2 file(s) invalid" in bad.stderr
