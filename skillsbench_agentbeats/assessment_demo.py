"""The end of ``make demo``: a full assessment of the placeholder purple agent, as AgentBeats runs
it (gateway-style client -> green agent -> worker -> a2a bridge -> purple agent), then the
leaderboard table computed from the results file.

``python -m skillsbench_agentbeats.assessment_demo [--output F] [--jobs-dir D]``; ``make demo``
(:mod:`skillsbench_agentbeats.demo`) calls :func:`main`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from green_agent.settings import WORKER_URL

# A fixed AgentBeats-style UUID, so the leaderboard table has an id (the gateway would echo a URL).
DEMO_PARTICIPANT_ID = "019e4ed1-0000-7000-8000-000000000de0"
DEMO_CONFIG: dict[str, Any] = {
    "task_set": "examples",
    "tasks": "all",
    "participant_ids": {"agent": DEMO_PARTICIPANT_ID},
}


def placeholder_app(url: str) -> Any:
    from purple_agent.placeholder import PlaceholderAgent, card_for
    from purple_agent.server import build_app

    return build_app(card_for(url), PlaceholderAgent())


async def placeholder_assessment(
    jobs_dir: Path, config: dict[str, Any] | None = None, progress: Any = None
) -> dict[str, Any]:
    """The gateway-shaped export of one assessment of the placeholder, all in this process."""
    from green_agent.gateway import run_assessment, wait_for_cards
    from skillsbench_agentbeats.in_process import local_green, local_worker, serve_app

    async with (
        serve_app(placeholder_app) as purple,
        local_worker(jobs_dir) as worker_url,
        local_green({WORKER_URL: worker_url}) as green,
    ):
        await wait_for_cards([green, purple])
        return await run_assessment(green, {"agent": purple}, config or DEMO_CONFIG, progress)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--output", type=Path, default=Path(".demo/assessment-results.json"))
    parser.add_argument("--jobs-dir", type=Path, default=Path(".demo/assessment-jobs"))
    parser.add_argument("--task-id", action="append", default=[], help="only these tasks")
    args = parser.parse_args(argv)
    config = dict(DEMO_CONFIG)
    if args.task_id:
        config.pop("tasks")
        config["task_ids"] = args.task_id
    print("\n== assessment of the placeholder purple agent (examples task set) through A2A")
    export = asyncio.run(
        placeholder_assessment(args.jobs_dir, config, progress=lambda line: print(line, flush=True))
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(export, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.output} (status {export['status']})")
    if export["status"] != "completed":
        return 1
    from leaderboard.formatting import render
    from leaderboard.query import QUERY_NAMES, run_queries

    print(render(run_queries([str(args.output)], list(QUERY_NAMES), None), "table"), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
