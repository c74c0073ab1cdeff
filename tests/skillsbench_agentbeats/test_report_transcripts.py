"""`leaderboard report --jobs`: a trial id of the static page links to its transcript, written
beside the page, where the job folders hold the trial (real trials of the `run` command)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.support import PUBLISHED_DATA, REPO_ROOT

AGENT = "019e5a00-0000-7000-8000-0000000000d4"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillsbench_agentbeats", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO_ROOT,
    )


def test_trial_ids_link_to_their_transcripts_where_the_job_folder_is_known(
    tmp_path: Path,
) -> None:
    jobs, rows = tmp_path / "jobs", tmp_path / "rows.json"
    ran = cli(
        "run", "--task-set", "examples", "--task-id", "csv-sales-summary", "--agent", "oracle",
        "--jobs-dir", str(jobs), "--output", str(rows), "--participant-id", AGENT,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    [trial] = [row["trial_id"] for row in json.loads(rows.read_text())["results"]]
    published = str(PUBLISHED_DATA / "*__results__019e515b*.json")
    page = tmp_path / "out" / "board.html"
    made = cli(
        "leaderboard", "report", "--results", str(rows), "--results", published,
        "--jobs", str(jobs), "--output", str(page),
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "wrote 1 transcript(s)" in made.stdout
    html = page.read_text()
    tasks = html.split('data-table="tasks"')[1].split("</table>")[0]
    links = re.findall(r'<a href="([^"]+)">([^<]+)</a>', tasks)
    assert links == [(f"board-trials/{trial}.html", trial)]
    transcript = (page.parent / "board-trials" / f"{trial}.html").read_text()
    assert trial in transcript and "csv-sales-summary" in transcript
    # A trial of the published file: shown, not linked (no job folder holds it).
    assert "citation-check__agentbeats__e2f505aa" in tasks
    # Without --jobs the page links nothing and writes no transcript.
    plain = tmp_path / "plain.html"
    assert (
        cli("leaderboard", "report", "--results", str(rows), "--output", str(plain)).returncode == 0
    )
    assert "<a href" not in plain.read_text().split('data-table="tasks"')[1]
    assert not (tmp_path / "plain-trials").exists()
