"""What ``run`` prints: a live bar on a terminal, plain lines otherwise, the summary table."""

from __future__ import annotations

import io
import re

from skillsbench_agentbeats.progress import ProgressView, summary_table


def _row(task_id: str, reward: float, failure: str | None = None) -> dict[str, object]:
    return {
        "task_id": task_id,
        "trial_id": f"{task_id}__agentbeats__0123abcd",
        "reward": reward,
        "passed": reward >= 1.0,
        "score_eligible": failure is None,
        "infra_failure_type": failure,
        "time_used": 1.25,
    }


def test_plain_lines_when_not_a_terminal() -> None:
    out = io.StringIO()
    view = ProgressView(2, stream=out, live=False)
    view.draw()
    view.row("a#0", _row("a", 1.0))
    view.row("b#0", _row("b", 0.0, "sandbox_error"))
    view.close()
    assert out.getvalue().splitlines() == [
        "[1/2] a#0 passed reward=1 time=1.2s",
        "[2/2] b#0 error (sandbox_error) reward=0 time=1.2s",
    ]
    assert "\r" not in out.getvalue()


def test_live_bar_on_a_terminal() -> None:
    out = io.StringIO()
    view = ProgressView(4, stream=out, live=True)
    view.draw()
    view.row("a#0", _row("a", 1.0))
    text = out.getvalue()
    assert "\r[" in text and "1/4" in text and "pass 1" in text
    view.close()
    assert out.getvalue().endswith("\r\033[K")


def test_summary_table_totals() -> None:
    table = summary_table([_row("a", 1.0), _row("b", 0.0), _row("c", 0.0, "verifier_error")])
    lines = table.splitlines()
    # The report's units and wording: reward in %, time in seconds.
    assert re.split(r"\s{2,}", lines[0]) == [
        "task",
        "trial",
        "reward (%)",
        "passed",
        "failure",
        "time (s)",
        "why",
    ]
    assert re.split(r"\s{2,}", lines[2])[:6] == ["a", "0123abcd", "100.0", "yes", "-", "1.2"]
    assert "verifier_error" in lines[4]
    # The mean reward is over the graded trials (as the leaderboard's), in %.
    assert (
        lines[-1]
        == "1/3 passed, mean reward 50.0% over 2 graded, 1 infrastructure error (not graded)"
    )


def test_nothing_graded_is_said_so_not_a_mean_of_zero() -> None:
    table = summary_table([_row("c", 0.0, "sandbox_error")])
    assert table.splitlines()[-1] == (
        "0/1 passed: nothing was graded, 1 infrastructure error (not graded)"
    )
    assert "mean reward" not in table
    two = summary_table([_row("c", 0.0, "sandbox_error"), _row("d", 0.0, "worker_error")])
    assert two.splitlines()[-1].endswith("2 infrastructure errors (not graded)")
    clean = summary_table([_row("a", 1.0), _row("b", 0.5)])
    assert clean.splitlines()[-1] == "1/2 passed, mean reward 75.0% over 2 graded"


def test_a_trial_that_did_not_pass_says_why() -> None:
    reasons = {"b__agentbeats__0123abcd": "agent completed (exit 3); verifier exit 1; no answer"}
    table = summary_table([_row("a", 1.0), _row("b", 0.0)], reasons)
    lines = table.splitlines()
    assert lines[2].split()[-1] == "1.2"  # a passed trial has no reason
    assert lines[3].endswith("agent completed (exit 3); verifier exit 1; no answer")
    out = io.StringIO()
    view = ProgressView(1, stream=out, live=False)
    view.row("b#0", _row("b", 0.0), reasons["b__agentbeats__0123abcd"])
    assert (
        out.getvalue().strip().endswith("-- agent completed (exit 3); verifier exit 1; no answer")
    )


def test_a_long_reason_is_cut_so_rows_stay_readable() -> None:
    long_reason = "verifier exit 1: " + "AssertionError: expected 42, got 41; " * 8
    table = summary_table([_row("b", 0.0)], {"b__agentbeats__0123abcd": long_reason})
    lines = table.splitlines()
    assert len(long_reason) > 200
    assert len(lines[2]) < 120, lines[2]
    assert lines[2].endswith("…") and "verifier exit 1: AssertionError" in lines[2]
    assert "trials show TRIAL" in lines[-1]


def test_a_silence_is_explained_with_elapsed_time_eta_and_what_runs() -> None:
    from skillsbench_agentbeats.progress import Activity

    out = io.StringIO()
    view = ProgressView(3, stream=out, live=False, every_sec=0)
    view.tick(Activity(running=[("a#0", 75.0)]))
    first = out.getvalue().splitlines()
    assert len(first) == 1
    assert first[0].startswith("[0/3] ") and "elapsed, ETA after the first trial" in first[0]
    assert first[0].endswith("running a#0 (1m15s)")
    view.row("a#0", _row("a", 1.0))
    view.tick(
        Activity(
            running=[(f"t{i}#0", 5.0) for i in range(5)],
            phases={"t0#0": "verifying", "t1#0": "agent_running"},
            retrying=[("b#0", "sandbox_start")],
            paused_sec=40.0,
        )
    )
    last = out.getvalue().splitlines()[-1]
    assert last.startswith("[1/3] ") and " left: " in last
    assert "paused: the jobs folder is full (for 40s)" in last
    assert "running t0#0 (verifying, 5s), t1#0 (agent running, 5s), t2#0 (5s) and 2 more" in last
    assert "retrying b#0 after sandbox_start" in last


def test_no_line_while_the_run_speaks_within_the_heartbeat() -> None:
    from skillsbench_agentbeats.progress import Activity

    out = io.StringIO()
    view = ProgressView(2, stream=out, live=False, every_sec=3600)
    view.tick(Activity(running=[("a#0", 1.0)]))
    assert out.getvalue() == ""
