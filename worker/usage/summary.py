"""The run summary's ``Cost:`` line, summed over the trials' result.json files."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from worker.trial_record.paths import RESULT_FILE
from worker.trial_record.result import TrialResult
from worker.usage.participant import PARTICIPANT_REPORTED
from worker.usage.records import TRUSTED_SOURCES, cost_summary


def load_results(jobs_dir: Path, trial_ids: Iterable[str]) -> list[dict[str, Any]]:
    results = []
    for trial_id in trial_ids:
        for path in sorted(jobs_dir.glob(f"runs/*/trials/{trial_id}/{RESULT_FILE}")):
            record = TrialResult.read(path)
            if record is not None:
                results.append(record.document())
    return results


def cost_line(results: list[dict[str, Any]]) -> str:
    """One trial's cost wording (:func:`cost_summary`) applied to the job's sums: a dollar figure
    only when every trial's tokens were priced. Usage participants reported about themselves is
    summed apart and said to be theirs (:func:`participant_note`)."""
    return _measured_line(results) + participant_note(results)


def _measured_line(results: list[dict[str, Any]]) -> str:
    usages = [r.get("agent_result") or {} for r in results]
    accesses = [(r.get("usage_tracking") or {}).get("model_access") for r in results]
    if not results or all(a == "none" for a in accesses):
        return "Cost: " + cost_summary(None, calls_model=False)
    counted = [u for u in usages if u.get("usage_source") in TRUSTED_SOURCES]
    if not counted:  # the summary already says every trial's usage is missing
        if any(u.get("usage_source") == PARTICIPANT_REPORTED for u in usages):
            return "Cost: not measured by the worker (remote participant)"
        return "Cost: " + cost_summary(None, calls_model=True)
    missing = sum(
        1
        for u, a in zip(usages, accesses, strict=True)
        if a != "none" and u.get("usage_source") not in TRUSTED_SOURCES
    )
    priced = [float(u["cost_usd"]) for u in counted if u.get("cost_usd") is not None]
    summed = {
        "usage_source": TRUSTED_SOURCES[0],
        "total_tokens": sum(int(u.get("total_tokens") or 0) for u in counted),
        "cost_usd": sum(priced) if len(priced) == len(counted) else None,
    }
    note = f" ({missing} trial(s) without usage: missing, not zero)" if missing else ""
    return "Cost: " + cost_summary(summed, calls_model=True) + note


def participant_note(results: list[dict[str, Any]]) -> str:
    """``; participant-reported: …`` over the trials whose participant reported usage; a sum is
    given only when every such trial knew it (unknown stays unknown, never 0)."""
    reported = [
        u
        for r in results
        if (u := r.get("agent_result") or {}).get("usage_source") == PARTICIPANT_REPORTED
    ]
    if not reported:
        return ""

    def total(key: str) -> Any:
        values = [u.get(key) for u in reported]
        return None if any(v is None for v in values) else sum(values)

    tokens, cost = total("total_tokens"), total("cost_usd")
    said = [
        "tokens unknown" if tokens is None else f"{tokens:,} tokens",
        "cost unknown" if cost is None else f"${cost:.4f}",
    ]
    return (
        f"\nParticipant-reported usage ({len(reported)} of {len(results)} trial(s), "
        f"the participant's word, not measured): " + ", ".join(said)
    )
