"""From one finished trial to its public row (through :class:`leaderboard.rows.PublicRow`)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Mapping
from typing import Any

from leaderboard.rows import USAGE_SOURCES, PublicRow, usage_cost, usage_count
from worker.api import RunRequest, RunTask
from worker.core.failures import FailureKind, semantics

TRIAL_ID_INFIX = "__agentbeats__"
_TRIAL_ID_SUFFIX_HEX = 8
# A trial id is the task id, the infix and the suffix, and public trial ids have at most 200
# characters (leaderboard.rows.TRIAL_ID_PATTERN): the longest task id a run may carry.
MAX_TASK_ID_LENGTH = 200 - len(TRIAL_ID_INFIX) - _TRIAL_ID_SUFFIX_HEX


def new_trial_id(task_id: str, suffix: str | None = None) -> str:
    """``<task_id>__agentbeats__<8 hex>``, as in the published results (``suffix``: one of
    :func:`trial_id_suffixes`)."""
    suffix = suffix or secrets.token_hex(_TRIAL_ID_SUFFIX_HEX // 2)
    return f"{task_id}{TRIAL_ID_INFIX}{suffix}"


def trial_id_suffixes(block: int = 256) -> Iterator[str]:
    """Random trial-id suffixes drawn ``block`` at a time. For many ids at once (a cancel): a
    random-bytes syscall per id releases the GIL each time, and with any other thread busy the
    event loop then waited up to 5 ms to get it back, per id (1.2 s for 10,000)."""
    while True:
        drawn = secrets.token_hex(_TRIAL_ID_SUFFIX_HEX // 2 * block)
        for start in range(0, len(drawn), _TRIAL_ID_SUFFIX_HEX):
            yield drawn[start : start + _TRIAL_ID_SUFFIX_HEX]


def build_row(
    request: RunRequest,
    task: RunTask,
    *,
    trial_id: str,
    agent_transport: str,
    reward: float | None,
    failure: FailureKind | None,
    time_used: float | None,
    usage: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The validated public row. A failure that is not score-eligible zeroes the reward.

    ``usage``: the usage fields of the trial's result.json ``agent_result`` (BenchFlow's names,
    worker/usage/records.py); None when no trial ran, and the row's usage is then null."""
    category = None
    eligible = True
    if failure is not None:
        meaning = semantics(failure)
        eligible = meaning.score_eligible
        category = meaning.category
    if not eligible or reward is None:
        reward = 0.0
    condition = request.condition
    row = PublicRow(
        task_id=task.task_id,
        trial_id=trial_id,
        task_set=request.task_set,
        task_set_digest=request.task_set_digest,
        condition="without_skills" if condition == "without_skills" else "with_skills",
        score_eligible=eligible,
        passed=eligible and reward >= 1.0,
        reward=reward,
        max_score=1.0,
        time_used=time_used,
        task_digest=task.task_digest,
        category=task.category,
        difficulty=task.difficulty,
        tags=list(task.tags),
        has_skills=condition != "without_skills",
        agent_transport=agent_transport,
        participant_role="agent",
        infra_failure_type=category,
        error_type=category,
        artifact_refs=[],
        **usage_fields(usage),
    )
    return row.public_dict()


def usage_fields(agent_result: Mapping[str, Any] | None) -> dict[str, Any]:
    """The public row's usage from result.json's ``agent_result``: the same source, and the
    figures only with a source that is not ``unavailable`` (null is unknown, never 0)."""
    source = (agent_result or {}).get("usage_source")
    if source not in USAGE_SOURCES:
        return {"input_tokens": None, "output_tokens": None, "cost_usd": None, "usage_source": None}
    known = source != "unavailable"
    result = agent_result or {}
    return {
        "input_tokens": usage_count(result.get("n_input_tokens")) if known else None,
        "output_tokens": usage_count(result.get("n_output_tokens")) if known else None,
        "cost_usd": usage_cost(result.get("cost_usd")) if known else None,
        "usage_source": source,
    }
