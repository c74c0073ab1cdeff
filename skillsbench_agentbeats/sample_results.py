"""Regenerate ``leaderboard/results/`` files from our own runs, not synthetic data.

``python -m skillsbench_agentbeats.sample_results [--output leaderboard/results]`` runs, all on loopback:

- a worker-backed assessment of the placeholder purple agent on the ``examples`` task set
  (gateway-style client → green agent → real worker → a2a bridge → placeholder), and
- the same assessment with no worker configured (the green agent's mock mode).

Each export is written in the published leaderboard shape (``{status, participants, results}``
with the shard envelopes), as the leaderboard repository's aggregation step writes it.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import click

from green_agent.settings import WORKER_SLOT_URL, WORKER_URL
from serving.output import prepare_output_dir
from skillsbench_agentbeats.assessment_demo import placeholder_app, placeholder_assessment

WORKER_BACKED_ID = "019e5a00-0000-7000-8000-0000000000e1"
MOCK_ID = "019e5a00-0000-7000-8000-0000000000e2"
FILES = {
    "worker": f"examples-placeholder-worker-{WORKER_BACKED_ID}.json",
    "mock": f"examples-placeholder-mock-{MOCK_ID}.json",
}


def _config(participant_id: str) -> dict[str, Any]:
    return {"task_set": "examples", "tasks": "all", "participant_ids": {"agent": participant_id}}


async def _assess(mode: str, participant_id: str, jobs_dir: Path) -> dict[str, Any]:
    if mode == "worker":
        return await placeholder_assessment(jobs_dir, _config(participant_id))
    from green_agent.gateway import run_assessment, wait_for_cards
    from skillsbench_agentbeats.in_process import local_green, serve_app

    # Mock mode: an empty worker URL is what a mock-mode Amber scenario passes.
    env = {WORKER_URL: "", WORKER_SLOT_URL: ""}
    async with serve_app(placeholder_app) as purple, local_green(env) as green:
        await wait_for_cards([green, purple])
        return await run_assessment(green, {"agent": purple}, _config(participant_id))


def published_shape(export: dict[str, Any], participant_id: str) -> dict[str, Any]:
    """The gateway export re-shaped as a published results file (one envelope per shard)."""
    if export.get("status") != "completed":
        raise RuntimeError(f"assessment ended {export.get('status')!r}, not completed")
    from leaderboard.rows import ROW_KEYS

    # Rows cross A2A as protobuf Values, which keep no key order: restore the published one.
    envelopes = [
        {
            **envelope,
            "results": [
                {key: row[key] for key in ROW_KEYS if key in row} for row in envelope["results"]
            ],
        }
        for envelope in export["results"]
    ]
    return {"status": "completed", "participants": {"agent": participant_id}, "results": envelopes}


def regenerate(output: Path) -> list[Path]:
    prepare_output_dir(output)
    written = []
    with tempfile.TemporaryDirectory(prefix="skillsbench-sample-") as tmp:
        for mode, name in FILES.items():
            participant_id = WORKER_BACKED_ID if mode == "worker" else MOCK_ID
            export = asyncio.run(_assess(mode, participant_id, Path(tmp) / mode))
            path = output / name
            document = published_shape(export, participant_id)
            path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
            written.append(path)
    return written


@click.command(help="Regenerate leaderboard sample results.")
@click.option("--output", type=click.Path(path_type=Path), default=Path("leaderboard/results"))
def main(output: Path) -> None:
    for path in regenerate(output):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
