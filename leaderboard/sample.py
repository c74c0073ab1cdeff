"""Deterministic synthetic results files in the published shape, for demos, tests and benchmarks.

The rows are made up (seeded random pass/fail by difficulty and agent skill) but go through the
public row contract, so they look exactly like real ones. ``leaderboard/results/README.md`` says
how the checked-in sample was produced; real runs replace it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leaderboard.rows import FAILURE_CATEGORIES, Envelope, PublicRow
from serving.output import prepare_output_dir

_DIFFICULTY_EASE = {"easy": 0.9, "medium": 0.6, "hard": 0.3}


@dataclass(frozen=True)
class SampleAgent:
    agent_id: str
    skill: float  # scales the pass chance
    infra_failure_rate: float
    num_shards: int
    max_tasks: int | None = None
    # Whose usage figures its rows carry (docs/usage.md): measured, the participant's word, or
    # none (the row then has no usage keys, as the published rows).
    usage_source: str | None = None


DEFAULT_AGENTS: tuple[SampleAgent, ...] = (
    SampleAgent("019e5a00-0000-7000-8000-00000000000a", 1.0, 0.02, 3, None, "provider_response"),
    SampleAgent("019e5a00-0000-7000-8000-00000000000b", 0.6, 0.06, 1, None, "participant_reported"),
    SampleAgent("019e5a00-0000-7000-8000-00000000000c", 0.3, 0.0, 1, max_tasks=6),
)
# Made-up prices (USD per token) for the measured sample usage.
_INPUT_PRICE, _OUTPUT_PRICE = 3e-6, 15e-6


def sample_envelope(
    manifest: Mapping[str, Any],
    agent: SampleAgent,
    rng: random.Random,
    shard_index: int = 0,
) -> dict[str, Any]:
    """One shard envelope: the tasks at positions ``i % num_shards == shard_index``."""
    tasks = list(manifest["tasks"])[: agent.max_tasks]
    # Usage from its own stream, so the pass/fail draws are those of a sample without usage.
    usage_rng = random.Random(f"{manifest['task_set']}-{agent.agent_id}-{shard_index}")
    rows = []
    for position, task in enumerate(tasks):
        if position % agent.num_shards != shard_index:
            continue
        rows.append(_with_usage(_row(manifest, task, agent, rng), agent, usage_rng))
    envelope = Envelope(participants={"agent": agent.agent_id}, results=rows)
    return envelope.public_dict()


def sample_results_file(
    manifest: Mapping[str, Any], agent: SampleAgent, rng: random.Random
) -> dict[str, Any]:
    """A published results file: one envelope per shard, as the leaderboard's aggregator writes."""
    shards = [sample_envelope(manifest, agent, rng, k) for k in range(agent.num_shards)]
    return {"status": "completed", "participants": {"agent": agent.agent_id}, "results": shards}


def write_sample(
    manifest: Mapping[str, Any],
    output: Path,
    *,
    seed: int = 7,
    agents: Sequence[SampleAgent] = DEFAULT_AGENTS,
) -> list[Path]:
    rng = random.Random(seed)
    prepare_output_dir(output)
    written = []
    for agent in agents:
        path = output / f"sample-{manifest['task_set']}-{agent.agent_id}.json"
        data = sample_results_file(manifest, agent, rng)
        path.write_text(json.dumps(data, indent=2) + "\n")
        written.append(path)
    return written


def _with_usage(row: PublicRow, agent: SampleAgent, rng: random.Random) -> PublicRow:
    """The row with made-up usage from ``agent.usage_source``; a participant leaves the cost of
    some trials out (unknown, never 0)."""
    if agent.usage_source is None:
        return row
    input_tokens = rng.randint(20_000, 400_000)
    output_tokens = rng.randint(1_000, 30_000)
    cost: float | None = round(input_tokens * _INPUT_PRICE + output_tokens * _OUTPUT_PRICE, 6)
    if agent.usage_source == "participant_reported" and rng.random() < 0.3:
        cost = None
    usage = {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cost_usd": cost,
        "usage_source": agent.usage_source,
    }
    return PublicRow.model_validate({**row.model_dump(), **usage})


def _row(
    manifest: Mapping[str, Any],
    task: Mapping[str, Any],
    agent: SampleAgent,
    rng: random.Random,
) -> PublicRow:
    task_id = str(task["task_id"])
    trial_id = f"{task_id}__agentbeats__{rng.getrandbits(32):08x}"
    if rng.random() < agent.infra_failure_rate:
        failure = rng.choice(FAILURE_CATEGORIES)
        eligible, passed, reward = False, False, 0.0
        seconds = round(rng.uniform(0.5, 30.0), 3)
    else:
        failure = None
        eligible = True
        chance = agent.skill * _DIFFICULTY_EASE.get(str(task.get("difficulty")), 0.5)
        passed = rng.random() < chance
        reward = 1.0 if passed else rng.choice([0.0, 0.0, 0.0, 0.25, 0.5])
        seconds = round(rng.uniform(20.0, 900.0), 3)
    return PublicRow(
        task_id=task_id,
        trial_id=trial_id,
        task_set=str(manifest["task_set"]),
        task_set_digest=str(manifest["task_set_digest"]),
        condition=manifest.get("condition", "with_skills"),
        score_eligible=eligible,
        passed=passed,
        reward=reward,
        time_used=seconds,
        task_digest=task.get("task_digest"),
        category=task.get("category"),
        difficulty=task.get("difficulty"),
        tags=list(task.get("tags") or []),
        infra_failure_type=failure,
        error_type=failure,
    )
