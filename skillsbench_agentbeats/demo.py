"""``make demo``: the examples task set on the embedded default (local sandbox), first with the
oracle (every task must pass), then with ``nop`` (every task must fail), then a full assessment of
the placeholder purple agent through real A2A and the real worker, ending with the leaderboard."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from skillsbench_agentbeats.cli import main as cli

RUNS = (("oracle", "passed"), ("nop", "failed"))


def main() -> int:
    for agent, expect in RUNS:
        print(f"\n== examples task set, agent {agent}: every task should be {expect}", flush=True)
        try:
            cli(
                [
                    "run",
                    "--task-set",
                    "examples",
                    "--agent",
                    agent,
                    "--jobs-dir",
                    ".demo/jobs",
                    "--output",
                    f".demo/{agent}-rows.json",
                    "--expect",
                    expect,
                ]
            )
        except SystemExit as exc:
            if exc.code:
                print(f"demo failed: not every task {expect} with {agent}", file=sys.stderr)
                return int(exc.code) if isinstance(exc.code, int) else 1
    from skillsbench_agentbeats.assessment_demo import main as assessment

    if assessment([]) != 0:
        print("demo failed: the assessment did not complete", file=sys.stderr)
        return 1
    problem = _placeholder_problem(Path(".demo/assessment-results.json"))
    if problem:
        print(f"demo failed: {problem}", file=sys.stderr)
        return 1
    print(
        "\ndemo ok: the oracle passes every example task, nop fails every one, and the "
        "placeholder's assessment completed with a score-eligible row per task"
    )
    return 0


def _placeholder_problem(results_file: Path) -> str | None:
    """The placeholder does nothing: every row must be scored, and score 0."""
    export = json.loads(results_file.read_text(encoding="utf-8"))
    rows = [row for envelope in export["results"] for row in envelope["results"]]
    if not rows:
        return "the assessment returned no rows"
    bad = [r["task_id"] for r in rows if not r["score_eligible"] or r["reward"] != 0]
    if bad:
        return f"placeholder rows not scored as 0: {', '.join(bad)}"
    return None


if __name__ == "__main__":
    sys.exit(main())
