"""Usage a purple agent reports about itself (``usage`` on its replies) through the real bridge and
the worker's engine: summed over the trial, recorded as ``participant_reported``, shown by the run
summary, ``trials show`` and ``trials requests``; unknown stays null; a malformed object is a
participant error naming the field."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from leaderboard.report import build_report
from leaderboard.rows import BASE_ROW_KEYS, ROW_KEYS, USAGE_KEYS, PublicRow
from tests.worker.support import TASKS as OUR_TASKS
from tests.worker.support import purple_server, run_cli

CLI = "import sys; from skillsbench_agentbeats.cli import main; main(sys.argv[1:])"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLI, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )


def run_with(tmp: Path, mode: str, *extra: str) -> tuple[subprocess.CompletedProcess[str], dict]:  # type: ignore[type-arg]
    with purple_server(mode) as url:
        done, results = run_cli(
            tmp, "--tasks-dir", str(OUR_TASKS), "--task-id", "write-answer",
            "--agent", f"a2a:{url}", *extra,
        )  # fmt: skip
    [result] = results
    return done, result


def test_reported_usage_is_summed_and_shown_as_the_participant_s(tmp_path: Path) -> None:
    done, result = run_with(tmp_path, "usage")
    assert done.returncode == 0, done.stdout + done.stderr
    assert result["passed"] is True, result
    agent = result["agent_result"]
    assert agent["usage_source"] == "participant_reported"
    reported = agent["participant_usage"]
    assert reported == {
        "n_replies": 4,
        "n_replies_with_usage": 3,
        "n_replies_without_usage": 1,
        "models": ["m-1"],
        "calls": 4,
        "input_tokens": 175,
        "output_tokens": 20,
        "cost_usd": 0.0015,  # the known part: one reply gave no cost
        "n_unknown": {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 1},
    }
    # Headline numbers: complete sums only; the cost one reply left out stays unknown.
    assert (agent["n_input_tokens"], agent["n_output_tokens"], agent["total_tokens"]) == (
        175,
        20,
        195,
    )
    assert agent["n_model_calls"] == 4
    assert agent["cost_usd"] is None and agent["price_source"] is None
    assert agent["n_cache_read_tokens"] is None  # never reported: unknown, not 0
    # Never taken for measured usage.
    assert result["usage_tracking"]["usage_source"] == "participant_reported"
    assert result["usage_tracking"]["model_access"] == "external"
    assert "Participant-reported usage (1 of 1 trial(s)" in done.stdout
    assert "195 tokens, cost unknown" in done.stdout

    [folder] = list((tmp_path / "jobs").glob("runs/*/trials/*"))
    shown = cli("trials", "show", str(folder))
    assert shown.returncode == 0, shown.stderr
    assert "Reported:  4 model call(s), 175 in, 20 out, $0.0015 (m-1)" in shown.stdout
    assert "reported on 3 of 4 replies; unknown: cost_usd on 1" in shown.stdout
    assert "(reported by the participant, not measured by the worker)" in shown.stdout
    assert "Message:   (the agent's final message)\n      | done" in shown.stdout
    page = tmp_path / "view.html"
    viewed = cli("trials", "view", str(folder), "-o", str(page))
    assert viewed.returncode == 0, viewed.stderr
    html = page.read_text()
    assert "Reported by the participant" in html and "<td>m-1</td><td>2</td><td>100</td>" in html
    final = html.split("<h2>Agent's final message</h2>")[1]
    assert final.startswith("\n<pre>done</pre>")
    assert html.count('class="step action') == 3  # exec, exec, read_file
    assert html.count("<div class=muted>content read</div>") == 1  # what read_file read
    requests = cli("trials", "requests", str(tmp_path / "jobs"))
    assert requests.returncode == 0, requests.stderr
    lines = requests.stdout.splitlines()
    assert "participant-reported" in lines[0]
    table = [line.split() for line in lines[2:]]
    assert [row[1:] for row in table] == [
        ["1", "m-1", "2", "100", "10", "0.001"],
        ["2", "m-1", "1", "50", "5", "-"],
        ["4", "-", "1", "25", "5", "0.0005"],
    ]


def test_a_participant_that_reports_nothing_has_unknown_usage(tmp_path: Path) -> None:
    done, result = run_with(tmp_path, "files")
    assert result["passed"] is True, done.stdout + done.stderr
    agent = result["agent_result"]
    assert agent["usage_source"] == "unavailable"
    assert agent["total_tokens"] is None and agent["cost_usd"] is None
    assert "participant_usage" not in agent
    assert "Participant-reported" not in done.stdout


def test_malformed_usage_is_a_participant_error_naming_the_field(tmp_path: Path) -> None:
    done, result = run_with(tmp_path, "usage-bad")
    assert result["failure"] == "participant_error", done.stdout + done.stderr
    assert "usage: input_tokens" in result["error"]
    assert result["score_eligible"] is False


AGENT_ID = "019e5a00-0000-7000-8000-0000000000fe"


def _public_row(tmp: Path, mode: str) -> tuple[dict, dict]:  # type: ignore[type-arg]
    out = tmp / "rows.json"
    done, result = run_with(tmp, mode, "--output", str(out), "--participant-id", AGENT_ID)
    assert done.returncode == 0, done.stdout + done.stderr
    envelope = json.loads(out.read_text())
    assert envelope["participants"] == {"agent": AGENT_ID}
    [row] = envelope["results"]
    assert PublicRow.model_validate(row).public_dict() == row
    return row, result


def test_the_public_row_carries_the_reported_usage_and_the_report_shows_it(tmp_path: Path) -> None:
    row, result = _public_row(tmp_path, "usage")
    agent = result["agent_result"]
    assert list(row) == list(ROW_KEYS)
    usage = {k: row[k] for k in USAGE_KEYS}
    assert usage == {
        "input_tokens": agent["n_input_tokens"],
        "output_tokens": agent["n_output_tokens"],
        "cost_usd": agent["cost_usd"],
        "usage_source": agent["usage_source"],
    }
    # The participant's word, with the cost one reply left out unknown (null, not 0).
    assert usage == {
        "input_tokens": 175,
        "output_tokens": 20,
        "cost_usd": None,
        "usage_source": "participant_reported",
    }
    # In the published shape (one envelope per shard, as `leaderboard aggregate` writes it).
    envelope = json.loads((tmp_path / "rows.json").read_text())
    published = tmp_path / "published.json"
    published.write_text(
        json.dumps(
            {"status": "completed", "participants": {"agent": AGENT_ID}, "results": [envelope]}
        )
    )
    html = build_report([str(published)])
    table = html.split('data-table="usage"')[1].split("</table>")[0]
    cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", table)]
    assert cells[1:] == [
        "reported by the participant (not measured)",
        "1",
        "175",
        "20",
        "195",
        "unknown",
    ]


def test_the_public_row_of_a_trial_without_usage_has_no_usage_keys(tmp_path: Path) -> None:
    row, result = _public_row(tmp_path, "files")
    assert result["agent_result"]["usage_source"] == "unavailable"
    # Unknown usage reads as in the rows published before usage: no key, never a null or a 0.
    assert list(row) == list(BASE_ROW_KEYS)
