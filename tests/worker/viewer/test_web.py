"""The web viewer over HTTP (httpx against the real `view` server on 127.0.0.1, over job folders
made by real trials): runs and trials with their filters, one trial's page, escaping, the paths it
refuses, and the SSE stream that tells a page a run moved on."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from tests.worker.viewer.support import (
    HOSTILE,
    SECRET,
    Jobs,
    LiveRun,
    Server,
    cli,
    copy_run,
    start_view,
    stop_view,
    write_json,
)

ESCAPED = "&lt;/pre&gt;&lt;script&gt;alert(&#x27;owned&#x27;)&lt;/script&gt;"


def get(server: Server, path: str, **params: str) -> httpx.Response:
    return httpx.get(server.url + path, params=params, timeout=30)


def trial_rows(html: str) -> list[str]:
    return re.findall(r'<tr class="trial".*?</tr>', html, re.S)


def test_runs_page_lists_every_run_with_its_progress(jobs: Jobs, server: Server) -> None:
    page = get(server, "/")
    assert page.status_code == 200
    assert "default-src 'none'" in page.headers["content-security-policy"]
    for run_id in jobs.runs.values():
        assert f'data-run="{run_id}"' in page.text
    assert page.text.count('<span class="done">2/2</span>') == 2  # the example runs
    assert "run-outside" not in page.text  # a run folder linking out of the jobs folder


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, 6),
        ({"outcome": "passed"}, 3),
        ({"outcome": "failed"}, 3),
        ({"task": "csv-sales-summary"}, 2),
        ({"agent": "nop"}, 2),
        ({"agent": "oracle", "outcome": "failed"}, 0),
        ({"eligible": "yes"}, 6),
        ({"eligible": "no"}, 0),
        ({"failure": "none"}, 6),
        ({"q": "grid-path"}, 2),
        ({"q": "no such thing"}, 0),
    ],
)
def test_trials_filters(jobs: Jobs, server: Server, params: dict[str, str], expected: int) -> None:
    page = get(server, "/trials", **params)
    assert page.status_code == 200
    assert len(trial_rows(page.text)) == expected, page.text


def test_trials_of_one_run_and_sorted(jobs: Jobs, server: Server) -> None:
    run = get(server, "/trials", run=jobs.runs["nop"]).text
    assert len(trial_rows(run)) == 2 and "2/2 done" in run
    by_reward = trial_rows(get(server, "/trials", sort="reward", desc="1").text)
    rewards = [re.search(r"<td class=num>([^<]*)</td>", row).group(1) for row in by_reward]  # type: ignore[union-attr]
    assert [float(r) for r in rewards] == sorted((float(r) for r in rewards), reverse=True)
    assert rewards[0] == "100.0" and rewards[-1] == "0.0"  # in %, as `trials list` shows them


def test_trial_page_shows_every_part_escaped(jobs: Jobs, server: Server) -> None:
    trial = jobs.trial_ids("script")[0]
    page = get(server, f"/trial/0/{jobs.runs['script']}/{trial}")
    assert page.status_code == 200
    html = page.text
    # nothing the agent, the task or the agent's file name wrote became markup
    assert html.count("<script") == 1  # the viewer's own, with its nonce
    assert "<img" not in html and "alert(2)>" not in html
    assert ESCAPED in html and "&amp;amp;" in html
    # the instruction once (not again as the first user message)
    assert html.count("Write 42 to /root/answer.txt.") == 1
    # the action: its command, exit code, timing and output; the verifier; why it failed
    assert "exit 3" in html and re.search(r"\d\.\d\ds · at \+\d", html)
    assert "second line of output" in html and "Verifier output" in html
    assert 'class="badge failed"' in html and "Why:" in html
    # the other trial of the task (the oracle's), linked
    oracle = jobs.trial_ids("oracle-hostile")[0]
    assert f'/trial/0/{jobs.runs["oracle-hostile"]}/{oracle}"' in html
    # a link out of the trial folder is neither listed nor read
    assert SECRET not in html and "leak.txt" not in html


def test_the_agent_name_is_escaped_in_lists(jobs: Jobs, server: Server) -> None:
    for path in ("/", "/trials", "/compare"):
        html = get(server, path, a="agent:oracle", b="agent:nop").text
        assert "<img" not in html and "&lt;img src=x onerror=alert(2)&gt;" in html, path


def test_raw_files_only_inside_their_trial_folder(jobs: Jobs, server: Server) -> None:
    run, trial = jobs.runs["script"], jobs.trial_ids("script")[0]
    base = f"/raw/0/{run}/{trial}/"
    ok = get(server, base + "verifier/test-stdout.txt")
    assert ok.status_code == 200 and HOSTILE in ok.text
    assert ok.headers["content-type"].startswith("text/plain")
    assert ok.headers["x-content-type-options"] == "nosniff"
    for path in (
        base + "agent/leak.txt",  # a symlink to a file outside
        base + "verifier/test-stderr.txt",
        base + "%2e%2e/%2e%2e/%2e%2e/run.json",
        base + "..%2f..%2f..%2f..%2f..%2fsecret.txt",
        base + quote("/etc/passwd", safe=""),
        base + "agent/a%00b",  # a NUL in the path (was a 500)
        base + "%00",
        f"/raw/0/run-outside0000000000/{jobs.trial_ids('nop')[0]}/result.json",
        f"/raw/7/{run}/{trial}/result.json",  # no such jobs folder
        f"/trial/0/{quote('../..', safe='')}/{trial}",
    ):
        refused = httpx.get(server.url + path, timeout=30)
        assert refused.status_code == 404, path
        assert SECRET not in refused.text and "root:" not in refused.text


def test_compare_two_agents_task_by_task(jobs: Jobs, server: Server) -> None:
    page = get(server, "/compare", a="agent:oracle", b="agent:nop").text
    # the oracle also ran the hostile task, which nop did not
    assert "<span id=n-differ>3</span> of 3 task(s) differ" in page
    assert "3/3 passed, mean reward 100.0% over 3 graded" in page
    assert "0/2 passed, mean reward 0.0% over 2 graded" in page
    assert page.count('class="differs"') == 3 and page.count("passed → failed") == 2
    assert "run on one side only" in page
    same = get(server, "/compare", a=f"run:{jobs.runs['nop']}", b=f"run:{jobs.runs['nop']}")
    assert "<span id=n-differ>0</span> of 2" in same.text


def test_events_say_when_a_run_moves_on(
    jobs: Jobs, server: Server, live_run: Callable[[str], LiveRun]
) -> None:
    sig = re.search(r'data-sig="([^"]*)"', get(server, "/").text).group(1)  # type: ignore[union-attr]
    with httpx.stream("GET", server.url + "/events", params={"since": sig}, timeout=60) as events:
        assert events.headers["content-type"].startswith("text/event-stream")
        lines = events.iter_lines()
        assert next(lines).startswith("retry:")
        run = live_run("nop")  # a new run appears while the stream is open
        deadline = time.monotonic() + 60
        for line in lines:
            if line.startswith("event: change") or time.monotonic() > deadline:
                break
        assert line == "event: change"
    listed = get(server, "/trials", run=run.run_id, fragment="1").text
    assert not listed.startswith("<!DOCTYPE") and "0/2 done" in listed
    assert len(trial_rows(listed)) == 2 and 'data-outcome="queued"' in listed
    trial = run.start(run.keys[0])
    page = get(server, f"/trial/0/{run.run_id}/{trial}")
    assert page.status_code == 200 and "updates as it goes" in page.text  # running: partial
    assert 'data-outcome="running"' in get(server, "/trials", run=run.run_id).text


def test_view_refuses_a_missing_folder(tmp_path: Path) -> None:
    done = cli("view", str(tmp_path / "nowhere"), "--port", "0")
    assert done.returncode != 0 and "no such folder" in done.stderr


def test_mean_reward_is_over_the_graded_trials_in_percent(jobs: Jobs, tmp_path: Path) -> None:
    """An infrastructure error (not score-eligible) is not graded: the run's mean reward, like
    `run`'s summary ("mean reward 100.0% over 1 graded") and the leaderboard, leaves it out,
    and rewards are in % as there."""
    runs = tmp_path / "runs"
    runs.mkdir()
    folder, doc = copy_run(jobs, "oracle", runs)
    broken = next(iter(doc["trials"].values()))
    broken["row"].update(score_eligible=False, passed=False, reward=0.0)
    broken["row"].update(infra_failure_type="worker_error", error_type="worker_error")
    broken["failure"] = "worker_error"
    write_json(folder / "run.json", doc)
    server = start_view(str(tmp_path))
    try:
        home = get(server, "/").text
        row = re.search(rf'<tr data-run="{doc["run_id"]}">.*?</tr>', home, re.S)
        assert row is not None and "mean reward (%)" in home
        assert row.group(0).endswith("<td class=num>100.0</td></tr>"), row.group(0)
        listed = get(server, "/trials").text
        assert "reward (%)" in listed and 'data-outcome="error"' in listed
        side = f"run:{doc['run_id']}"
        compared = get(server, "/compare", a=side, b=side).text
        assert "1/2 passed, mean reward 100.0% over 1 graded" in compared
    finally:
        stop_view(server)


def test_view_without_jobs_waits_for_the_default_folder(jobs: Jobs, tmp_path: Path) -> None:
    """`view &` then `run` (docs/viewer.md): jobs/local does not exist until the first run
    makes it; the viewer starts anyway and lists the run once it is there."""
    server = start_view(cwd=tmp_path)
    try:
        assert "No runs yet" in get(server, "/").text
        runs = tmp_path / "jobs" / "local" / "runs"
        runs.mkdir(parents=True)
        _, doc = copy_run(jobs, "nop", runs)
        assert f'data-run="{doc["run_id"]}"' in get(server, "/").text
    finally:
        stop_view(server)


def test_each_model_call_and_its_usage_on_the_trial_page(jobs: Jobs, tmp_path: Path) -> None:
    """A trial whose agent called a model through the worker's proxy: one row per call (the
    lines llm_trajectory.jsonl holds, as the proxy writes them) with its model, status, tokens,
    cost and duration; a hostile model name stays text."""
    runs = tmp_path / "runs"
    runs.mkdir()
    folder, doc = copy_run(jobs, "nop", runs)
    trial = next(iter(doc["trials"].values()))["attempts"][-1]["trial_id"]
    calls = [
        {
            "request": {"timestamp": 1.0, "method": "POST", "body": {"model": model}},
            "response": {"timestamp": 2.0, "status_code": status, "body": {}},
            "duration_ms": ms,
            "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1]},
            "metadata": {"request_model": model, "cost_usd": cost},
        }
        for model, status, ms, tokens, cost in (
            ("gpt-test", 200, 812.5, (1200, 34), 0.0021),
            (HOSTILE, 429, 15.0, (0, 0), None),
        )
    ]
    lines = "".join(json.dumps(call) + "\n" for call in calls)
    (folder / "trials" / trial / "trajectory" / "llm_trajectory.jsonl").write_text(lines)
    server = start_view(str(tmp_path))
    try:
        html = get(server, f"/trial/0/{folder.name}/{trial}").text
        section = html.split("<h2>Model calls and usage</h2>")[1].split("<h2>")[0]
        rows = re.findall(r"<tr><td>.*?</tr>", section)
        assert rows[0] == (
            "<tr><td>1</td><td>gpt-test</td><td>200</td><td>1200</td><td>34</td>"
            "<td>0.0021</td><td>812.5</td></tr>"
        )
        assert rows[1].startswith("<tr><td>2</td><td>&lt;/pre&gt;&lt;script&gt;")
        assert "<td>429</td>" in rows[1] and len(rows) == 2
        assert html.count("<script") == 1
    finally:
        stop_view(server)
