"""The end of ``make demo``: a full assessment of the placeholder purple agent, as AgentBeats runs
it (gateway-style client -> green agent -> worker -> a2a bridge -> purple agent), then the
leaderboard table computed from the results file.

``python -m skillsbench_agentbeats.assessment_demo [--output F] [--jobs-dir D]``; ``make demo``
(:mod:`skillsbench_agentbeats.demo`) calls :func:`main`.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import click

from green_agent.settings import WORKER_URL
from serving.invocation import command_prefix
from serving.output import prepare_output_file

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


@click.command(help=__doc__.splitlines()[0] if __doc__ else None)
@click.option(
    "--output", type=click.Path(path_type=Path), default=Path(".demo/assessment-results.json")
)
@click.option("--jobs-dir", type=click.Path(path_type=Path), default=Path(".demo/assessment-jobs"))
@click.option("--task-id", "task_ids", multiple=True, help="only these tasks")
def command(output: Path, jobs_dir: Path, task_ids: tuple[str, ...]) -> None:
    config = dict(DEMO_CONFIG)
    if task_ids:
        config.pop("tasks")
        config["task_ids"] = list(task_ids)
    print("\n== assessment of the placeholder purple agent (examples task set) through A2A")
    export = asyncio.run(
        placeholder_assessment(jobs_dir, config, progress=lambda line: print(line, flush=True))
    )
    prepare_output_file(output)
    output.write_text(json.dumps(export, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {output} (status {export['status']})")
    print(f"trials are in {jobs_dir}: {command_prefix()} trials list {jobs_dir}")
    if export["status"] != "completed":
        sys.exit(1)
    from leaderboard.formatting import render
    from leaderboard.query import QUERY_NAMES, run_queries

    print(render(run_queries([str(output)], list(QUERY_NAMES), None), "table"), end="")


def main(argv: list[str] | None = None) -> int:
    """Run :func:`command` on ``argv``; its exit code."""
    try:
        command.main(argv, prog_name="python -m green_agent.demo")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
