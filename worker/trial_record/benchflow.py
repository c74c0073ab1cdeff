"""BenchFlow's top-level ``result.json`` keys, so BenchFlow's readers read our trials.

BenchFlow 0.7.11's ``bench eval metrics`` (``benchflow.metrics.collect_metrics``) walks a jobs
folder for ``result.json`` files and reads ``task_name``, ``rewards.reward``, ``error``,
``verifier_error``, ``n_tool_calls``, ``agent_name``, ``started_at``/``finished_at`` and the usage
fields of ``agent_result``; its run-artifact validator reads ``n_tool_calls``, ``rewards``,
``agent``/``agent_name``, ``model`` and the timing. Those keys are written next to ours with
BenchFlow's meaning (``rollout/_results.py::_build_rollout_result``):

* ``rewards`` is ``{"reward": x}`` for a scored trial (x = the row's reward: the verifier's, or 0
  for an agent timeout without a reward file, a tampered verifier, a sandbox the agent ended),
  ``null`` for an infrastructure failure (not scored). BenchFlow then counts a trial passed at
  reward 1, failed below, errored without a reward: our passed / failed / infrastructure totals.
* ``verifier_error`` carries the error of a ``verifier_*`` infrastructure failure (``error``, ours,
  carries every failure's text, so BenchFlow buckets those as errored, ahead of verifier_errored).
* Unknown is ``null`` (``n_skill_invocations``: we do not classify tool calls as skill use).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from worker.core.failures import FailureKind, semantics


def benchflow_fields(
    *,
    task_id: str,
    trial_id: str,
    agent_name: str,
    model: str | None,
    with_skills: bool,
    row: Mapping[str, Any],
    failure: FailureKind | None,
    error: str | None,
    agent_result: Mapping[str, Any],
    agent_started: bool,
) -> dict[str, Any]:
    """The keys BenchFlow's ``result.json`` has and ours lacks, with BenchFlow's meaning."""
    facts = semantics(failure) if failure is not None else None
    verifier_failure = facts is not None and facts.benchflow_verifier_error is not None
    details = agent_result.get("details") or {}
    info = details.get("agent_info") if isinstance(details, Mapping) else None
    reported = info.get("name") if isinstance(info, Mapping) else None
    return {
        "task_name": task_id,
        "rollout_name": trial_id,
        "rewards": {"reward": row["reward"]} if row["score_eligible"] else None,
        "agent_name": reported if isinstance(reported, str) and reported else agent_name,
        "model": model,
        "skill_mode": "with-skill" if with_skills else "no-skill",
        "n_tool_calls": int(agent_result.get("n_tool_calls") or 0),
        "n_skill_invocations": None,
        "n_prompts": 1 if agent_started else 0,
        "final_metrics": {
            "total_prompt_tokens": agent_result.get("n_input_tokens"),
            "total_completion_tokens": agent_result.get("n_output_tokens"),
            "total_cached_tokens": agent_result.get("n_cache_read_tokens"),
            "total_cost_usd": agent_result.get("cost_usd"),
        },
        "verifier_error": error if verifier_failure else None,
        "error_category": facts.benchflow_error if facts else None,
        "verifier_error_category": facts.benchflow_verifier_error if facts else None,
        "trajectory_source": "acp",
        "partial_trajectory": False,
        "sandbox_id": None,
    }
